"""The data file formats without Java: each format writes and reads back every type exactly,
whatever slices and takes the writers hand it; Avro's decimals and codecs; the per-file dispatch
of a table whose format changed; clear errors for what a format cannot do."""

from __future__ import annotations

import datetime
import decimal
import io
import random
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError, InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.avro_arrow import bytes_to_decimal, decimal_to_bytes
from lake_assets.formats.avro_schema import file_schema
from lake_assets.formats.data_file import DataFileWriter, DataFileWriterConfig, read_data_file
from lake_assets.formats.file_format import file_format, format_of_file, supported_formats
from lake_assets.spec.types import DecimalType
from tests.differential.data import ALL_TYPES, all_types_table
from tests.differential.helpers import row_set

FORMATS = ["parquet", "orc", "avro"]


def _orc_safe(data: pa.Table) -> pa.Table:
    """ALL_TYPES rows without the TIMESTAMP(6) values ORC files we write refuse."""
    i = data.schema.get_field_index("ts6")
    ts6 = [datetime.datetime(1677, 9, 22) if v is not None and v.year < 1678
           else (v.replace(microsecond=v.microsecond // 1000 * 1000) if v is not None and v.year < 1970 else v)
           for v in data.column("ts6").to_pylist()]
    return data.set_column(i, data.schema.field(i), pa.array(ts6, pa.timestamp("us")))


def test_registry() -> None:
    assert supported_formats() >= {"parquet", "orc", "avro"}
    assert format_of_file("data-1.orc") == "orc" and format_of_file("x/data-1.zstd.avro") == "avro"
    with pytest.raises(UnsupportedFeatureError, match=r"Data file format 'csv' is not supported"):
        file_format("csv")


def _pieces(data: pa.Table) -> list[pa.Table]:
    """What a rolling writer hands a format: slices (offsets), takes (values under NULL slots)."""
    rng = random.Random(7)
    n = data.num_rows
    out = [data.slice(a, b - a) for a in range(n) for b in range(a + 1, n + 1)]
    out += [data.take(rng.sample(range(n), k)) for k in range(1, n + 1) for _ in range(3)]
    out += [p.slice(1) for p in list(out) if p.num_rows > 1]
    return out


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_every_type_round_trips_through_each_format(tmp_path: Path, fmt: str, pk: bool) -> None:
    """Each piece is written as one file by the real writer and read back equal. ORC needs the
    writer's normalization of nested arrays: without it, sliced STRUCT children came back wrong."""
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", ALL_TYPES, primary_keys=["id"] if pk else [],
                         options={"bucket": "1" if pk else "-1", "file.format": fmt})
    data = all_types_table()
    if fmt == "orc":
        data = _orc_safe(data)
    writer = DataFileWriter(t.file_io, str(tmp_path / "bucket"), t.schema, DataFileWriterConfig())
    for piece in _pieces(data):
        full = piece
        if pk:
            full = piece.append_column("_SEQUENCE_NUMBER", pa.array(range(piece.num_rows), pa.int64()))
            full = full.append_column("_VALUE_KIND", pa.array([0] * piece.num_rows, pa.int8()))
        metas = writer.write(full, level=0)
        assert len(metas) == 1 and metas[0].file_name.endswith(f".{fmt}")
        got = read_data_file(t.file_io, str(tmp_path / "bucket" / metas[0].file_name), ALL_TYPES.names)
        assert row_set(got.cast(ALL_TYPES)) == row_set(piece), fmt
        if pk:
            system = read_data_file(t.file_io, str(tmp_path / "bucket" / metas[0].file_name),
                                    ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND"])
            assert system.schema.field("_VALUE_KIND").type == pa.int8()
            assert system.column("_KEY_id").to_pylist() == piece.column("id").to_pylist()


@pytest.mark.parametrize("precision", [5, 18, 19, 38])
def test_avro_decimals_are_javas_shortest_twos_complement(precision: int) -> None:
    scale = 2
    limit = 10 ** precision - 1
    values = [0, 1, -1, 127, 128, -128, -129, 255, 256, -256, 32767, -32768, limit, -limit, None]
    dec = [None if v is None else decimal.Decimal(f"{v}e-{scale}") for v in values]
    arr = pa.array(dec, pa.decimal128(precision, scale))
    encoded = decimal_to_bytes(arr)
    for v, b in zip(values, encoded.to_pylist(), strict=True):
        if v is None:
            assert b is None
        else:  # java.math.BigInteger.toByteArray: the shortest two's complement, big-endian
            assert b == v.to_bytes((v + (v < 0)).bit_length() // 8 + 1, "big", signed=True)
    assert bytes_to_decimal(encoded, arr.type).equals(arr)
    # longer encodings (sign-extended, as any Avro writer may produce) read the same
    padded = pa.array([None if b is None else (b"\xff" if b[0] & 0x80 else b"\x00") * 2 + b
                       for b in encoded.to_pylist()], pa.binary())
    assert bytes_to_decimal(padded, arr.type).equals(arr)
    assert bytes_to_decimal(encoded.slice(3), arr.type).equals(arr.slice(3))


def _avro_file(records: list[dict], codec: str) -> bytes:
    schema = file_schema([("id", DecimalType(10, 0, nullable=False))])
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
    return buf.getvalue()


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_avro_files_of_other_codecs_read(tmp_path: Path, codec: str) -> None:
    """Files another Avro writer compressed (fastavro's own codecs here) decode through our framing."""
    path = tmp_path / "data-x-0.avro"
    path.write_bytes(_avro_file([{"id": decimal.Decimal(300)}, {"id": decimal.Decimal(-1)}], codec))
    got = read_data_file(Catalog(str(tmp_path)).file_io, str(path))
    assert got.column("id").to_pylist() == [decimal.Decimal(300), decimal.Decimal(-1)]


@pytest.mark.parametrize(("compression", "codec"), [("zstd", b"zstandard"), ("snappy", b"snappy"),
                                                    ("lz4", b"snappy")])
def test_avro_codec_is_the_one_java_picks(tmp_path: Path, compression: str, codec: bytes) -> None:
    """Paimon Java 0.9 writes Avro data files with zstandard for file.compression zstd and snappy
    for every other value."""
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_keys=["id"],
                         options={"bucket": "1", "file.format": "avro", "file.compression": compression})
    rows = pa.table({"id": list(range(5000)), "v": [f"v{i % 7}" for i in range(5000)]}, schema=schema)
    t.write_arrow(rows)
    (path,) = tmp_path.rglob("data-*.avro")
    with path.open("rb") as f:
        assert fastavro.reader(f).metadata["avro.codec"] == codec.decode()
    assert t.to_arrow().sort_by("id").equals(rows)


def test_corrupt_avro_file_is_reported_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "data-x-0.avro"
    good = _avro_file([{"id": decimal.Decimal(1)}] * 10, "null")
    path.write_bytes(good[:-20])
    with pytest.raises(CorruptMetadataError, match=r"Data file .*data-x-0\.avro is corrupt"):
        read_data_file(Catalog(str(tmp_path)).file_io, str(path))


def test_table_holding_every_format_reads_each_file_as_its_own(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for i, fmt in enumerate(FORMATS):
        t.update_schema().set_option("file.format", fmt).commit()
        t = t.refresh()
        t.write_arrow(pa.table({"id": [i, 10], "v": [fmt, fmt]}, schema=schema))
    names = {e.file.file_name.rsplit(".", 1)[-1] for e in t.store.file_store_scan().live_entries(t.latest_snapshot())}
    assert names == set(FORMATS)
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 0, "v": "parquet"}, {"id": 1, "v": "orc"}, {"id": 2, "v": "avro"}, {"id": 10, "v": "avro"}]
    t.compact(full=True)
    t = t.refresh()
    assert {e.file.file_name.rsplit(".", 1)[-1]
            for e in t.store.file_store_scan().live_entries(t.latest_snapshot())} == {"avro"}
    assert t.to_arrow().num_rows == 4


def test_orc_refuses_a_compression_java_cannot_write(tmp_path: Path) -> None:
    """'gzip' is a Parquet codec, not an ORC compression kind: Java's ORC writer fails on it."""
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    t = cat.create_table("db.t", schema, primary_keys=["id"],
                         options={"bucket": "1", "file.format": "orc", "file.compression": "gzip"})
    with pytest.raises(UnsupportedFeatureError, match=r"file\.compression = 'gzip' with file\.format = 'orc'"):
        t.write_arrow(pa.table({"id": [1]}, schema=schema))
    assert not list(tmp_path.rglob("data-*"))


def test_orc_refuses_out_of_range_timestamps_before_writing(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.list_(pa.timestamp("us")))])
    t = cat.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1", "file.format": "orc"})
    with pytest.raises(InvalidDataError, match=r"Column ts holds a timestamp outside"):
        t.write_arrow(pa.table({"id": [1], "ts": [[datetime.datetime(3000, 1, 1)]]}, schema=schema))
    assert not list(tmp_path.rglob("data-*")) and t.latest_snapshot() is None
