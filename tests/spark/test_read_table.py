"""`read_table`: Spark's Parquet reader for files that need no merge, the source for the rest.

Every read is compared with the source's read of the same snapshot and with the core's.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.spark import read_table, write_table
from lake_assets.spark.native_read import NativeFiles

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("dt", pa.string(), nullable=False),
    ("qty", pa.int32()),
    ("price", pa.decimal128(10, 2)),
    ("at", pa.timestamp("ms")),
    ("at_ltz", pa.timestamp("ms", tz="UTC")),
    ("note", pa.string()),
    ("op", pa.string()),
])
SPARK_SCHEMA = ("id long, dt string, qty int, price decimal(10,2), at timestamp_ntz, at_ltz timestamp, "
                "note string, op string")


def _rows(ids, qty: int = 1, op: str = "+I") -> list[tuple]:
    t0 = dt.datetime(2024, 1, 1, 8)
    return [(i, f"2024-01-0{i % 2 + 1}", qty, decimal.Decimal(i).scaleb(-2), t0 + dt.timedelta(seconds=i),
             (t0 + dt.timedelta(minutes=i)).replace(tzinfo=dt.UTC), None if i % 5 == 0 else f"n{i}", op)
            for i in ids]


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _same(df, other, expected: pa.Table) -> None:
    """``df`` and ``other`` hold the rows of ``expected`` (the core's read)."""
    def rows(d):
        return sorted(tuple(r) for r in d.collect())
    got = rows(df)
    assert got == rows(other)
    assert got == sorted(tuple(r.values()) for r in spark_values(expected))


def spark_values(table: pa.Table) -> list[dict]:
    """The core's rows as Spark returns them (LTZ timestamps are instants in the session zone)."""
    out = []
    for r in table.to_pylist():
        if r["at_ltz"] is not None:
            r["at_ltz"] = r["at_ltz"].astimezone().replace(tzinfo=None)
        out.append(r)
    return out


def _native_and_merged(table) -> tuple[int, int]:
    files = NativeFiles(table, table.schema)
    parts = [files.split_files(s) for s in table.plan()]
    return sum(len(p.native) for p in parts), sum(len(p.merged) for p in parts)


@pytest.fixture
def pk(catalog: Catalog):
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "2", "rowkind.field": "op"})


def test_routed_files_are_read_by_spark_and_overlaps_by_the_source(spark, pk, warehouse: str) -> None:
    write_table(spark.createDataFrame(_rows(range(100)), SPARK_SCHEMA), warehouse, "db.t")
    only_native = read_table(spark, warehouse, "db.t")
    plan = _plan(only_native)
    assert "FileScan parquet" in plan and "PythonDataSource" not in plan and "BatchEvalPython" not in plan
    source = spark.read.format("lake").option("warehouse", warehouse).load("db.t")
    _same(only_native, source, pk.to_arrow())

    # updates and deletes of some keys: their buckets' files overlap, the source merges those
    write_table(spark.createDataFrame(_rows(range(0, 100, 7), qty=2), SPARK_SCHEMA), warehouse, "db.t")
    write_table(spark.createDataFrame(_rows(range(3, 100, 11), op="-D"), SPARK_SCHEMA), warehouse, "db.t")
    native, merged = _native_and_merged(pk)
    assert native == 0 and merged > 0  # every bucket has three overlapping files now
    mixed = read_table(spark, warehouse, "db.t")
    _same(mixed, spark.read.format("lake").option("warehouse", warehouse).load("db.t"), pk.to_arrow())

    # time travel reads snapshot 1 (all native) whatever came later
    first = read_table(spark, warehouse, "db.t", options={"snapshot-id": "1"})
    assert "PythonDataSource" not in _plan(first)
    _same(first, spark.read.format("lake").option("warehouse", warehouse).option("snapshot-id", "1").load("db.t"),
          pk.to_arrow(snapshot_id=1))


def test_compacted_table_is_read_by_spark_only(spark, pk, warehouse: str) -> None:
    write_table(spark.createDataFrame(_rows(range(60)), SPARK_SCHEMA), warehouse, "db.t")
    write_table(spark.createDataFrame(_rows(range(0, 60, 4), op="-D"), SPARK_SCHEMA), warehouse, "db.t")
    pk.compact(full=True)
    assert _native_and_merged(pk)[1] == 0
    df = read_table(spark, warehouse, "db.t")
    assert "PythonDataSource" not in _plan(df)
    _same(df, spark.read.format("lake").option("warehouse", warehouse).load("db.t"), pk.to_arrow())
    assert df.count() == 45


def test_files_with_retractions_or_an_older_schema_go_through_the_source(spark, pk, catalog: Catalog,
                                                                         warehouse: str) -> None:
    write_table(spark.createDataFrame(_rows(range(40)), SPARK_SCHEMA), warehouse, "db.t")
    write_table(spark.createDataFrame(_rows(range(0, 40, 3), op="-D"), SPARK_SCHEMA), warehouse, "db.t")
    pk.compact()  # universal compaction: a -D may stay in a file above level 0 that is not the top
    pk.update_schema().add_column("extra", pa.int64()).commit()
    table = catalog.get_table("db.t")
    files = NativeFiles(table, table.schema)
    assert not any(files.split_files(s).native for s in table.plan())  # schema-0 files: not the read schema
    df = read_table(spark, warehouse, "db.t")
    source = spark.read.format("lake").option("warehouse", warehouse).load("db.t")
    assert sorted(tuple(r) for r in df.collect()) == sorted(tuple(r) for r in source.collect())
    assert df.count() == 40 - 14


def test_append_table(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.a", SCHEMA, partition_keys=["dt"])
    df = spark.createDataFrame(_rows(range(50)), SPARK_SCHEMA)
    df.write.format("lake").option("warehouse", warehouse).mode("append").save("db.a")
    df.write.format("lake").option("warehouse", warehouse).mode("append").save("db.a")
    got = read_table(spark, warehouse, "db.a")
    assert "PythonDataSource" not in _plan(got)
    _same(got, spark.read.format("lake").option("warehouse", warehouse).load("db.a"), table.to_arrow())
