"""Rescaling a postpone table's partitions before a batch that outgrows them (ops/rescale.py), as
Paimon HEAD's SparkPostponeStagedCommitter does: the partition's real buckets, merged, rewritten
into the new count in an OVERWRITE snapshot that keeps bucket-postpone, then the batch in an
APPEND snapshot; a concurrent change of the partition's real buckets fails the rescale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitConflictError
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.postpone_batch import BucketMetadata, RescaleRefusedError, bucket_metadata, plan_batch_buckets
from lake_assets.ops.postpone_batch import StagedPartition as Staged
from lake_assets.ops.postpone_fixed_bucket import PostponeFixedBucketWriter, write_fixed_buckets
from lake_assets.ops.rescale import rescale_partitions
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.snapshot import CommitKind
from lake_assets.table import Table
from lake_assets.table_support import Op

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
DELETE = 3  # RowKind -D


def make(catalog: Catalog, **options: str) -> Table:
    return catalog.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                options={"bucket": "-2", "postpone.default-bucket-num": "1",
                                         "postpone.target-row-num-per-bucket": "1", **options})


def rows(ks: list[int] | range, dt: str, v: str) -> pa.Table:
    ks = list(ks)
    return pa.table({"k": ks, "dt": [dt] * len(ks), "v": [f"{v}{k}" for k in ks]}, schema=SCHEMA)


def part(t: Table, dt: str) -> bytes:
    return serialize_row([dt], t.store.schema.types(["dt"]))


def live(t: Table) -> list:
    snap = t.snapshot_manager.latest()
    assert snap is not None
    return t.store.file_store_scan(Op.COMPACT).live_entries(snap)


def values(t: Table) -> dict[tuple[int, str], str]:
    data = t.refresh().to_arrow()
    return {(k, d): v for k, d, v in zip(*(data.column(c).to_pylist() for c in ("k", "dt", "v")), strict=True)}


def delete(t: Table, ks: list[int], dt: str) -> None:
    """Delete keys of ``dt`` in its real buckets (its recorded count, one APPEND)."""
    store = t.refresh().store
    with PostponeFixedBucketWriter(store, "deleter", bucket_metadata(store).bucket_counts) as w:
        w.write_arrow(rows(ks, dt, "x"), kinds=np.full(len(ks), DELETE, dtype=np.int8))
        messages = w.prepare_commit()
    TableCommitter(store, "deleter").commit(messages, check_committed=False)


def test_a_batch_that_outgrows_a_partition_rescales_it_first_as_paimon_head(catalog: Catalog):
    t = make(catalog)
    write_fixed_buckets(t.store, rows(range(6), "d1", "a"))       # d1: 1 bucket (default count)
    write_fixed_buckets(t.refresh().store, rows(range(3), "d2", "a"))
    write_fixed_buckets(t.refresh().store, rows([1, 2], "d1", "b"))  # two runs in d1's bucket
    delete(t, [3], "d1")
    t.refresh().write_arrow(rows([4, 100], "d1", "p"))           # waits in bucket-postpone
    before = t.snapshot_manager.latest_id()
    assert before is not None
    d2_files = {e.file.file_name for e in live(t.refresh()) if e.partition == part(t, "d2")}

    # 40 rows need 40 buckets > 32 x 1: d1 is rescaled to 64 buckets, then the batch lands
    write_fixed_buckets(t.refresh().store, rows(range(10, 50), "d1", "c"))
    t = t.refresh()
    rescale, batch = t.snapshot_manager.snapshot(before + 1), t.snapshot_manager.snapshot(before + 2)
    assert (rescale.commit_kind, batch.commit_kind) == (CommitKind.OVERWRITE, CommitKind.APPEND)
    assert t.snapshot_manager.latest_id() == before + 2
    assert bucket_metadata(t.store) == BucketMetadata({part(t, "d1"): 64, part(t, "d2"): 1})

    # the rescale's files: the merged rows (no deleted key), level 0, sequence numbers from 0 in
    # every new bucket, _TOTAL_BUCKETS 64; the postponed files and d2 untouched
    rescaled = [e for e in t.store.file_store_scan(Op.COMPACT).delta_entries(rescale) if e.kind.name == "ADD"]
    assert {e.total_buckets for e in rescaled} == {64}
    assert {e.file.level for e in rescaled} == {0}
    assert {e.file.min_sequence_number for e in rescaled} == {0}
    assert sum(e.file.row_count for e in rescaled) == 5                 # keys 0, 1, 2, 4, 5
    after = live(t)
    assert sum(e.file.row_count for e in after if e.bucket == -2) == 2
    assert {e.file.file_name for e in after if e.partition == part(t, "d2")} == d2_files
    expected = {**{(k, "d1"): f"a{k}" for k in (0, 4, 5)}, (1, "d1"): "b1", (2, "d1"): "b2",
                **{(k, "d1"): f"c{k}" for k in range(10, 50)}, **{(k, "d2"): f"a{k}" for k in range(3)}}
    assert values(t) == expected

    # the postpone compaction merges the waiting rows into the rescaled buckets, after them
    t.compact()
    assert values(t) == {**expected, (4, "d1"): "p4", (100, "d1"): "p100"}
    assert bucket_metadata(t.refresh().store) == BucketMetadata({part(t, "d1"): 64, part(t, "d2"): 1})


def test_rescale_off_refuses_by_name_and_changes_nothing(catalog: Catalog):
    t = make(catalog)
    write_fixed_buckets(t.store, rows([1, 2], "d1", "a"))
    t = t.refresh()
    before = t.snapshot_manager.latest_id()
    with pytest.raises(RescaleRefusedError, match=r"db\.p.*partition \{'dt': 'd1'\}: 1 buckets, the batch "
                                                  r"\(40 rows.*needs 64.*rescale-load-factor = 32"):
        plan_batch_buckets(t.store, {part(t, "d1"): Staged(40, 1)}, rescale=False)
    assert t.snapshot_manager.latest_id() == before
    # up to 32 times the count is written into the recorded bucket, without a rescale
    write_fixed_buckets(t.store, rows(range(32), "d1", "a"))
    assert bucket_metadata(t.refresh().store) == BucketMetadata({part(t, "d1"): 1})
    assert t.refresh().snapshot_manager.latest().commit_kind == CommitKind.APPEND


def test_a_concurrent_real_bucket_write_fails_the_rescale_a_postponed_one_does_not(catalog: Catalog, warehouse: str):
    """Paimon's strict mode from the snapshot the rescale read: another user's APPEND into real
    buckets of the partition (rows the rewrite never read) must not be overwritten."""
    t = make(catalog)
    write_fixed_buckets(t.store, rows(range(4), "d1", "a"))
    base = t.refresh().snapshot_manager.latest()
    assert base is not None
    # a postponed write after the base is no conflict: the overwrite keeps bucket-postpone
    t.refresh().write_arrow(rows([7], "d1", "p"))
    rescale_partitions(t.refresh().store, {part(t, "d1"): 4}, base=base)
    t = t.refresh()
    assert bucket_metadata(t.store) == BucketMetadata({part(t, "d1"): 4})
    assert values(t) == {(k, "d1"): f"a{k}" for k in range(4)}

    base = t.snapshot_manager.latest()
    write_fixed_buckets(t.store, rows([9], "d1", "w"))            # a real-bucket APPEND after base
    t = t.refresh()
    latest = t.snapshot_manager.latest_id()
    files_before = sorted(p.name for p in Path(warehouse).rglob("data-*"))
    with pytest.raises(CommitConflictError, match=r"Cannot rescale db\.p: snapshot \d+ \(APPEND by .*\) changed"):
        rescale_partitions(t.store, {part(t, "d1"): 8}, base=base)
    assert t.snapshot_manager.latest_id() == latest
    files_after = sorted(p.name for p in Path(warehouse).rglob("data-*"))
    assert files_after == files_before                               # the rescale's files were removed
    assert values(t)[(9, "d1")] == "w9"


def test_a_concurrent_postpone_compaction_fails_the_rescale(catalog: Catalog):
    """The compaction moves postponed rows into the partition's real buckets after the snapshot
    the rescale read: an overwrite would delete them, so the rescale gives up."""
    t = make(catalog)
    write_fixed_buckets(t.store, rows(range(4), "d1", "a"))
    base = t.refresh().snapshot_manager.latest()
    t.refresh().write_arrow(rows([8], "d1", "p"))
    t.refresh().compact()
    with pytest.raises(CommitConflictError, match=r"snapshot \d+ \(COMPACT by"):
        rescale_partitions(t.refresh().store, {part(t, "d1"): 4}, base=base)
    assert values(t)[(8, "d1")] == "p8"
    assert bucket_metadata(t.refresh().store) == BucketMetadata({part(t, "d1"): 1})


def test_deletion_vector_table_rescaled_rows_are_back_after_the_compaction(catalog: Catalog):
    """With deletion vectors, HEAD's rescale writes level-0 files as every batch write into real
    buckets does, which batch reads skip until a compaction; the compaction brings the merged rows
    back in the new count."""
    t = make(catalog, **{"deletion-vectors.enabled": "true"})
    write_fixed_buckets(t.store, rows(range(5), "d1", "a"))
    write_fixed_buckets(t.refresh().store, rows([1, 2], "d1", "b"))
    t.refresh().compact(full=True)
    assert len(values(t)) == 5
    write_fixed_buckets(t.refresh().store, rows(range(10, 50), "d1", "c"))
    assert bucket_metadata(t.refresh().store) == BucketMetadata({part(t, "d1"): 64})
    assert values(t) == {}                                  # level 0 only, as in Paimon
    t.refresh().compact()
    assert values(t) == {(0, "d1"): "a0", (1, "d1"): "b1", (2, "d1"): "b2", (3, "d1"): "a3", (4, "d1"): "a4",
                         **{(k, "d1"): f"c{k}" for k in range(10, 50)}}


def _two_tasks_unmeasured(catalog: Catalog, name: str, **options: str) -> tuple[Table, list[CommitKind], set[str]]:
    """Two tasks write d1 and d2 into their recorded counts (interleaved sequence numbers, a key
    in both, a delete), as the unrouted df.write does; its commit step `rescale_written`, then the
    commit. The table, the kinds of the new snapshots, d1's written file names."""
    from lake_assets.ops.postpone_batch import BatchBucketOptions
    from lake_assets.ops.rescale import rescale_written

    t = catalog.create_table(name, SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "postpone.default-bucket-num": "1",
                                      "postpone.target-row-num-per-bucket": "1", **options})
    write_fixed_buckets(t.store, rows(range(6), "d1", "a"))
    write_fixed_buckets(t.refresh().store, rows(range(3), "d2", "a"))
    store = t.refresh().store
    counts = bucket_metadata(store).bucket_counts
    messages = []
    for slot, (ks, tag) in enumerate([(list(range(1, 41)), "x"), (list(range(2, 42)), "y")]):
        with PostponeFixedBucketWriter(store, "job", counts) as w:
            w.interleave_sequences(slot, 2)
            w.write_arrow(rows(ks, "d1", tag))
            if slot == 1:
                w.write_arrow(rows([5], "d1", "z"), kinds=np.full(1, DELETE, dtype=np.int8))
            w.write_arrow(rows([0], "d2", tag))
            messages += w.prepare_commit()
    d1 = {f.file_name for m in messages if m.partition == part(t, "d1") for f in m.new_files}
    before = t.snapshot_manager.latest_id()
    final = rescale_written(store, "job", messages, BatchBucketOptions.of(store))
    TableCommitter(store, "job").commit(final, check_committed=False)
    t = t.refresh()
    kinds = [t.snapshot_manager.snapshot(i).commit_kind for i in range(before + 1, t.snapshot_manager.latest_id() + 1)]
    return t, kinds, d1


def test_rows_written_unmeasured_into_the_old_count_are_replayed_after_the_rescale(catalog: Catalog):
    """The Spark data source's unrouted df.write: tasks write known partitions into their recorded
    count before anything measures the batch; its commit (rescale_written) rescales where HEAD
    would and replays the written rows into the new count, so that every key ends as it would
    have without the rescale (two tasks' interleaved sequence numbers, a delete), and deletes the
    written files."""
    plain, plain_kinds, _ = _two_tasks_unmeasured(catalog, "db.plain",
                                                  **{"postpone.batch-write-fixed-bucket.rescale-load-factor": "1000"})
    assert plain_kinds == [CommitKind.APPEND]
    t, kinds, d1_files = _two_tasks_unmeasured(catalog, "db.p")
    assert kinds == [CommitKind.OVERWRITE, CommitKind.APPEND]
    assert bucket_metadata(t.store) == BucketMetadata({part(t, "d1"): 128, part(t, "d2"): 1})
    assert values(t) == values(plain)
    assert (5, "d1") not in values(t) and values(t)[(41, "d1")] == "y41"
    assert not {e.file.file_name for e in live(t)} & d1_files     # replayed, then deleted
    assert not [p for p in Path(t.store.bucket_dir(part(t, "d1"), 0)).iterdir() if p.name in d1_files]
