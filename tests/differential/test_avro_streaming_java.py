"""Avro data files Paimon Java 0.9 writes (its own block size, ~64 KB) stream through our
`iter_batches` a block and a batch at a time to the same rows as a whole-file read, and the
streaming merge read over them gives the rows Java reads."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.formats.avro_block_stream import AvroBlockStream
from lake_assets.formats.data_file_read import iter_data_file, read_data_file
from tests.java.oracle import PaimonJava

from .data import ALL_TYPES, all_types_table
from .helpers import assert_same_rows, assert_same_table
from .test_file_formats import files_of

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("d", pa.float64())])


def _blocks(path: str) -> int:
    with open(path, "rb") as f:
        stream = AvroBlockStream(f)
        _, sync = stream.header()
        return sum(1 for _ in stream.blocks(sync))


@pytest.mark.parametrize("compression", ["zstd", "lz4"])  # zstandard; snappy for any other value
def test_javas_avro_files_stream_to_the_rows_of_a_whole_read(java: PaimonJava, wh: str, lake: Catalog,
                                                             compression: str) -> None:
    rows = 20_000
    data = pa.table({"id": range(rows), "v": [f"value-{i * 7919 % 100_003:08d}" for i in range(rows)],
                     "d": [i / 7 for i in range(rows)]}, schema=SCHEMA)
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"],
                      options={"bucket": "2", "file.format": "avro", "file.compression": compression})
    java.write(wh, "db.t", data)
    java.write(wh, "db.t", data.slice(0, 5000).set_column(1, "v", pa.array(["new"] * 5000)))
    paths = [str(p) for p in files_of(wh, "t")]
    assert paths and any(_blocks(p) > 2 for p in paths)  # Java cut files into several blocks
    for path in paths:
        whole = read_data_file(lake.file_io, path)
        batches = list(iter_data_file(lake.file_io, path, batch_rows=777))
        assert all(b.num_rows <= 777 for b in batches)
        assert pa.concat_tables(batches).equals(whole)
    t = lake.get_table("db.t")
    streamed = pa.Table.from_batches(list(t.to_batches(batch_size=500)))
    assert_same_rows(streamed, java.read(wh, "db.t"))


def test_every_type_of_a_java_avro_file_streams_as_it_reads(java: PaimonJava, wh: str, lake: Catalog) -> None:
    java.create_table(wh, "db.all", ALL_TYPES, primary_keys=["id"], options={"bucket": "1", "file.format": "avro"})
    java.write(wh, "db.all", all_types_table())
    (path,) = (str(p) for p in files_of(wh, "all"))
    whole = read_data_file(lake.file_io, path)
    streamed = pa.concat_tables(list(iter_data_file(lake.file_io, path, batch_rows=2)))
    assert_same_table(streamed, whole)  # NaN-aware (Table.equals never equates NaNs)
    assert streamed.column("_SEQUENCE_NUMBER").equals(whole.column("_SEQUENCE_NUMBER"))  # in file order
