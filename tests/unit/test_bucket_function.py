"""``bucket-function.type`` ``mod`` and ``hive``: vectors from Paimon HEAD, and what tables do with them.

Paimon Java 0.9 (our Java oracle) predates both functions (``mod``: 1.3, ``hive``: 1.4), so the
expected values here come from Paimon HEAD's own tests (``ModBucketFunctionTest``,
``HiveBucketFunctionTest``, paimon-rust's ``bucket_function.rs`` test of the same case) or are
worked out by hand from HEAD's source (``HiveHasher``, ``HiveBucketFunction``) and the JDK's
documented ``hashCode``s, as each comment says. pypaimon-rust 0.4, which implements both, checks
the same placements end to end (``tests/interop/test_bucket_function_interop.py``).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import UnsupportedFeatureError
from lake_assets.lsm import bucket_function
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.lsm.bucket_function import function_problem, hive_field_hashes, hive_hashes
from lake_assets.spec.arrow_types import from_arrow, to_arrow
from lake_assets.spec.data_types import (
    BigIntType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

STRING = VarCharType(2**31 - 1)
BYTES = VarBinaryType(2**31 - 1)


def _i32(v: int) -> int:
    """A Java int's bits as the unsigned value the hashes are returned in."""
    return v & 0xFFFFFFFF


# ---- mod: ModBucketFunctionTest (HEAD), numBuckets = 5
def test_mod_vectors_of_paimon_head() -> None:
    ints = assign_buckets([pa.array([1, 7, -2], pa.int32())], [IntType()], 5, "mod")
    longs = assign_buckets([pa.array([8, 0, -3], pa.int64())], [BigIntType()], 5, "mod")
    assert ints.tolist() == [1, 2, 3]
    assert longs.tolist() == [3, 0, 2]


def test_mod_edges() -> None:
    # Math.floorMod over the whole range: the result is in [0, n) whatever the sign; a null key is
    # the zeroed slot of its BinaryRow (BinaryRowWriter.setNullAt puts 0L): bucket 0
    keys = pa.array([-(2**63), 2**63 - 1, -1, None, -7], pa.int64())
    assert assign_buckets([keys], [BigIntType()], 7, "mod").tolist() == [
        (-(2**63)) % 7, (2**63 - 1) % 7, 6, 0, 0]
    ints = pa.array([-(2**31), 2**31 - 1, None], pa.int32())
    assert assign_buckets([ints], [IntType()], 3, "mod").tolist() == [(-(2**31)) % 3, (2**31 - 1) % 3, 0]


def test_mod_refuses_what_head_refuses() -> None:
    # ModBucketFunction's constructor: "bucket key must have exactly one field", "INT or BIGINT"
    assert function_problem("mod", [IntType()]) is None
    assert function_problem("mod", [BigIntType()]) is None
    assert "exactly one field" in str(function_problem("mod", [IntType(), BigIntType()]))
    for t in (STRING, SmallIntType(), DecimalType(10, 0), DateType()):
        assert "INT or BIGINT" in str(function_problem("mod", [t]))


# ---- hive: HiveBucketFunctionTest (HEAD) and paimon-rust's copy of it
def test_hive_vector_of_paimon_head() -> None:
    # (7, "hello", bytes {1, 2, 3}, 12.3400 as DECIMAL(10, 4)), 8 buckets; HEAD's expected hash is
    # 31 * (31 * (31 * 7 + hashBytes("hello")) + hashBytes({1,2,3})) + new BigDecimal("12.34").hashCode(),
    # with hashBytes("hello") = 99162322, hashBytes({1,2,3}) = 1026 and 31 * 1234 + 2 = 38256
    # (the constants paimon-rust's test spells out)
    cols = [pa.array([7], pa.int32()), pa.array(["hello"]), pa.array([b"\x01\x02\x03"]),
            pa.array([Decimal("12.3400")], pa.decimal128(10, 4))]
    types: list[DataType] = [IntType(), STRING, BYTES, DecimalType(10, 4)]
    expected = _i32(31 * (31 * (31 * 7 + 99162322) + 1026) + 38256)
    assert hive_hashes(cols, types).tolist() == [expected]
    assert assign_buckets(cols, types, 8, "hive").tolist() == [(expected & 0x7FFFFFFF) % 8]
    # paimon-rust's case: a leading TRUE (hash 1)
    cols.insert(0, pa.array([True]))
    types.insert(0, BooleanType())
    expected = _i32(31 * (31 * (31 * (31 * 1 + 7) + 99162322) + 1026) + 38256)
    assert assign_buckets(cols, types, 8, "hive").tolist() == [(expected & 0x7FFFFFFF) % 8]


def test_hive_nulls_hash_zero() -> None:
    # HiveBucketFunctionTest.testHiveBucketFunctionWithNulls: (null INT, null STRING) -> bucket 0
    cols = [pa.array([None], pa.int32()), pa.array([None], pa.string())]
    assert assign_buckets(cols, [IntType(), STRING], 4, "hive").tolist() == [0]


def test_hive_refuses_what_head_cannot_hash() -> None:
    # HiveBucketFunction.computeHash throws "Unsupported type as bucket key type" for Timestamp
    # values (TIMESTAMP and TIMESTAMP_LTZ getters) and nested rows, arrays and maps
    assert "TIMESTAMP" in str(function_problem("hive", [IntType(), TimestampType(6)]))
    ok: list[DataType] = [BooleanType(), TinyIntType(), SmallIntType(), IntType(), BigIntType(), FloatType(),
                          DoubleType(), DecimalType(38, 10), STRING, BinaryType(4), BYTES, DateType(), TimeType(0)]
    assert function_problem("hive", ok) is None


@pytest.mark.parametrize(("t", "values", "expected"), [
    # BOOLEAN: hashInt(b ? 1 : 0)
    (BooleanType(), [True, False], [1, 0]),
    # TINYINT / SMALLINT / INT: hashInt(value), negative values as Java's int bits
    (TinyIntType(), [-3, 127], [_i32(-3), 127]),
    (SmallIntType(), [300, -32768], [300, _i32(-32768)]),
    (IntType(), [-7, 2**31 - 1], [_i32(-7), 2**31 - 1]),
    # BIGINT: Long.hashCode = (int) (v ^ (v >>> 32)): -1 -> 0, 2**32 -> 1, -2**32 -> 0xFFFFFFFF ^ 0
    (BigIntType(), [-1, 2**32, -(2**32), 5], [0, 1, _i32(-1), 5]),
    # FLOAT: floatToIntBits (1.5f = 0x3FC00000), both zeros 0, NaN canonical 0x7FC00000
    (FloatType(), [1.5, -0.0, float("nan")], [0x3FC00000, 0, 0x7FC00000]),
    # DOUBLE: doubleToLongBits folded as a long (1.0 = 0x3FF0000000000000 -> 0x3FF00000),
    # -0.0 -> 0, NaN canonical 0x7FF8000000000000 -> 0x7FF80000
    (DoubleType(), [1.0, -0.0, float("nan")], [0x3FF00000, 0, 0x7FF80000]),
    # DATE: days since the epoch (2024-02-29 is day 19782); TIME: millis of the day
    (DateType(), [dt.date(2024, 2, 29), dt.date(1969, 12, 31)], [19782, _i32(-1)]),
    (TimeType(3), [dt.time(1, 0, 0, 5000)], [3_600_005]),
    # STRING: hashBytes of the UTF-8 bytes as signed Java bytes, not String.hashCode:
    # "é" is C3 A9 = -61, -87: 31 * -61 - 87 = -1978 (String.hashCode would be 233); "" is 0
    (STRING, ["hello", "é", ""], [99162322, _i32(-1978), 0]),
    # BYTES: the same over the bytes: {0xFF} = -1, {1, 2, 3} = 1026
    (BYTES, [b"\xff", b"\x01\x02\x03"], [_i32(-1), 1026]),
    # DECIMAL: BigDecimal.hashCode = 31 * unscaled.hashCode + scale after stripping trailing zeros
    # while the scale is positive: 12.3400 -> 1234 scale 2 (38256); -12.3400 -> -38254 + 2;
    # 100.00 -> 100 scale 0 (3100, never 1E+2); 0.0000 -> BigDecimal.ZERO (0)
    (DecimalType(10, 4), [Decimal("12.3400"), Decimal("-12.3400"), Decimal("100.0000"), Decimal("0.0000")],
     [38256, _i32(-38254 + 2), 3100, 0]),
])
def test_hive_field_hashes(t: DataType, values: list[object], expected: list[int]) -> None:
    assert hive_field_hashes(pa.array(values, _arrow(t)), t).tolist() == expected


def test_hive_wide_decimal_hashes_its_big_integer_words() -> None:
    # DECIMAL(38, 0) of 10**20 = 0x5_6BC75E2D_63100000: BigInteger.hashCode folds the magnitude's
    # big-endian int words, 31 * h + (word & 0xFFFFFFFF), then * signum
    words = [0x5, 0x6BC75E2D, 0x63100000]
    h = 0
    for w in words:
        h = (31 * h + w) & 0xFFFFFFFF
    t = DecimalType(38, 0)
    got = hive_field_hashes(pa.array([Decimal(10**20), Decimal(-(10**20))], _arrow(t)), t)
    assert got.tolist() == [_i32(31 * h), _i32(31 * -h)]
    # 10**20 / 10**6 at scale 6 strips to the same value and scale 0
    t6 = DecimalType(38, 6)
    assert hive_field_hashes(pa.array([Decimal(10**20)], _arrow(t6)), t6).tolist() == [_i32(31 * h)]


def test_hive_bytes_in_several_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    # the per-pass byte budget splits rows into passes; a row longer than a pass is one pass
    strings = ["a" * 40, "", None, "xyz", "é" * 9, "q"]
    whole = hive_field_hashes(pa.array(strings), STRING)
    monkeypatch.setattr(bucket_function, "_BYTES_PER_PASS", 8)
    assert hive_field_hashes(pa.array(strings), STRING).tolist() == whole.tolist()
    assert whole[2] == 0


def test_chunked_and_sliced_columns_hash_as_plain_ones() -> None:
    values = [Decimal("1.50"), None, Decimal("-3.25"), Decimal("7.00"), Decimal("0.01")]
    t = DecimalType(9, 2)
    plain = pa.array(values, _arrow(t))
    sliced = pa.array([Decimal("9.99"), *values], _arrow(t)).slice(1)
    chunked = pa.chunked_array([plain.slice(0, 2), plain.slice(2)])
    want = hive_field_hashes(plain, t).tolist()
    assert hive_field_hashes(sliced, t).tolist() == want
    assert hive_field_hashes(chunked, t).tolist() == want
    texts = pa.array(["zz", "hello", None, "é"])
    assert hive_field_hashes(texts.slice(1), STRING).tolist() == hive_field_hashes(
        pa.array(["hello", None, "é"]), STRING).tolist()


def _arrow(t: DataType) -> pa.DataType:
    return to_arrow(t)


# ---- tables
def _bucket_of_rows(t: Table, key: str) -> dict[object, int]:
    """Each key's bucket, from the bucket directory of the live data file holding it."""
    placed: dict[object, int] = {}
    for split in t.plan():
        bucket_dir = Path(t.store.bucket_dir(split.partition, split.bucket))
        for f in split.files:
            for k in pq.read_table(bucket_dir / f.file_name, columns=[key]).column(key).to_pylist():
                placed[k] = split.bucket
    return placed


@pytest.mark.parametrize(("function", "key_type", "keys"), [
    ("mod", pa.int64(), list(range(-9, 9))),
    ("mod", pa.int32(), [-(2**31), -5, 0, 3, 2**31 - 1]),
    ("hive", pa.string(), ["a", "bb", "é", "hello", "", "longer than seven bytes"]),
    ("hive", pa.int64(), [-(2**40), -1, 0, 1, 2**33]),
])
def test_writes_place_and_filtered_reads_find_every_key(
    tmp_path: Path, function: str, key_type: pa.DataType, keys: list[object]
) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", key_type, nullable=False), ("v", pa.int64())])
    t = cat.create_table("db.t", schema, primary_keys=["k"],
                         options={"bucket": "5", "bucket-function.type": function})
    t.write_arrow(pa.table({"k": pa.array(keys, key_type), "v": list(range(len(keys)))}, schema=schema))
    placed = _bucket_of_rows(t, "k")
    want = assign_buckets([pa.array(keys, key_type)], [from_arrow(key_type)], 5, function)
    assert [placed[k] for k in keys] == want.tolist()
    for i, k in enumerate(keys):
        # the bucket filter picks the key's bucket by the table's function: a wrong function
        # would skip the file holding it
        assert [s.bucket for s in t.plan(filter=[("k", "=", k)])] == [int(want[i])]
        assert t.to_arrow(filter=[("k", "=", k)]).column("v").to_pylist() == [i]
    t.compact(full=True)
    assert sorted(t.to_arrow().column("v").to_pylist()) == list(range(len(keys)))
    assert [_bucket_of_rows(t, "k")[k] for k in keys] == want.tolist()


def test_a_key_the_function_cannot_place_refuses_writes_not_reads(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), ("v", pa.int64())])
    t = cat.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "3", "bucket-function.type": "mod"})
    with pytest.raises(UnsupportedFeatureError, match=r"bucket-function.type = 'mod'.*INT or BIGINT"):
        t.write_arrow(pa.table({"k": ["a"], "v": [1]}, schema=schema))
    assert t.to_arrow(filter=[("k", "=", "a")]).num_rows == 0  # reads work; nothing was written
    ts = pa.schema([pa.field("ts", pa.timestamp("us"), nullable=False), ("v", pa.int64())])
    h = cat.create_table("db.h", ts, primary_keys=["ts"], options={"bucket": "3", "bucket-function.type": "hive"})
    with pytest.raises(UnsupportedFeatureError, match="hive bucket function cannot hash"):
        h.write_arrow(pa.table({"ts": [dt.datetime(2024, 1, 1)], "v": [1]}, schema=ts))


def test_postpone_tables_refuse_writes_and_compaction_dynamic_ones_ignore_the_function(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), ("v", pa.int64())])
    p = cat.create_table("db.p", schema, primary_keys=["k"], options={"bucket": "-2", "bucket-function.type": "mod"})
    with pytest.raises(UnsupportedFeatureError, match="mod"):
        p.write_arrow(pa.table({"k": ["a"], "v": [1]}, schema=schema))
    with pytest.raises(UnsupportedFeatureError, match="mod"):
        p.compact()
    # dynamic bucket mode never uses the bucket function (Java's assigner hashes the key itself)
    d = cat.create_table("db.d", schema, primary_keys=["k"], options={"bucket": "-1", "bucket-function.type": "mod"})
    d.write_arrow(pa.table({"k": ["a", "b"], "v": [1, 2]}, schema=schema))
    assert sorted(d.to_arrow(filter=[("k", "=", "b")]).column("v").to_pylist()) == [2]


def test_postpone_compaction_places_rows_by_the_function(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64())])
    p = cat.create_table("db.p", schema, primary_keys=["k"], options={
        "bucket": "-2", "bucket-function.type": "mod", "postpone.default-bucket-num": "4"})
    keys = [-6, -3, 0, 1, 2, 5, 11]
    p.write_arrow(pa.table({"k": keys, "v": list(range(len(keys)))}, schema=schema))
    p.compact()
    placed = _bucket_of_rows(p, "k")
    assert [placed[k] for k in keys] == [k % 4 for k in keys]  # floorMod
    assert p.to_arrow(filter=[("k", "=", -3)]).column("v").to_pylist() == [1]


def test_random_keys_route_like_the_reference_through_the_writer_hash() -> None:
    # the writer's routing (ops/route.py) asks assign_buckets with the table's function
    from lake_assets.ops.route import RouteSpec, route

    rng = np.random.default_rng(7)
    keys = pa.array(rng.integers(-1000, 1000, 500), pa.int64())
    data = pa.table({"k": keys, "v": pa.array(np.arange(500))})
    spec = RouteSpec(partition_keys=(), bucket_keys=("k",), bucket_types=(BigIntType(),), num_buckets=6,
                     primary_keys=("k",), bucket_function="mod")
    for group in route(data, np.zeros(500, dtype=np.int8), spec):
        assert all(k % 6 == group.bucket for k in group.rows.column("k").to_pylist())


def test_the_function_is_immutable_and_read_case_insensitively(tmp_path: Path) -> None:
    # @Immutable in Paimon HEAD's CoreOptions (SchemaManager.checkAlterTableOption refuses it): files
    # already written are placed by the function, so changing it would misplace every new row
    from lake_assets.errors import SchemaError

    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])
    t = cat.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "4", "bucket-function.type": "MOD"})
    for value in ("default", "hive"):
        with pytest.raises(SchemaError, match=r"bucket-function\.type.*immutable"):
            t.update_schema().set_option("bucket-function.type", value).commit()
    with pytest.raises(SchemaError, match="immutable"):
        t.update_schema().remove_option("bucket-function.type").commit()
    # "MOD" is mod (Java's enum options match case-insensitively)
    keys = [-5, -1, 0, 6]
    t.write_arrow(pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(keys, pa.int64())}, schema=schema))
    placed = _bucket_of_rows(t, "k")
    assert [placed[k] for k in keys] == [k % 4 for k in keys]
    d = cat.create_table("db.d", schema, primary_keys=["k"], options={"bucket": "4"})
    with pytest.raises(SchemaError, match="immutable"):
        d.update_schema().set_option("bucket-function.type", "mod").commit()
