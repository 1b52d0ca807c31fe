"""Dynamic-bucket tables (``bucket = -1``) through Spark: the ingest job and `write_table` send the
rows to one task, whose writer runs the table's one assigner; a write by several tasks is refused."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, Table
from lake_assets.spark import repartition_by_bucket, write_table
from lake_assets.spark.jobs import ingest
from lake_assets.spark.jobs.errors import EXIT_OK
from tests.spark.test_jobs_common import run_job_main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ORDERS = pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])


def _table(wh: str) -> Table:
    cat = Catalog(wh)
    cat.create_database("db")
    return cat.create_table("db.orders", ORDERS, primary_keys=["order_id", "dt"], partition_keys=["dt"],
                            options={"bucket": "-1", "dynamic-bucket.target-row-num": "20"})


def _orders(ids: range, amount: float) -> pa.Table:
    ids = list(ids)
    return pa.table({"order_id": ids, "dt": [f"2024-01-0{1 + i % 2}" for i in ids],
                     "amount": [amount + i for i in ids]}, schema=ORDERS)


def _keys_once(table: Table) -> list[int]:
    ids = table.to_arrow().column("order_id").to_pylist()
    assert len(ids) == len(set(ids)), "a key is in two buckets"
    return sorted(ids)


def test_ingest_job_writes_a_dynamic_bucket_table_through_one_assigner(capsys, spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    table = _table(wh)
    land = tmp_path / "land"
    land.mkdir()
    # several input files: Spark reads them in several tasks, the job routes all rows to one writer
    for n, start in enumerate(range(0, 120, 30)):
        pq.write_table(_orders(range(start, start + 30), 0.0), land / f"part-{n}.parquet")
    code, out = run_job_main(capsys, ingest.main, "--warehouse", wh, "--table", "db.orders",
                             "--source", str(land), "--format", "parquet")
    assert code == EXIT_OK, out
    assert _keys_once(table) == list(range(120))
    assert len({s.bucket for s in table.plan()}) >= 3  # 60 keys per partition, 20 per bucket
    # updates of existing keys and new keys in a second run: existing keys stay in their buckets
    for p in land.iterdir():
        p.unlink()
    for n, start in enumerate(range(100, 160, 20)):
        pq.write_table(_orders(range(start, start + 20), 1000.0), land / f"again-{n}.parquet")
    code, out = run_job_main(capsys, ingest.main, "--warehouse", wh, "--table", "db.orders",
                             "--source", str(land), "--format", "parquet")
    assert code == EXIT_OK, out
    table = table.refresh()
    assert _keys_once(table) == list(range(160))
    amounts = dict(zip(*[table.to_arrow().column(c).to_pylist() for c in ("order_id", "amount")], strict=True))
    assert amounts[99] == 99.0 and amounts[100] == 1100.0


def test_write_table_routes_to_one_task_and_plain_multi_task_writes_are_refused(spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    table = _table(wh)
    df = spark.createDataFrame(_orders(range(80), 0.0).to_pandas()).repartition(4)
    write_table(df, wh, "db.orders")
    assert _keys_once(table) == list(range(80))
    before = [s.id for s in table.snapshots()]
    # df.write on its own has four tasks, each with an assigner of its own: refused, nothing committed
    many = spark.createDataFrame(_orders(range(60, 140), 5.0).to_pandas()).repartition(4)
    # (Spark wraps the Python data source's error; the message is ours)
    with pytest.raises(Exception, match="Paimon supports one writer per dynamic-bucket table"):
        many.write.format("lake").mode("append").option("warehouse", wh).save("db.orders")
    table = table.refresh()
    assert [s.id for s in table.snapshots()] == before
    assert _keys_once(table) == list(range(80))


def test_streaming_ingest_of_a_dynamic_bucket_table(capsys, spark, tmp_path) -> None:
    """The streaming sink: each micro-batch is routed to one writer and committed once."""
    wh = str(tmp_path / "wh")
    table = _table(wh)
    land = tmp_path / "land"
    land.mkdir()
    args = ["--warehouse", wh, "--table", "db.orders", "--source", str(land), "--format", "parquet",
            "--mode", "stream", "--trigger", "availableNow", "--checkpoint", str(tmp_path / "ck")]
    for n, start in enumerate(range(0, 90, 30)):
        pq.write_table(_orders(range(start, start + 30), 0.0), land / f"a-{n}.parquet")
    code, out = run_job_main(capsys, ingest.main, *args)
    assert code == EXIT_OK, out
    for n, start in enumerate(range(60, 120, 30)):
        pq.write_table(_orders(range(start, start + 30), 500.0), land / f"b-{n}.parquet")
    code, out = run_job_main(capsys, ingest.main, *args)
    assert code == EXIT_OK, out
    table = table.refresh()
    assert _keys_once(table) == list(range(120))
    assert len({s.bucket for s in table.plan()}) >= 3


def test_overwrite_of_a_dynamic_bucket_table_replaces_the_rows_and_their_index(spark, tmp_path) -> None:
    """An overwrite starts from empty buckets, as the core's overwrite does: the writer must not
    assign buckets from the hash index the commit drops (that raised a bogus conflict)."""
    wh = str(tmp_path / "wh")
    table = _table(wh)
    write_table(spark.createDataFrame(_orders(range(80), 0.0).to_pandas()), wh, "db.orders")
    # whole table
    write_table(spark.createDataFrame(_orders(range(40, 100), 7.0).to_pandas()), wh, "db.orders", mode="overwrite")
    table = table.refresh()
    assert _keys_once(table) == list(range(40, 100))
    assert set(table.to_arrow().column("amount").to_pylist()) == {7.0 + i for i in range(40, 100)}
    # one partition (dynamic): the other partition keeps its rows and its index
    again = _orders(range(200, 230), 9.0).filter(pa.compute.equal(_orders(range(200, 230), 9.0).column("dt"),
                                                                   "2024-01-01"))
    write_table(spark.createDataFrame(again.to_pandas()), wh, "db.orders", mode="overwrite", dynamic=True)
    table = table.refresh()
    rows = table.to_arrow()
    by_dt = {d: sorted(i for i, dd in zip(rows.column("order_id").to_pylist(), rows.column("dt").to_pylist(),
                                            strict=True) if dd == d) for d in ("2024-01-01", "2024-01-02")}
    assert by_dt["2024-01-01"] == list(range(200, 230, 2))
    assert by_dt["2024-01-02"] == list(range(41, 100, 2))
    # new keys after the overwrite still find one bucket each, next to the kept index
    write_table(spark.createDataFrame(_orders(range(90, 130), 3.0).to_pandas()), wh, "db.orders")
    assert _keys_once(table.refresh()) == sorted(set(range(200, 230, 2)) | set(range(41, 100, 2)) |
                                                 set(range(90, 130)))


def test_write_table_upserts_a_cross_partition_table_in_one_task(spark, tmp_path) -> None:
    """A cross-partition upsert table (primary key order_id, partitioned by dt): `write_table`
    sends the rows to one task, whose writer bootstraps the key index from the table and moves
    keys whose date changed (deduplicate: retracted in the old partition). The Spark worker
    imports this checkout (PYTHONPATH reaches it)."""
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.cdc", ORDERS, primary_keys=["order_id"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "20"})
    table.write_arrow(_orders(range(60), 0.0))
    moved = _orders(range(40, 80), 500.0)
    moved = moved.set_column(1, "dt", pa.array(["2024-01-09"] * moved.num_rows))
    write_table(spark.createDataFrame(moved.to_pandas()).repartition(3), wh, "db.cdc")
    got = table.refresh().to_arrow()
    assert _keys_once(table) == list(range(80))
    dates = dict(zip(got.column("order_id").to_pylist(), got.column("dt").to_pylist(), strict=True))
    assert {dates[i] for i in range(40, 80)} == {"2024-01-09"} and dates[0] == "2024-01-01"
    snap = table.snapshot_manager.latest()
    assert snap is not None and snap.index_manifest is None  # no HASH files in this mode, as Java
    worker_path = spark.sparkContext.parallelize([0], 1).map(
        lambda _: __import__("lake_assets").__file__).collect()[0]
    assert worker_path.startswith(str(Path(__file__).resolve().parents[2]))


def test_spark_writes_of_a_cross_partition_table_go_through_one_key_index(capsys, spark, tmp_path) -> None:
    """A cross-partition upsert table (primary key order_id, partitioned by dt): `df.write` by
    three tasks (three key indexes, each moving keys on its own) is refused by name, nothing
    committed; through `repartition_by_bucket` (one task) it moves the keys; the streaming ingest
    job routes each micro-batch to one writer, whose index is read from the table, so keys moved
    by the first run move again in the second, each key once."""
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.cdc", ORDERS, primary_keys=["order_id"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "20"})
    table.write_arrow(_orders(range(60), 0.0))
    before = [s.id for s in table.snapshots()]
    moved = _orders(range(30, 90), 500.0)
    moved = moved.set_column(1, "dt", pa.array(["2024-01-09"] * moved.num_rows))
    many = spark.createDataFrame(moved.to_pandas()).repartition(3)
    with pytest.raises(Exception, match="tasks wrote this cross-partition upsert table"):
        many.write.format("lake").mode("append").option("warehouse", wh).save("db.cdc")
    assert [s.id for s in table.refresh().snapshots()] == before
    repartition_by_bucket(many, table).write.format("lake").mode("append").option("warehouse", wh).save("db.cdc")
    got = table.refresh().to_arrow()
    assert _keys_once(table) == list(range(90))
    dates = dict(zip(got.column("order_id").to_pylist(), got.column("dt").to_pylist(), strict=True))
    assert {dates[i] for i in range(30, 90)} == {"2024-01-09"} and dates[0] == "2024-01-01"
    land = tmp_path / "land"
    land.mkdir()
    args = ["--warehouse", wh, "--table", "db.cdc", "--source", str(land), "--format", "parquet",
            "--mode", "stream", "--trigger", "availableNow", "--checkpoint", str(tmp_path / "ck")]
    for n, start in enumerate(range(0, 120, 40)):
        pq.write_table(_orders(range(start, start + 40), 900.0), land / f"a-{n}.parquet")  # back to 01-01/02
    code, out = run_job_main(capsys, ingest.main, *args)
    assert code == EXIT_OK, out
    got = table.refresh().to_arrow()
    assert _keys_once(table) == list(range(120))
    dates = dict(zip(got.column("order_id").to_pylist(), got.column("dt").to_pylist(), strict=True))
    assert all(dates[i] == f"2024-01-0{1 + i % 2}" for i in range(120))
