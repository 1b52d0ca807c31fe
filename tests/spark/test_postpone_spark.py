"""Postpone-bucket tables (``bucket = -2``) through Spark: the streaming sink (whatever
``postpone.batch-write-fixed-bucket`` says, as Paimon's) and batch writes with that option false
write each task's rows into bucket-postpone files of its own, without routing; the postpone
compaction then moves them into real buckets. Batch writes into real buckets (the option true or
unset): test_postpone_batch_spark.py."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, Table
from lake_assets.spark import write_table

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ORDERS = pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])


def _table(wh: str, **options: str) -> Table:
    cat = Catalog(wh)
    cat.create_database("db")
    return cat.create_table("db.orders", ORDERS, primary_keys=["order_id", "dt"], partition_keys=["dt"],
                            options={"bucket": "-2", "postpone.default-bucket-num": "2", **options})


def _orders(ids: range, amount: float) -> pa.Table:
    ids = list(ids)
    return pa.table({"order_id": ids, "dt": [f"2024-01-0{1 + i % 2}" for i in ids],
                     "amount": [amount + i for i in ids]}, schema=ORDERS)


def _writers(table: Table) -> set[str]:
    entries = table.store.file_store_scan().live_entries(table.store.snapshot_manager.latest())
    return {e.file.file_name.split("-w-")[0] for e in entries if e.bucket == -2}


def _amounts(table: Table) -> dict[int, float]:
    data = table.to_arrow()
    return dict(zip(data.column("order_id").to_pylist(), data.column("amount").to_pylist(), strict=True))


def test_batch_writes_go_to_bucket_postpone_per_task_then_compact(spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    table = _table(wh, **{"postpone.batch-write-fixed-bucket": "false"})
    df = spark.createDataFrame(_orders(range(80), 0.0).to_pandas()).repartition(4)
    df.write.format("lake").mode("append").option("warehouse", wh).save("db.orders")
    table = table.refresh()
    assert len(table.snapshots()) == 1 and table.to_arrow().num_rows == 0  # postponed
    assert len(_writers(table)) == 4  # each task wrote its own files, nothing was routed
    # write_table does not route a postpone table either; updates of half the keys
    write_table(spark.createDataFrame(_orders(range(40, 120), 1000.0).to_pandas()).repartition(3), wh, "db.orders")
    table = table.refresh()
    assert len(_writers(table)) == 7
    table.compact()
    table = table.refresh()
    amounts = _amounts(table)
    assert sorted(amounts) == list(range(120))
    assert amounts[39] == 39.0 and amounts[40] == 1040.0
    assert {s.bucket for s in table.plan()} == {0, 1}


def test_streaming_sink_writes_bucket_postpone_then_compact(spark, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    table = _table(wh)
    landing = tmp_path / "landing"
    landing.mkdir()
    for n, (ids, amount) in enumerate([(range(0, 30), 0.0), (range(20, 50), 100.0), (range(45, 60), 200.0)]):
        pq.write_table(_orders(ids, amount), landing / f"part-{n}.parquet")
        # Spark's file source takes files oldest first by millisecond modification time: files
        # written in the same millisecond would come in any order, and the batches with them
        os.utime(landing / f"part-{n}.parquet", (1_700_000_000 + n, 1_700_000_000 + n))
    df = (spark.readStream.schema("order_id long, dt string, amount double")
          .option("maxFilesPerTrigger", 1).parquet(str(landing)))
    query = (df.writeStream.format("lake").option("warehouse", wh)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start("db.orders"))
    try:
        query.awaitTermination(120)
    finally:
        query.stop()
    table = table.refresh()
    assert len(table.snapshots()) == 3 and table.to_arrow().num_rows == 0
    table.compact()
    amounts = _amounts(table.refresh())
    assert sorted(amounts) == list(range(60))
    assert (amounts[19], amounts[20], amounts[44], amounts[45]) == (19.0, 120.0, 144.0, 245.0)
