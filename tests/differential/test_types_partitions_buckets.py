"""Every type (nested, nulls at every level), partition values with special characters and nulls,
and bucket placement for many key types, checked against Paimon Java 0.9."""

from __future__ import annotations

import datetime
import decimal
import os

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.spec.types import from_arrow
from tests.java.oracle import JavaError, PaimonJava

from .data import ALL_TYPES, all_types_table
from .helpers import assert_same_table, compare_every_snapshot, rows_by_bucket


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_all_types_java_writes_we_read(java: PaimonJava, wh: str, lake: Catalog, pk: bool) -> None:
    # Java writes all-NULL ROWs correctly (only its reader loses them), so we compare with the input.
    data = all_types_table()
    java.create_table(wh, "db.types", ALL_TYPES, primary_keys=["id"] if pk else [],
                      options={"bucket": "3" if pk else "-1"})
    java.write(wh, "db.types", data.slice(0, 4))
    java.write(wh, "db.types", data.slice(4))
    got = lake.get_table("db.types").to_arrow()
    assert_same_table(got, data)


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_all_types_we_write_java_reads(java: PaimonJava, wh: str, lake: Catalog, pk: bool) -> None:
    data = all_types_table(all_null_rows=False)
    t = lake.create_table("db.types", ALL_TYPES, primary_keys=["id"] if pk else [],
                          options={"bucket": "3" if pk else "-1"})
    t.write_arrow(data.slice(0, 3))
    t.write_arrow(data.slice(3))
    assert_same_table(java.read(wh, "db.types"), data)
    # Java's compaction rewrites our files; we read its output.
    if pk:
        java.compact(wh, "db.types", full=True)
    compare_every_snapshot(java, wh, "db.types", t.refresh())
    assert_same_table(t.refresh().to_arrow(), data)


# Partition values that need escaping in paths, plus "" and NULL (both land in __DEFAULT_PARTITION__;
# the value itself is kept in the manifest, so they read back apart).
SPECIAL = ["", "a/b", "x=y", "with space", "ünï😀", "50%", "#?:&*", "a\\b", "-", "__DEFAULT_PARTITION__x", None]


def _partitioned(values: list) -> pa.Table:
    n = len(values)
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "p": pa.array(values, pa.string()),
            "q": pa.array([i % 2 for i in range(n)], pa.int32()),
            "v": [f"v{i}" for i in range(n)],
        }
    )


def _partition_dirs(wh: str, name: str) -> set[str]:
    root = os.path.join(wh, "db.db", name)
    return {d for d in os.listdir(root) if d.startswith("p=")}


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_special_partition_values_both_directions(java: PaimonJava, wh: str, lake: Catalog, pk: bool) -> None:
    # Primary-key columns (partition keys included) are NOT NULL in Paimon: NULL partitions are
    # exercised by the append variant.
    values = [v for v in SPECIAL if v is not None] if pk else SPECIAL
    data = _partitioned(values)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=not pk),
                        pa.field("q", pa.int32(), nullable=not pk), ("v", pa.string())])
    data = data.cast(schema)
    keys = ["id", "p", "q"] if pk else []
    opts = {"bucket": "2"} if pk else {"bucket": "-1"}
    java.create_table(wh, "db.j", schema, primary_keys=keys, partition_keys=["p", "q"], options=opts)
    java.write(wh, "db.j", data)
    t_j = lake.get_table("db.j")
    assert_same_table(t_j.to_arrow(), data)

    t_l = lake.create_table("db.l", schema, primary_keys=keys, partition_keys=["p", "q"], options=opts)
    t_l.write_arrow(data)
    assert_same_table(java.read(wh, "db.l"), data)
    # Same directory names from both engines.
    assert _partition_dirs(wh, "j") == _partition_dirs(wh, "l")
    # Partition filters agree, also on NULL and on values needing escapes.
    for flt in ([("p", "=", "a/b")], [("p", "in", ["x=y", "50%"]), ("q", "=", 0)], [("p", ">", "a")]):
        assert_same_table(t_l.to_arrow(filter=flt), java.read(wh, "db.l", filter=flt))
        assert_same_table(t_j.to_arrow(filter=flt), java.read(wh, "db.j", filter=flt))
    # lake_assets filters have no IS NULL: compare Java's with the NULL partition of our full read.
    null_rows = t_l.to_arrow().filter(pa.compute.is_null(t_l.to_arrow().column("p")))
    assert null_rows.num_rows == (0 if pk else 1)
    assert_same_table(java.read(wh, "db.l", filter=[("p", "is null")]), null_rows)
    # Java appends into our partitions and we into Java's.
    java.write(wh, "db.l", data.slice(0, 3))
    t_j.write_arrow(data.slice(0, 3))
    assert_same_table(t_l.refresh().to_arrow(), java.read(wh, "db.l"))
    assert_same_table(t_j.refresh().to_arrow(), java.read(wh, "db.j"))
    assert _partition_dirs(wh, "j") == _partition_dirs(wh, "l")


def test_typed_partition_keys_both_directions(java: PaimonJava, wh: str, lake: Catalog) -> None:
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False), pa.field("d", pa.date32(), nullable=False),
        pa.field("n", pa.int32(), nullable=False), pa.field("b", pa.bool_(), nullable=False),
        pa.field("dec", pa.decimal128(10, 2), nullable=False), ("v", pa.string()),
    ])
    data = pa.table({
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "d": [datetime.date(2024, 1, 1), datetime.date(1969, 12, 31), datetime.date(2024, 1, 1),
              datetime.date(1, 1, 1)],
        "n": pa.array([-1, 0, 2**31 - 1, -(2**31)], pa.int32()),
        "b": [True, False, True, False],
        "dec": [decimal.Decimal("1.50"), decimal.Decimal("-0.01"), decimal.Decimal("0.00"), decimal.Decimal("99.99")],
        "v": ["a", "b", "c", "d"],
    }, schema=schema)
    keys = ["d", "n", "b", "dec"]
    java.create_table(wh, "db.j", schema, primary_keys=["id", *keys], partition_keys=keys, options={"bucket": "2"})
    java.write(wh, "db.j", data)
    t_l = lake.create_table("db.l", schema, primary_keys=["id", *keys], partition_keys=keys, options={"bucket": "2"})
    t_l.write_arrow(data)
    assert_same_table(lake.get_table("db.j").to_arrow(), data)
    assert_same_table(java.read(wh, "db.l"), data)
    dirs = {
        name: sorted(os.path.relpath(r, os.path.join(wh, "db.db", name)) for r, _, files in
                     os.walk(os.path.join(wh, "db.db", name)) if any(f.startswith("data-") for f in files))
        for name in ("j", "l")
    }
    assert dirs["j"] == dirs["l"]


# ---------------------------------------------------------------------------------- buckets

_TS = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456)
KEY_TYPES = {
    "boolean": (pa.bool_(), [True, False]),
    "tinyint": (pa.int8(), [-128, -1, 0, 1, 127]),
    "smallint": (pa.int16(), [-32768, -7, 0, 300, 32767]),
    "int": (pa.int32(), [-(2**31), -1, 0, 1, 17, 2**31 - 1]),
    "bigint": (pa.int64(), [-(2**63), -1, 0, 1, 2**40 + 3, 2**63 - 1]),
    "float": (pa.float32(), [-1.5, 0.0, -0.0, 3.25, float("inf"), float("nan")]),
    "double": (pa.float64(), [-1.5, 0.0, -0.0, 1e300, float("-inf"), float("nan")]),
    "decimal_compact": (pa.decimal128(9, 2), [decimal.Decimal(x) for x in ("-1.00", "0.00", "12345.67", "0.01")]),
    "decimal_wide": (
        pa.decimal128(30, 5), [decimal.Decimal(x) for x in ("-1.00000", "0", "1234567890123456789.12345")]
    ),
    "string": (pa.string(), ["", "a", "abcdefg", "abcdefgh", "ünïcode 😀", "x" * 100]),
    "binary": (pa.binary(), [b"", b"\x00", b"\x01\x02\x03\x04\x05\x06\x07\x08", b"\xff" * 33]),
    "date": (pa.date32(), [datetime.date(1970, 1, 1), datetime.date(1, 1, 1), datetime.date(2024, 2, 29)]),
    "time": (pa.time32("ms"), [datetime.time(0, 0), datetime.time(12, 34, 56, 789000)]),
    "timestamp3": (pa.timestamp("ms"), [_TS.replace(microsecond=123000), datetime.datetime(1969, 12, 31, 23, 59)]),
    "timestamp6": (pa.timestamp("us"), [_TS, datetime.datetime(1900, 1, 1, 0, 0, 0, 1)]),
    "timestamp_ltz": (pa.timestamp("us", tz="UTC"), [_TS.replace(tzinfo=datetime.UTC)]),
}


def _key_rows(values: list, arrow_type: pa.DataType) -> pa.Table:
    # Many rows per distinct key value: a second key column spreads them over buckets.
    n = len(values) * 5
    return pa.table({
        "k": pa.array([values[i % len(values)] for i in range(n)], arrow_type),
        "k2": pa.array(range(n), pa.int32()),
        "v": [str(i) for i in range(n)],
    }, schema=pa.schema([pa.field("k", arrow_type, nullable=False), pa.field("k2", pa.int32(), nullable=False),
                         ("v", pa.string())]))


# Paimon Java 0.9's Parquet row-group filter casts TINYINT/SMALLINT literals wrongly
# (ClassCastException Byte/Short -> Integer), also on tables Java wrote itself: no equality reads there.
JAVA_CANNOT_FILTER = {"tinyint", "smallint"}

BINARY_STATS = pytest.mark.xfail(
    strict=True,
    reason="we write min/max key and value stats for BINARY columns where Java 0.9 writes NULL stats; "
    "Java then prunes the files of our tables that hold keys with bytes >= 0x80 (e.g. b'\\x00' and "
    "b'\\xff'*33 in one file): a bucket-key equality read by Java misses rows of our table. Paimon's "
    "ParquetSimpleStatsExtractor (1.x too) has no BINARY/VARBINARY case: their stats are always NULL",
)


@pytest.mark.parametrize("bucket_key", ["k", "k,k2"], ids=["bucket-key-k", "whole-key"])
@pytest.mark.parametrize("kind", [pytest.param(k, marks=BINARY_STATS) if k == "binary" else k for k in KEY_TYPES])
def test_bucket_placement_matches_java(java: PaimonJava, wh: str, lake: Catalog, kind: str, bucket_key: str) -> None:
    arrow_type, values = KEY_TYPES[kind]
    data = _key_rows(values, arrow_type)
    options = {"bucket": "7", "bucket-key": bucket_key}
    t = lake.create_table("db.b", data.schema, primary_keys=["k", "k2"], options=options)
    t.write_arrow(data)

    java_buckets = [r["bucket"] for r in java.bucket_of(wh, "db.b", data)]
    key_cols = bucket_key.split(",")
    ours = assign_buckets([data.column(c) for c in key_cols],
                          [from_arrow(data.schema.field(c).type, False) for c in key_cols], 7)
    assert list(ours) == java_buckets
    # Our files sit in the bucket Java computes for their rows.
    for (_, bucket), rows in rows_by_bucket(t).items():
        for r in java.bucket_of(wh, "db.b", rows.select(["k", "k2", "v"])):
            assert r["bucket"] == bucket
    # Java finds every row with a bucket-key equality filter (it prunes to one bucket).
    if kind in JAVA_CANNOT_FILTER:
        return
    for i in range(0, data.num_rows, 3):
        row = data.slice(i, 1).to_pylist()[0]
        flt = [(c, "=", row[c]) for c in key_cols]
        if isinstance(row["k"], float) and row["k"] != row["k"]:
            continue  # NaN = NaN is false in SQL
        got = java.read(wh, "db.b", filter=flt)
        assert row["k2"] in got.column("k2").to_pylist(), (row, flt)


def test_java_09_cannot_filter_its_own_tinyint_columns(java: PaimonJava, wh: str) -> None:
    """Records the oracle's limit that test_bucket_placement_matches_java works around."""
    schema = pa.schema([pa.field("k", pa.int8(), nullable=False), ("v", pa.string())])
    java.create_table(wh, "db.ti", schema, primary_keys=["k"], options={"bucket": "2"})
    java.write(wh, "db.ti", pa.table({"k": pa.array([1, 2], pa.int8()), "v": ["a", "b"]}, schema=schema))
    with pytest.raises(JavaError) as err:
        java.read(wh, "db.ti", filter=[("k", "=", 1)])
    assert err.value.java_class == "java.lang.ClassCastException"


def test_custom_default_partition_name(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """``partition.default-name`` names the NULL partition's directory in both engines."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())])
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x", None, "y"], "v": ["a", "b", "c"]},
                    schema=schema)
    opts = {"bucket": "-1", "partition.default-name": "NO_P"}
    java.create_table(wh, "db.j", schema, partition_keys=["p"], options=opts)
    java.write(wh, "db.j", data)
    t_l = lake.create_table("db.l", schema, partition_keys=["p"], options=opts)
    t_l.write_arrow(data)
    assert "p=NO_P" in _partition_dirs(wh, "j")
    assert _partition_dirs(wh, "j") == _partition_dirs(wh, "l")
    assert_same_table(lake.get_table("db.j").to_arrow(), data)
    assert_same_table(java.read(wh, "db.l"), data)
