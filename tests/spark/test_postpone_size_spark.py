"""Spark batch writes into real buckets of a postpone table size a new partition by the bytes its
rows take as postpone files, as Paimon HEAD measures its staged postpone files
(ops/postpone_size.py): `write_table` scales its per-partition aggregate of value widths by what
a sample of the input encodes to, and ``df.write`` of unrouted input measures its staged rows."""

from __future__ import annotations

import pytest

from lake_assets import Catalog, Table
from lake_assets.spark import write_table
from lake_assets.table_support import Op
from tests.unit.test_postpone_size import SCHEMA, batch, postponed_sizes

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def counts(t: Table) -> set[int]:
    t = t.refresh()
    return {e.total_buckets for e in t.store.file_store_scan(Op.COMPACT).live_entries(t.snapshot_manager.latest())}


def test_new_partition_is_sized_by_postpone_file_bytes(spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    data = batch(30_000)
    probe = cat.create_table("db.probe", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2"})
    staged = sum(postponed_sizes(probe, data))  # what HEAD's staged postpone files store
    target = int(staged * 0.6)  # HEAD: ceil(1.67) = 2 buckets; Arrow's 2x size would say 4
    assert -(-data.nbytes // target) > 2
    # the input in key order, in 2 slices: HEAD's tasks would stage 2 files of sorted rows (a
    # shuffled input compresses worse, in HEAD's staged files as in our measure)
    df = spark.createDataFrame(data.to_pandas())
    for name, write in (("db.wt", lambda: write_table(df, wh, "db.wt")),
                        ("db.dw", lambda: df.write.format("lake").mode("append").option("warehouse", wh)
                         .save("db.dw"))):
        t = cat.create_table(name, SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "postpone.target-size-per-bucket": str(target)})
        write()
        assert counts(t) == {2}, name
        assert t.refresh().to_arrow().num_rows == 30_000
