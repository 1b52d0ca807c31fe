"""The bucket counts a batch write into real buckets of a postpone table would use
(ops/postpone_batch.py, Paimon's ``postpone.batch-write-fixed-bucket``): known partitions keep the
count their files record, new ones get ``postpone.default-bucket-num`` or an estimate measured on
the staged batch; which batch writes go to real buckets; one count per partition."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitConflictError, CorruptMetadataError, OptionError
from lake_assets.ops import commit_attempts
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.postpone_batch import (
    BatchBucketOptions,
    BucketMetadata,
    StagedPartition,
    batch_write_fixed_bucket,
    bucket_metadata,
    decide_bucket_num,
    fixed_bucket_batch_writes,
    plan_batch_buckets,
)
from lake_assets.ops.postpone_fixed_bucket import PostponeFixedBucketWriter, write_fixed_buckets
from lake_assets.spec.binary_row import serialize_row
from lake_assets.table import Table
from lake_assets.table_support import Op

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
    assert bucket_metadata(t.store) == BucketMetadata({})
    t.compact()
    assert bucket_metadata(t.store) == BucketMetadata({part(t, "d1"): 3})
    # the table's default changes later: d1 keeps its 3 buckets (its keys stay where they are)
    t.update_schema().set_option("postpone.default-bucket-num", "5").commit()
    t = catalog.get_table("db.p")
    staged = {part(t, "d1"): StagedPartition(10, 100), part(t, "d2"): StagedPartition(10, 100)}
    assert plan_batch_buckets(t.store, staged) == {part(t, "d1"): 3, part(t, "d2"): 5}


def test_new_partitions_are_estimated_on_the_staged_batch_rounded_up_to_a_power_of_two(catalog: Catalog):
    """Paimon HEAD's PostponeUtils.decideFixedBucketNum: ceil(rows / target), at least 1, rounded up
    to a power of two (pypaimon 2.1 and Paimon Spark 2.0.0 used the ceiling as it is)."""
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "100"})
    staged = {b"a": StagedPartition(250, 1), b"b": StagedPartition(100, 1), b"c": StagedPartition(0, 0),
              b"d": StagedPartition(501, 1), b"e": StagedPartition(101, 1)}
    meta = BucketMetadata({b"b": 7})
    assert plan_batch_buckets(t.store, staged, meta) == {b"a": 4, b"b": 7, b"c": 1, b"d": 8, b"e": 2}
    t2 = catalog.create_table("db.s", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "-2", "postpone.target-size-per-bucket": "1 kb"})
    # ceil(4097 / 1024) = 5 -> 8; exactly 4096 bytes -> 4
    assert plan_batch_buckets(t2.store, {b"a": StagedPartition(1, 4097)}, BucketMetadata({})) == {b"a": 8}
    assert plan_batch_buckets(t2.store, {b"a": StagedPartition(1, 4096)}, BucketMetadata({})) == {b"a": 4}


@pytest.mark.parametrize(("staged", "existing", "options", "expected"), [
    # (rows, bytes), recorded count, options -> (count, rescale)  [PostponeUtils.java:281-345]
    ((0, 0), None, {}, (1, False)),                                  # an empty batch still gets 1
    ((1, 1 << 30), None, {}, (1, False)),                            # 1 GiB: the default target size
    ((1, (1 << 30) + 1), None, {}, (2, False)),
    ((1, 3 * (1 << 30)), None, {}, (4, False)),
    ((30, 0), None, {"postpone.target-row-num-per-bucket": "10"}, (4, False)),   # 3 -> 4
    ((30, 10**12), None, {"postpone.target-row-num-per-bucket": "10"}, (4, False)),  # rows win over bytes
    ((3000, 0), None, {"postpone.target-row-num-per-bucket": "1",
                       "postpone.batch-write-fixed-bucket.max-parallelism": "100"}, (100, False)),
    ((70, 0), None, {"postpone.target-row-num-per-bucket": "1",
                     "postpone.batch-write-fixed-bucket.max-parallelism": "100"}, (100, False)),  # 128 capped
    ((60, 0), None, {"postpone.target-row-num-per-bucket": "1",
                     "postpone.batch-write-fixed-bucket.max-parallelism": "100"}, (64, False)),
    ((10**6, 0), None, {"postpone.default-bucket-num": "9",
                        "postpone.batch-write-fixed-bucket.max-parallelism": "4"}, (9, False)),  # exact, uncapped
    # an existing count is kept up to load factor x its count, then a rescale to the suggestion
    ((10**6, 0), 3, {"postpone.default-bucket-num": "9"}, (3, False)),
    ((96, 0), 3, {"postpone.target-row-num-per-bucket": "1"}, (3, False)),       # 96 = 3 x 32
    ((97, 0), 3, {"postpone.target-row-num-per-bucket": "1"}, (128, True)),
    ((97, 0), 3, {"postpone.target-row-num-per-bucket": "1",
                  "postpone.batch-write-fixed-bucket.rescale-load-factor": "64"}, (3, False)),
    # the cap leaves nothing larger to rescale to
    ((97, 0), 3, {"postpone.target-row-num-per-bucket": "1",
                  "postpone.batch-write-fixed-bucket.max-parallelism": "2"}, (3, False)),
])
def test_decision_follows_paimon_head(catalog: Catalog, staged, existing, options, expected):
    t = make(catalog, **options)
    d = decide_bucket_num(StagedPartition(*staged), existing, BatchBucketOptions.of(t.store))
    assert (d.buckets, d.requires_rescale) == expected


def test_rows_already_postponed_do_not_count_as_in_paimon_head(catalog: Catalog):
    """HEAD's decideFixedBucketNum measures the staged batch only ("Previously committed postpone
    files are intentionally excluded"); pypaimon 2.1 added them."""
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "10"})
    t.write_arrow(rows(list(range(100)), "d1"))  # 100 rows wait in bucket-postpone
    t = t.refresh()
    assert plan_batch_buckets(t.store, {part(t, "d1"): StagedPartition(15, 1)}) == {part(t, "d1"): 2}


def test_an_overwrite_ignores_the_recorded_count_as_paimon_head(catalog: Catalog):
    """HEAD's SparkPostponeStagedCommitter decides an overwritten partition as a new one:
    postpone.default-bucket-num, else the estimate on the batch."""
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "10"})
    write_fixed_buckets(t.store, rows(list(range(40)), "d1"))
    t = t.refresh()
    assert bucket_metadata(t.store) == BucketMetadata({part(t, "d1"): 4})
    staged = {part(t, "d1"): StagedPartition(5, 1)}
    assert plan_batch_buckets(t.store, staged) == {part(t, "d1"): 4}
    assert plan_batch_buckets(t.store, staged, overwrite=True) == {part(t, "d1"): 1}
    # overwriting never rescales: 1000 rows over 4 recorded buckets is simply a new layout
    assert plan_batch_buckets(t.store, {part(t, "d1"): StagedPartition(1000, 1)}, overwrite=True) == {
        part(t, "d1"): 128}
    t.update_schema().set_option("postpone.default-bucket-num", "3").commit()
    assert plan_batch_buckets(t.refresh().store, staged, overwrite=True) == {part(t, "d1"): 3}


def test_staged_rows_of_an_overwrite_are_planned_as_new_partitions(catalog: Catalog):
    """The Spark data source's staged path (resolve_staged) with overwrite: the replaced
    partition gets the estimate on the batch; the commit replaces the old files (postponed ones
    too) with files of the new count."""
    from lake_assets.ops.overwrite import overwrite_spec
    from lake_assets.ops.postpone_fixed_bucket import resolve_staged

    t = make(catalog, **{"postpone.target-row-num-per-bucket": "10"})
    write_fixed_buckets(t.store, rows(list(range(40)), "d1"))
    t.write_arrow(rows([100], "d1"))  # waits in bucket-postpone
    t = t.refresh()
    with PostponeFixedBucketWriter(t.store, "ow", {}, stage_unplanned=True, ignore_previous_files=True) as w:
        w.write_arrow(rows(list(range(12)), "d1"))
        staged = w.prepare_commit()
    resolved = resolve_staged(t.store, "ow", staged, overwrite=True)
    assert {m.total_buckets for m in resolved} == {2}
    TableCommitter(t.store, "ow").commit(resolved, overwrite=overwrite_spec(t.store, {"dt": "d1"}))
    t = t.refresh()
    assert bucket_metadata(t.store) == BucketMetadata({part(t, "d1"): 2})
    assert sorted(t.to_arrow()["id"].to_pylist()) == list(range(12))
    assert {e.bucket for e in t.store.file_store_scan(Op.COMPACT).live_entries(t.store.snapshot_manager.latest())
            } == {0, 1}  # the postponed row went with the overwrite


def test_a_write_overrides_the_tables_options(catalog: Catalog):
    """Paimon's Spark connector copies the table with the write's options and spark.paimon.* conf
    (dynamic options): the table's value stands where a write sets none."""
    t = make(catalog, **{"postpone.batch-write-fixed-bucket": "false", "postpone.default-bucket-num": "2"})
    assert not fixed_bucket_batch_writes(t.store)
    assert fixed_bucket_batch_writes(t.store, {"postpone.batch-write-fixed-bucket": "true"})
    opts = BatchBucketOptions.of(t.store, {"postpone.default-bucket-num": "6", "warehouse": "/elsewhere"})
    assert (opts.fixed_bucket, opts.default_bucket_num) == (False, 6)
    assert plan_batch_buckets(t.store, {b"a": StagedPartition(1, 1)}, BucketMetadata({}), options=opts) == {b"a": 6}
    with pytest.raises(OptionError, match=r"postpone\.batch-write-fixed-bucket.*'maybe'"):
        fixed_bucket_batch_writes(t.store, {"postpone.batch-write-fixed-bucket": "maybe"})
    with pytest.raises(OptionError, match=r"postpone\.default-bucket-num.*at least 1"):
        BatchBucketOptions.of(t.store, {"postpone.default-bucket-num": "0"})
    # a fixed-bucket table ignores the postpone switch, as Paimon's writers do
    fixed = catalog.create_table("db.f4", SCHEMA, primary_keys=["id", "dt"], options={"bucket": "4"})
    assert not fixed_bucket_batch_writes(fixed.store, {"postpone.batch-write-fixed-bucket": "true"})


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
    monkeypatch.setattr(commit_attempts, "_adds_real_buckets_of_postpone_table", lambda store, delta: False)
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
