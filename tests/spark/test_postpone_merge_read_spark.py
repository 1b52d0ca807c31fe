"""``postpone.merge-on-read = true`` through Spark: the ``lake`` source (and `read_table`, which
then reads everything through it) merges each partition's waiting rows in one task per partition
and reads what the core's merge-on-read reads, which is what a plain read returns once the
postpone compaction has moved the rows (tests/unit/test_postpone_merge_read.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.spark import read_table
from lake_assets.spark.reader import PostponeMergePartition, SplitPartition, plan_read
from lake_assets.spark.source_options import SourceOptions

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REPO = Path(__file__).resolve().parents[2]
ORDERS = pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64()), ("op", pa.string())])


def _orders(ids: list[int], dt: str, amount: float, op: str = "+I") -> pa.Table:
    return pa.table({"order_id": ids, "dt": [dt] * len(ids), "amount": [amount + i for i in ids],
                     "op": [op] * len(ids)}, schema=ORDERS)


def _rows(data: pa.Table) -> list[tuple]:
    return sorted(zip(*(data.column(c).to_pylist() for c in ("dt", "order_id", "amount")), strict=True))


def _spark_rows(df) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted((r["dt"], r["order_id"], r["amount"]) for r in df.select("dt", "order_id", "amount").collect())


def test_spark_reads_merge_the_waiting_rows(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table: Table = cat.create_table("db.orders", ORDERS, primary_keys=["order_id", "dt"], partition_keys=["dt"],
                                    options={"bucket": "-2", "postpone.default-bucket-num": "2",
                                             "rowkind.field": "op", "postpone.merge-on-read": "true"})
    table.write_arrow(_orders(list(range(0, 40)), "d1", 0.0))
    table.compact()  # d1 has real buckets
    table.write_arrow(_orders(list(range(20, 60)), "d1", 100.0))  # updates and new keys, waiting
    table.write_arrow(_orders(list(range(0, 10)), "d1", 0.0, "-D"))  # deletes, waiting
    table.write_arrow(_orders(list(range(5, 15)), "d2", 7.0))  # a partition without real buckets
    table = table.refresh()
    merged = _rows(table.to_arrow())
    assert len(merged) == 50 + 10 and ("d1", 5, 5.0) not in merged and ("d1", 30, 130.0) in merged

    opts = SourceOptions.parse({"path": "db.orders", "warehouse": wh})
    parts = plan_read(table, opts)
    assert sorted(p.unit.partition_values for p in parts if isinstance(p, PostponeMergePartition)) == [("d1",), ("d2",)]
    assert not [p for p in parts if isinstance(p, SplitPartition)]

    df = spark.read.format("lake").option("warehouse", wh).load("db.orders")
    assert _spark_rows(df) == merged
    filtered = spark.read.format("lake").option("warehouse", wh).option(
        "filter", '[["amount", "<", 110.0]]').load("db.orders")
    assert _spark_rows(filtered) == [r for r in merged if r[2] < 110.0]
    assert _spark_rows(read_table(spark, wh, "db.orders")) == merged

    # the oracle: a compacted copy read plainly
    shutil.copytree(Path(wh) / "db.db" / "orders", Path(wh) / "db.db" / "copy")
    copy = cat.get_table("db.copy")
    copy.compact()
    assert _rows(copy.to_arrow()) == merged

    # the Spark workers that read ran this worktree's code
    where = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()[0]
    assert where.startswith(str(REPO)), where
