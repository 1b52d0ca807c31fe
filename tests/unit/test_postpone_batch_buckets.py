"""The bucket counts a batch write into real buckets of a postpone table would use
(ops/postpone_batch.py, Paimon's ``postpone.batch-write-fixed-bucket``): known partitions keep the
count their files record, new ones get ``postpone.default-bucket-num`` or an estimate measured on
the staged batch; which batch writes go to real buckets; one count per partition."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitConflictError, CorruptMetadataError
from lake_assets.ops import commit as commit_module
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.postpone_batch import (
    BucketMetadata,
    StagedPartition,
    batch_write_fixed_bucket,
    bucket_metadata,
    fixed_bucket_batch_writes,
    plan_batch_buckets,
)
from lake_assets.ops.postpone_fixed_bucket import PostponeFixedBucketWriter, write_fixed_buckets
from lake_assets.spec.binary_row import serialize_row
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def make(catalog: Catalog, **options: str) -> Table:
    return catalog.create_table("db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "-2", **options})


def rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [str(i) for i in ids]}, schema=SCHEMA)


def part(t: Table, dt: str) -> bytes:
    return serialize_row([dt], t.store.schema.types(["dt"]))


def test_known_partitions_keep_their_recorded_count_new_ones_get_the_default(catalog: Catalog):
    t = make(catalog, **{"postpone.default-bucket-num": "3"})
    t.write_arrow(rows(list(range(20)), "d1"))
    # postponed rows record no count yet
    assert bucket_metadata(t.store) == BucketMetadata({}, {part(t, "d1"): 20})
    t.compact()
    assert bucket_metadata(t.store) == BucketMetadata({part(t, "d1"): 3}, {})
    # the table's default changes later: d1 keeps its 3 buckets (its keys stay where they are)
    t.update_schema().set_option("postpone.default-bucket-num", "5").commit()
    t = catalog.get_table("db.p")
    staged = {part(t, "d1"): StagedPartition(10, 100), part(t, "d2"): StagedPartition(10, 100)}
    assert plan_batch_buckets(t.store, staged) == {part(t, "d1"): 3, part(t, "d2"): 5}


def test_new_partitions_are_estimated_on_the_staged_batch(catalog: Catalog):
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "100"})
    staged = {b"a": StagedPartition(250, 1), b"b": StagedPartition(100, 1), b"c": StagedPartition(0, 0)}
    meta = BucketMetadata({b"b": 7}, {})
    assert plan_batch_buckets(t.store, staged, meta) == {b"a": 3, b"b": 7, b"c": 1}
    t2 = catalog.create_table("db.s", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "-2", "postpone.target-size-per-bucket": "1 kb"})
    assert plan_batch_buckets(t2.store, {b"a": StagedPartition(1, 4097)}, BucketMetadata({}, {})) == {b"a": 5}


def test_rows_already_postponed_in_a_new_partition_count_as_pypaimon_counts_them(catalog: Catalog):
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "100"})
    # 150 staged + 100 waiting in bucket-postpone: 250 rows, 3 buckets
    assert plan_batch_buckets(t.store, {b"a": StagedPartition(150, 1)}, BucketMetadata({}, {b"a": 100})) == {b"a": 3}
    t2 = catalog.create_table("db.s", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "-2", "postpone.target-size-per-bucket": "1 kb"})
    # 10 staged rows of 512 bytes scale to 20 rows: 1024 bytes fit one bucket, 1025 need two
    assert plan_batch_buckets(t2.store, {b"a": StagedPartition(10, 512)}, BucketMetadata({}, {b"a": 10})) == {b"a": 1}
    assert plan_batch_buckets(t2.store, {b"a": StagedPartition(10, 513)}, BucketMetadata({}, {b"a": 10})) == {b"a": 2}


def test_estimates_are_capped_the_default_bucket_num_is_not(catalog: Catalog):
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "1",
                         "postpone.batch-write-fixed-bucket.max-parallelism": "4"})
    assert plan_batch_buckets(t.store, {b"a": StagedPartition(10, 1)}, BucketMetadata({}, {})) == {b"a": 4}
    t2 = catalog.create_table("db.d", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "-2", "postpone.default-bucket-num": "9",
                                       "postpone.batch-write-fixed-bucket.max-parallelism": "4"})
    assert plan_batch_buckets(t2.store, {b"a": StagedPartition(10, 1)}, BucketMetadata({}, {})) == {b"a": 9}


def test_option_defaults_to_true_as_in_paimon(catalog: Catalog):
    assert batch_write_fixed_bucket(make(catalog).store)
    t = catalog.create_table("db.f", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "postpone.batch-write-fixed-bucket": "false"})
    assert not batch_write_fixed_bucket(t.store)


@pytest.mark.parametrize(("value", "fixed"), [(None, True), ("true", True), ("false", False)])
def test_batch_writes_go_to_real_buckets_unless_false(catalog: Catalog, value: str | None, fixed: bool):
    opts = {} if value is None else {"postpone.batch-write-fixed-bucket": value}
    t = make(catalog, **opts)
    assert fixed_bucket_batch_writes(t.store) is fixed
    t.write_arrow(rows([1, 2], "d1"))  # the core writer postpones, as pypaimon's batch writer does
    assert t.to_arrow().num_rows == 0


def test_a_second_count_for_a_partition_fails_the_commit(catalog: Catalog):
    """Paimon commits batch writes into real buckets with appendCommitCheckConflict: a writer that
    planned another count for a partition (from an older snapshot) fails, nothing lands."""
    t = make(catalog, **{"postpone.default-bucket-num": "2"})
    late = PostponeFixedBucketWriter(t.store, "late", {part(t, "d1"): 3})  # planned before d1 had buckets
    write_fixed_buckets(t.store, rows([1, 2, 3], "d1"))
    late.write_arrow(rows([4], "d1"))
    messages = late.prepare_commit()
    before = t.snapshot_manager.latest_id()
    with pytest.raises(CommitConflictError, match=r"total buckets of partition \('d1',\) changed \(\[2, 3\]\)"):
        TableCommitter(t.store, "late").commit(messages)
    assert t.snapshot_manager.latest_id() == before
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 2, 3]


def test_partition_with_two_recorded_counts_is_refused_by_name(catalog: Catalog, monkeypatch: pytest.MonkeyPatch):
    """Java's PostponeUtils.getKnownNumBuckets throws on a partition whose files record different
    totalBuckets (pypaimon's planner too): the batch planner and the postpone compaction name the
    table and the partition instead of keeping whichever count came last."""
    t = make(catalog, **{"postpone.default-bucket-num": "2"})
    write_fixed_buckets(t.store, rows([1, 2, 3], "d1"))
    # a writer without the append conflict check (what lake_assets had before) leaves both counts
    monkeypatch.setattr(commit_module, "_adds_real_buckets_of_postpone_table", lambda store, delta: False)
    with PostponeFixedBucketWriter(t.store, "other", {part(t, "d1"): 3}) as w:
        w.write_arrow(rows([4], "d1"))
        TableCommitter(t.store, "other").commit(w.prepare_commit())
    monkeypatch.undo()
    t.write_arrow(rows([5], "d1"))  # postponed: the compaction has to plan d1
    with pytest.raises(CorruptMetadataError, match=r"db\.p: partition \{'dt': 'd1'\} has files recording "
                                                   r"different bucket counts"):
        bucket_metadata(t.store)
    with pytest.raises(CorruptMetadataError, match=r"db\.p: partition \{'dt': 'd1'\}"):
        t.compact()
