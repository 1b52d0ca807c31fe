"""Format writer options and per-level formats against Paimon Java 0.9: tables carrying a handful
of parquet.* / orc.* / avro.* options and file.format.per.level / file.compression.per.level are
written by us and read by Java exactly, and the other way round; compaction by either engine moves
rows into the format of the level it writes."""

from __future__ import annotations

from pathlib import Path

import fastavro
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.formats.file_format import format_of_file
from tests.java.oracle import PaimonJava

from .data import ALL_TYPES, all_types_table
from .helpers import assert_same_table, compare_every_snapshot
from .test_file_formats import files_of, format_data

OPTIONS = {
    "parquet": {"parquet.block.size": "256", "parquet.page.size": "1024", "parquet.enable.dictionary": "false",
                "parquet.bloom.filter.enabled#s": "true", "parquet.writer.version": "v1",
                "parquet.compression.codec.zstd.level": "9"},
    "orc": {"orc.stripe.size": "1048576", "orc.compress.size": "65536", "orc.row.index.stride": "1000",
            "orc.bloom.filter.columns": "s,i32", "orc.bloom.filter.fpp": "0.01", "orc.dictionary.key.threshold": "0"},
    "avro": {"avro.codec": "deflate"},
}


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_we_write_with_format_options_java_reads_and_writes_on_top(java: PaimonJava, wh: str, lake: Catalog,
                                                                   fmt: str) -> None:
    name = f"opts_{fmt}"
    ident = f"db.{name}"
    # Java 0.9's Parquet reader cannot tell all-NULL ROWs from NULL ones (test_oracle.py)
    data = all_types_table(all_null_rows=False) if fmt == "parquet" else format_data(fmt)
    t = lake.create_table(ident, ALL_TYPES, primary_keys=["id"],
                          options={"bucket": "1", "file.format": fmt, **OPTIONS[fmt]})
    t.write_arrow(data)
    (path,) = [p for p in files_of(wh, name) if p.suffix == f".{fmt}"]
    if fmt == "parquet":
        md = pq.ParquetFile(path).metadata
        assert md.num_row_groups > 1
        s = md.row_group(0).column(md.schema.names.index("s"))
        assert s.bloom_filter_length and not s.has_dictionary_page
    elif fmt == "orc":
        assert orc.ORCFile(str(path)).row_index_stride == 1000
    else:
        with path.open("rb") as f:
            assert fastavro.reader(f).metadata["avro.codec"] == "deflate"
    compare_every_snapshot(java, wh, ident, t)
    # Java writes and compacts the same table with the same options; we read its files
    java.write(wh, ident, data.slice(1, 2))
    java.compact(wh, ident, full=True)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, ident))
    t.write_arrow(data.slice(0, 3))
    assert_same_table(t.refresh().to_arrow(), java.read(wh, ident))


def _levels(t) -> set[tuple[int, str]]:
    return {(f.level, format_of_file(f.file_name)) for sp in t.plan() for f in sp.files}


def test_per_level_formats_both_ways(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Java and we both write level 0 as Avro (snappy) and compact into ORC at the top level."""
    ident = "db.levels"
    data = format_data("orc")
    per_level = {"bucket": "1", "file.format": "parquet", "file.format.per.level": "0:avro,5:orc",
                 "file.compression.per.level": "0:snappy,5:lz4", "num-levels": "6"}
    java.create_table(wh, ident, ALL_TYPES, primary_keys=["id"], options=per_level)
    java.write(wh, ident, data.slice(0, 3))
    t = lake.get_table(ident)
    assert _levels(t) == {(0, "avro")}
    t.write_arrow(data.slice(2, 3))
    assert {fmt for _, fmt in _levels(t.refresh())} == {"avro"}
    for p in files_of(wh, "levels"):
        with Path(p).open("rb") as f:
            assert fastavro.reader(f).metadata["avro.codec"] == "snappy"
    compare_every_snapshot(java, wh, ident, t)
    t.compact(full=True)
    t = t.refresh()
    assert _levels(t) == {(5, "orc")}
    (top,) = [p for p in files_of(wh, "levels") if p.suffix == ".orc"]
    assert orc.ORCFile(str(top)).compression == "LZ4"
    assert_same_table(t.to_arrow(), java.read(wh, ident))
    java.write(wh, ident, data.slice(5))
    java.compact(wh, ident, full=True)
    assert {fmt for _, fmt in _levels(t.refresh())} == {"orc"}
    assert_same_table(t.refresh().to_arrow(), java.read(wh, ident))
