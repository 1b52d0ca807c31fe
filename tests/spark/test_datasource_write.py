"""Spark batch writes: what the core and pypaimon read back, overwrites, routed and unrouted input."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from lake_assets import Catalog, CommitKind
from lake_assets.spark import repartition_by_bucket, write_table

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

UTC = dt.UTC
ORDERS = pa.schema([
    ("id", pa.int64()),
    ("dt", pa.string()),
    ("qty", pa.int64()),
    ("price", pa.decimal128(10, 2)),
    ("at", pa.timestamp("ms")),
    ("at_ltz", pa.timestamp("ms", tz="UTC")),
])
# What a Spark job typically holds: narrower ints, microsecond timestamps in the session zone.
SPARK_ORDERS = "id int, dt string, qty int, price decimal(10,2), at timestamp_ntz, at_ltz timestamp"


def _rows(ids: range, dt_of=lambda i: f"2024-01-0{i % 3 + 1}", qty: int = 1) -> list[tuple]:
    return [
        (i, dt_of(i), qty, decimal.Decimal(i).scaleb(-2),
         dt.datetime(2024, 1, 1, 8) + dt.timedelta(microseconds=1_000_999 * i),
         dt.datetime(2024, 1, 1, 8, tzinfo=UTC) + dt.timedelta(microseconds=999 * i))
        for i in ids
    ]


def _writer(df, warehouse: str, mode: str = "append"):
    return df.write.format("lake").option("warehouse", warehouse).mode(mode)


def _data_files(warehouse: str) -> list[Path]:
    return sorted(p for p in Path(warehouse).rglob("*.parquet") if "bucket-" in str(p.parent))


def _expected(rows: list[tuple]) -> list[dict]:
    """Rows as the table stores them: milliseconds (floored), instants in UTC."""
    out = []
    for i, day, qty, price, at, at_ltz in rows:
        out.append({"id": i, "dt": day, "qty": qty, "price": price,
                    "at": at.replace(microsecond=at.microsecond // 1000 * 1000),
                    "at_ltz": at_ltz.replace(microsecond=at_ltz.microsecond // 1000 * 1000)})
    return sorted(out, key=lambda r: r["id"])


def test_append_round_trip(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.orders", ORDERS, partition_keys=["dt"])
    rows = _rows(range(30))
    df = spark.createDataFrame(rows, SPARK_ORDERS).repartition(3)
    _writer(df, warehouse).save("db.orders")
    _writer(spark.createDataFrame(_rows(range(30, 40)), SPARK_ORDERS), warehouse).save("db.orders")

    got = table.to_arrow().to_pylist()
    assert sorted(got, key=lambda r: r["id"]) == _expected(_rows(range(40)))
    assert [s.commit_kind for s in table.snapshots()] == [CommitKind.APPEND, CommitKind.APPEND]
    # and Spark reads back what it wrote
    back = spark.read.format("lake").option("warehouse", warehouse).load("db.orders")
    assert back.count() == 40


def test_write_table_routes_each_bucket_to_one_task(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.orders", ORDERS, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "4"})
    # rows of every bucket spread over five tasks at random
    df = spark.createDataFrame(_rows(range(200)), SPARK_ORDERS).repartition(5)
    write_table(df, warehouse, "db.orders")
    updates = spark.createDataFrame(_rows(range(0, 200, 2), qty=2), SPARK_ORDERS).repartition(5)
    write_table(updates, warehouse, "db.orders")
    assert len(table.snapshots()) == 2
    got = {r["id"]: r["qty"] for r in table.to_arrow().to_pylist()}
    assert got == {i: 2 if i % 2 == 0 else 1 for i in range(200)}

    routed = repartition_by_bucket(df, table, num_partitions=3)
    assert routed.rdd.getNumPartitions() == 3


def test_plain_write_of_a_bucket_from_two_tasks(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.orders", ORDERS, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "1"})
    rows = _rows(range(20), dt_of=lambda i: "2024-01-01")
    df = spark.createDataFrame(rows, SPARK_ORDERS).repartition(2)  # both tasks hit bucket 0
    _writer(df, warehouse).save("db.orders")  # tasks take sequence slots (tests/spark/test_unrouted_pk_write.py)
    assert table.to_arrow().num_rows == 20
    assert len(_data_files(warehouse)) == 2

    # routed, one task per bucket: one file
    _writer(repartition_by_bucket(df, table), warehouse, "overwrite").save("db.orders")
    assert table.to_arrow().num_rows == 20
    assert len(table.plan()[0].files) == 1


def test_failed_task_leaves_no_snapshot_only_orphans(spark, catalog: Catalog, warehouse: str) -> None:
    catalog.create_table("db.orders", ORDERS, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2"})
    # id is NOT NULL in the table: the task holding the null fails, the other one succeeds
    rows = [(None if i == 7 else i, "2024-01-01", 1, None, None, None) for i in range(10)]
    df = spark.createDataFrame(rows, SPARK_ORDERS).coalesce(1).union(
        spark.createDataFrame(_rows(range(100, 110)), SPARK_ORDERS).coalesce(1))
    with pytest.raises((Py4JJavaError, PySparkException), match="NOT NULL"):
        write_table(df, warehouse, "db.orders")
    table = catalog.get_table("db.orders")
    assert table.latest_snapshot() is None
    # Spark's abort gets None for tasks that finished before the job failed: their files are
    # orphans, which orphan removal deletes
    table.remove_orphan_files(older_than=dt.timedelta(0), dry_run=False, allow_recent=True)
    assert _data_files(warehouse) == []


def test_overwrite_whole_table_and_dynamic_partitions(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.orders", ORDERS, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2"})
    write_table(spark.createDataFrame(_rows(range(30)), SPARK_ORDERS), warehouse, "db.orders")

    def counts() -> dict[str, int]:
        out: dict[str, int] = {}
        for r in table.to_arrow().to_pylist():
            out[r["dt"]] = out.get(r["dt"], 0) + 1
        return out

    assert counts() == {"2024-01-01": 10, "2024-01-02": 10, "2024-01-03": 10}
    day2 = spark.createDataFrame(_rows(range(1000, 1003), dt_of=lambda i: "2024-01-02"), SPARK_ORDERS)
    # dynamic through the plain writer's option (one task: one writer per bucket): only 2024-01-02
    _writer(day2.coalesce(1), warehouse, "overwrite").option("partitionOverwriteMode", "dynamic").save("db.orders")
    assert counts() == {"2024-01-01": 10, "2024-01-02": 3, "2024-01-03": 10}
    assert table.latest_snapshot().commit_kind == CommitKind.OVERWRITE

    # dynamic through write_table, which reads the session conf
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        day3 = spark.createDataFrame(_rows(range(2000, 2001), dt_of=lambda i: "2024-01-03"), SPARK_ORDERS)
        write_table(day3, warehouse, "db.orders", mode="overwrite")
        assert counts() == {"2024-01-01": 10, "2024-01-02": 3, "2024-01-03": 1}
        empty = spark.createDataFrame([], SPARK_ORDERS)
        write_table(empty, warehouse, "db.orders", mode="overwrite")  # no partitions: nothing replaced
        assert counts() == {"2024-01-01": 10, "2024-01-02": 3, "2024-01-03": 1}
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")

    # a static partition: replaced even by no rows; rows outside it fail the write
    write_table(empty, warehouse, "db.orders", mode="overwrite", overwrite_partitions={"dt": "2024-01-03"})
    assert counts() == {"2024-01-01": 10, "2024-01-02": 3}
    before = table.latest_snapshot().id
    with pytest.raises((Py4JJavaError, PySparkException), match="outside the overwritten one"):
        write_table(day2, warehouse, "db.orders", mode="overwrite", overwrite_partitions={"dt": "2024-01-01"})
    assert table.latest_snapshot().id == before

    # whole table (static mode, the default)
    write_table(day2, warehouse, "db.orders", mode="overwrite")
    assert counts() == {"2024-01-02": 3}
    _writer(spark.createDataFrame([], SPARK_ORDERS), warehouse, "overwrite").save("db.orders")
    assert counts() == {}


def test_storage_options_reach_the_catalog(spark, tmp_path: Path) -> None:
    # fsspec's local filesystem takes auto_mkdir: a boolean passed as text through Spark options
    warehouse = f"file://{tmp_path}/wh"
    catalog = Catalog(warehouse, auto_mkdir=True)
    catalog.create_database("db")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    df = spark.createDataFrame([(1,), (2,)], "id long")
    write_table(df, warehouse, "db.t", storage_options={"auto_mkdir": True})
    back = (spark.read.format("lake").option("warehouse", warehouse).option("storage.auto_mkdir", "true")
            .load("db.t"))
    assert sorted(r.id for r in back.collect()) == [1, 2] == sorted(table.to_arrow().column("id").to_pylist())


@pytest.mark.interop
def test_pypaimon_reads_what_spark_wrote(spark, catalog: Catalog, warehouse: str) -> None:
    from tests.interop.paimon import Pypaimon, canonical, missing

    driver = Pypaimon()
    if not driver.available():
        missing(f"pypaimon venv not found ({driver.python})")
    table = catalog.create_table("db.orders", ORDERS, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "3"})
    write_table(spark.createDataFrame(_rows(range(60)), SPARK_ORDERS).repartition(4), warehouse, "db.orders")
    write_table(spark.createDataFrame(_rows(range(0, 60, 3), qty=9), SPARK_ORDERS), warehouse, "db.orders")
    got = driver.read(warehouse, "db.orders")
    assert canonical(got, ["id"]) == canonical(table.to_arrow(), ["id"])
    assert sum(r["qty"] == 9 for r in got.to_pylist()) == 20
