"""Spark routing of ``bucket-function.type`` ``mod`` and ``hive`` tables: the JVM expressions
(`bucket_column`: ``mod`` always, ``hive`` of boolean, integer and date keys) equal the core's
vectorized functions row for row, other ``hive`` keys take the Python path, and writes land each
row in the bucket the core (and so Paimon HEAD, `tests/unit/test_bucket_function.py`) gives it."""

from __future__ import annotations

import datetime as dt
import importlib
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from lake_assets import Catalog, Table
from lake_assets.errors import UnsupportedFeatureError
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.spark import write_table
from lake_assets.spark.bucket_column import bucket_column, function_encodable
from lake_assets.spark.native_write import write_table_native
from lake_assets.spark.schema import spark_schema
from lake_assets.spec.data_types import (
    BigIntType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarCharType,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
N = 300
REPO = Path(__file__).resolve().parents[2]


def _columns() -> dict[str, tuple[pa.Array, DataType]]:
    rng = np.random.default_rng(11)
    longs = rng.integers(-(2**63), 2**63 - 1, N, dtype=np.int64)
    longs[:3] = [-(2**63), 2**63 - 1, -1]
    ints = rng.integers(-(2**31), 2**31, N)
    nulls = np.arange(N) % 17 == 0
    return {
        "b": (pa.array(ints % 2 == 0, mask=nulls), BooleanType()),
        "i8": (pa.array(ints % 256 - 128, pa.int8(), mask=nulls), TinyIntType()),
        "i16": (pa.array(ints % 65536 - 32768, pa.int16(), mask=nulls), SmallIntType()),
        "i32": (pa.array(ints, pa.int32(), mask=nulls), IntType()),
        "i64": (pa.array(longs, pa.int64(), mask=nulls), BigIntType()),
        "day": (pa.array([dt.date(1900, 1, 1) + dt.timedelta(days=int(d)) for d in ints % 80000], mask=nulls),
                DateType()),
    }


def _jvm_buckets(spark, data: pa.Table, keys: list[str], types: list[DataType], count: int, function: str) -> list:
    column = bucket_column([F.col(k) for k in keys], types, count, function)
    assert column is not None
    df = spark.createDataFrame(data)
    return df.select("row", column.alias("bucket")).toArrow().sort_by("row").column("bucket").to_pylist()


def test_jvm_mod_and_hive_equal_the_core(spark) -> None:
    columns = _columns()
    data = pa.table({"row": pa.array(range(N), pa.int32()), **{k: a for k, (a, _) in columns.items()}})
    for key in ("i32", "i64"):
        t = columns[key][1]
        want = assign_buckets([data.column(key)], [t], 13, "mod").tolist()
        assert _jvm_buckets(spark, data, [key], [t], 13, "mod") == want
    for key, (_, t) in columns.items():
        want = assign_buckets([data.column(key)], [t], 13, "hive").tolist()
        assert _jvm_buckets(spark, data, [key], [t], 13, "hive") == want, key
    keys = list(columns)
    types = [columns[k][1] for k in keys]
    assert _jvm_buckets(spark, data, keys, types, 1024, "hive") == assign_buckets(
        [data.column(k) for k in keys], types, 1024, "hive").tolist()


def test_a_count_column_and_a_wider_spark_column(spark) -> None:
    # a postpone table's per-row count (null: no bucket), and a bigint Spark column of an INT key
    # hashed as the INT it is in the table
    data = pa.table({"row": pa.array(range(6), pa.int32()), "k": pa.array([-7, -1, 0, 5, 9, None], pa.int64()),
                     "n": pa.array([3, 3, None, 4, 4, 4], pa.int32())})
    df = spark.createDataFrame(data)
    for function in ("mod", "hive"):
        column = bucket_column([F.col("k")], [IntType()], F.col("n"), function)
        assert column is not None
        got = df.select("row", column.alias("b")).toArrow().sort_by("row").column("b").to_pylist()
        want = [None if n is None else int(assign_buckets([pa.array([k], pa.int32())], [IntType()], n, function)[0])
                for k, n in zip(data.column("k").to_pylist(), data.column("n").to_pylist(), strict=True)]
        assert got == want


def test_hive_keys_without_an_expression_take_the_python_path() -> None:
    for types in ([VarCharType(10)], [DoubleType()], [DecimalType(10, 2)], [IntType(), VarCharType(5)]):
        assert not function_encodable(types, "hive")
        assert bucket_column([F.lit(1)] * len(types), types, 4, "hive") is None
    assert function_encodable([BigIntType()], "mod")
    assert not function_encodable([VarCharType(5)], "mod")  # refused by the table, not spelled


def _placement(t: Table) -> dict[int, int]:
    placed: dict[int, int] = {}
    for split in t.plan():
        bucket_dir = Path(t.store.bucket_dir(split.partition, split.bucket))
        for f in split.files:
            for v in pq.read_table(bucket_dir / f.file_name, columns=["v"]).column("v").to_pylist():
                placed[v] = split.bucket
    return placed


@pytest.mark.parametrize(("function", "key_type", "keys", "native"), [
    ("mod", pa.int64(), [i * 7919 - 40000 for i in range(60)], False),  # JVM expression
    ("hive", pa.string(), [f"k{i}-é" * (i % 4) + str(i) for i in range(60)], False),  # Python path
    ("hive", pa.decimal128(12, 3), [Decimal(i * 1001 - 30000).scaleb(-3) for i in range(60)], False),
    ("mod", pa.int32(), [i * 7919 - 40000 for i in range(60)], True),  # Spark's own Parquet writer
    ("hive", pa.string(), [f"k{i}-é" * (i % 4) + str(i) for i in range(60)], True),
])
def test_write_table_places_rows_by_the_function(spark, tmp_path: Path, function: str, key_type: pa.DataType,
                                                 keys: list[object], native: bool) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", key_type, nullable=False),
                        ("v", pa.int64())])
    t = cat.create_table("db.t", schema, primary_keys=["p", "k"], partition_keys=["p"],
                         options={"bucket": "5", "bucket-key": "k", "bucket-function.type": function})
    data = pa.table({"p": ["a" if i % 2 else "b" for i in range(60)], "k": pa.array(keys, key_type),
                     "v": pa.array(range(60), pa.int64())}, schema=schema)
    df = spark.createDataFrame(data.to_pandas(), schema=spark_schema(data.schema)).repartition(3)
    if native:
        write_table_native(df, wh, "db.t", require_native=True)
    else:
        write_table(df, wh, "db.t")
    t = cat.get_table("db.t")
    want = assign_buckets([data.column("k")], t.schema.types(["k"]), 5, function).tolist()
    placed = _placement(t)
    assert [placed[v] for v in range(60)] == want
    rows = data.to_pylist()
    for v in (0, 17, 59):
        assert t.to_arrow(filter=[("k", "=", rows[v]["k"])]).column("v").to_pylist() == [v]


def test_postpone_batch_write_routes_by_the_function(spark, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64())])
    cat.create_table("db.p", schema, primary_keys=["k"],
                     options={"bucket": "-2", "bucket-function.type": "mod", "postpone.default-bucket-num": "4"})
    keys = [-9, -4, -1, 0, 3, 6, 10, 13]
    data = pa.table({"k": pa.array(keys, pa.int32()), "v": pa.array(range(len(keys)), pa.int64())}, schema=schema)
    write_table(spark.createDataFrame(data.to_pandas()).repartition(2), wh, "db.p")
    placed = _placement(cat.get_table("db.p"))
    assert [placed[v] for v in range(len(keys))] == [k % 4 for k in keys]  # floorMod


@pytest.mark.parametrize("bucket", ["3", "-2"])
def test_a_key_the_function_cannot_place_fails_on_the_driver(spark, tmp_path: Path, bucket: str) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), ("v", pa.int64())])
    cat.create_table("db.t", schema, primary_keys=["k"], options={"bucket": bucket, "bucket-function.type": "mod"})
    df = spark.createDataFrame(pa.table({"k": ["a", "b"], "v": [1, 2]}, schema=schema).to_pandas()).repartition(2)
    with pytest.raises(UnsupportedFeatureError, match="INT or BIGINT"):
        write_table(df, wh, "db.t")
    assert cat.get_table("db.t").latest_snapshot() is None


def test_python_workers_import_this_checkout(spark) -> None:
    # the Python-path bucket UDF runs in Spark's workers: they must import the lake_assets under test
    # a lambda: type hints would make Spark guess an eval type for the UDF (and warn)
    where = F.udf(lambda _: importlib.import_module("lake_assets").__file__, "string")
    got = spark.range(1).select(where(F.col("id")).alias("f")).collect()[0]["f"]
    assert Path(got).resolve().is_relative_to(REPO.resolve())
