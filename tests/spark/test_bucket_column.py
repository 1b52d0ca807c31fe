"""The bucket computed in the JVM (`bucket_column`) equals the core's `assign_buckets` on every key
type it encodes, including negative numbers, multi-byte strings of every length around the 7-byte
inline limit, multi-column keys with several variable parts, and nulls."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from lake_assets.lsm.bucket import assign_buckets
from lake_assets.spark.bucket_column import bucket_column, encodable
from lake_assets.spec.types import (
    BigIntType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

N = 400


def _strings(rng: np.random.Generator) -> list[str | None]:
    alphabet = ["a", "Z", "0", "é", "中", "😀", " "]
    return [None if i % 53 == 0 else "".join(rng.choice(alphabet, size=i % 21)) for i in range(N)]


def _columns() -> dict[str, tuple[pa.Array, DataType]]:
    rng = np.random.default_rng(7)
    ints = rng.integers(-(2**62), 2**62, N)
    ints[:4] = [0, -1, 2**63 - 1, -(2**63)]
    small = rng.integers(-(2**31), 2**31, N)
    texts = _strings(rng)
    return {
        "k8": (pa.array(small % 256 - 128, pa.int8()), TinyIntType()),
        "k16": (pa.array(small % 65536 - 32768, pa.int16()), SmallIntType()),
        "k32": (pa.array(small, pa.int32()), IntType()),
        "k64": (pa.array(ints, pa.int64()), BigIntType()),
        "flag": (pa.array(ints % 2 == 0), BooleanType()),
        "day": (pa.array([dt.date(1900, 1, 1) + dt.timedelta(days=int(d)) for d in small % 80000]), DateType()),
        "price": (pa.array([decimal.Decimal(int(v)).scaleb(-4) for v in ints % 10**16], pa.decimal128(18, 4)),
                  DecimalType(18, 4)),
        "name": (pa.array(texts, pa.string()), VarCharType(100)),
        "code": (pa.array([None if t is None else t[:5].ljust(5) for t in texts], pa.string()), CharType(5)),
        "blob": (pa.array([None if t is None else t.encode()[::-1] for t in texts], pa.binary()), VarBinaryType(100)),
    }


def _check(spark, data: pa.Table, keys: list[str], types: list[DataType], num_buckets: int) -> None:
    df = spark.createDataFrame(data)
    column = bucket_column([F.col(k) for k in keys], types, num_buckets)
    assert column is not None
    got = df.select(F.col("row"), column.alias("bucket")).toArrow().sort_by("row").column("bucket")
    expected = assign_buckets([data.column(k).combine_chunks() for k in keys], types, num_buckets)
    assert got.to_pylist() == expected.tolist()


def test_every_encodable_type_hashes_like_the_core(spark) -> None:
    columns = _columns()
    data = pa.table({"row": pa.array(range(N), pa.int32()), **{k: a for k, (a, _) in columns.items()}})
    for name, (_, t) in columns.items():
        _check(spark, data, [name], [t], 7)


def test_multi_column_keys_with_variable_parts_and_nulls(spark) -> None:
    columns = _columns()
    data = pa.table({"row": pa.array(range(N), pa.int32()), **{k: a for k, (a, _) in columns.items()}})
    keys = ["name", "k32", "blob", "k64", "code", "day"]
    _check(spark, data, keys, [columns[k][1] for k in keys], 16)


def test_a_wider_spark_column_is_hashed_as_the_tables_type(spark) -> None:
    data = pa.table({"row": pa.array(range(50), pa.int32()), "k": pa.array(range(-25, 25), pa.int64())})
    df = spark.createDataFrame(data)
    got = df.select("row", bucket_column([F.col("k")], [IntType()], 5).alias("b")).toArrow().sort_by("row")
    expected = assign_buckets([data.column("k").cast(pa.int32()).combine_chunks()], [IntType()], 5)
    assert got.column("b").to_pylist() == expected.tolist()


@pytest.mark.parametrize("types", [[DoubleType()], [TimestampType(3)], [DecimalType(20, 2)], [IntType()] * 57, []])
def test_keys_it_cannot_spell_are_refused(types: list[DataType]) -> None:
    assert not encodable(types)
    assert bucket_column([F.lit(1)] * len(types), types, 4) is None


def test_routing_uses_the_python_hash_for_keys_the_jvm_cannot_spell(spark, catalog) -> None:
    from lake_assets.spark import repartition_by_bucket
    from lake_assets.spark.schema import BUCKET_COLUMN

    schema = pa.schema([pa.field("x", pa.float64(), nullable=False), ("v", pa.int64())])
    table = catalog.create_table("db.d", schema, primary_keys=["x"], options={"bucket": "3"})
    data = pa.table({"x": [-0.0, 0.0, 1.5, -2.25, 1e300, float("nan")], "v": range(6)}, schema=schema)
    routed = repartition_by_bucket(spark.createDataFrame(data), table).toArrow().sort_by("v")
    expected = assign_buckets([data.column("x").combine_chunks()], [DoubleType()], 3)
    assert routed.column(BUCKET_COLUMN).to_pylist() == expected.tolist()
