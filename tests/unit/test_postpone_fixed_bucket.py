"""Batch writes of a postpone table into real buckets (ops/postpone_fixed_bucket.py), as Paimon's
``postpone.batch-write-fixed-bucket`` sinks write them: write-only level-0 files of the planned
count, visible at once, sequence numbers after the bucket's; rows waiting in bucket-postpone are
left there and, as in Paimon, supersede them at the postpone compaction."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.postpone_fixed_bucket import PostponeFixedBucketWriter, resolve_staged, write_fixed_buckets
from lake_assets.spec.snapshot import CommitKind
from lake_assets.table import Table
from lake_assets.table_support import Op

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def make(catalog: Catalog, **options: str) -> Table:
    return catalog.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                options={"bucket": "-2", **options})


def rows(ks: list[int], dt: str, v: str) -> pa.Table:
    return pa.table({"k": ks, "dt": [dt] * len(ks), "v": [f"{v}{k}" for k in ks]}, schema=SCHEMA)


def entries(t: Table) -> list:
    snap = t.snapshot_manager.latest()
    assert snap is not None
    return t.store.file_store_scan(Op.COMPACT).live_entries(snap)


def values(t: Table) -> dict[tuple[int, str], str]:
    out = t.to_arrow().to_pylist()
    return {(r["k"], r["dt"]): r["v"] for r in out}


def test_rows_land_in_planned_real_buckets_visible_at_once(catalog: Catalog):
    t = make(catalog, **{"postpone.default-bucket-num": "3"})
    sid = write_fixed_buckets(t.store, rows(list(range(12)), "d1", "a"))
    snap = t.snapshot_manager.snapshot(sid)
    assert snap.commit_kind == CommitKind.APPEND
    es = entries(t)
    assert {e.total_buckets for e in es} == {3}
    assert all(e.file.level == 0 for e in es)  # write-only: no inline compaction
    # each bucket holds the keys Paimon's fixed-bucket hash gives it among 3
    expect = assign_buckets([pa.array(list(range(12)), pa.int64())], t.schema.types(["k"]), 3)
    want: dict[int, int] = {}
    for b in expect:
        want[int(b)] = want.get(int(b), 0) + 1
    assert {e.bucket: e.file.row_count for e in es} == want
    assert values(t) == {(k, "d1"): f"a{k}" for k in range(12)}


def test_existing_partition_keeps_its_count_sequence_numbers_continue(catalog: Catalog):
    t = make(catalog, **{"postpone.default-bucket-num": "2"})
    write_fixed_buckets(t.store, rows([1, 2, 3], "d1", "a"))
    first = {e.bucket: e.file.max_sequence_number for e in entries(t)}
    t.update_schema().set_option("postpone.default-bucket-num", "5").commit()
    t = catalog.get_table("db.p")
    write_fixed_buckets(t.store, rows([1, 2, 3], "d1", "b"))
    write_fixed_buckets(t.store, rows([7], "d2", "b"))
    es = entries(t)
    assert {e.total_buckets for e in es if e.partition == es[0].partition} == {2}
    assert {e.total_buckets for e in es if e.file.row_count and e.bucket >= 0} == {2, 5}
    for e in es:
        if e.bucket in first and e.file.min_sequence_number > first[e.bucket]:
            break
    else:
        raise AssertionError("the second write did not number after the bucket's files")
    assert values(t)[(1, "d1")] == "b1"


def test_postponed_rows_supersede_a_later_batch_write_at_compaction_as_in_paimon(catalog: Catalog):
    """Paimon's PostponeBucketTableITCase.testWritePostponeBucketThenWriteFixedBucket: rows
    postponed first, then a batch write into real buckets: readers see the batch write at once;
    the postpone compaction then replays the postponed rows after what the buckets hold, so the
    postponed (older) values are the ones left."""
    t = make(catalog)
    t.write_arrow(rows(list(range(1, 9)), "d1", "a"))  # postponed
    assert t.to_arrow().num_rows == 0
    write_fixed_buckets(t.store, rows(list(range(1, 17)), "d1", "B"))
    assert values(t) == {(k, "d1"): f"B{k}" for k in range(1, 17)}
    t.compact()
    want = {(k, "d1"): (f"a{k}" if k <= 8 else f"B{k}") for k in range(1, 17)}
    assert values(t) == want
    assert {e.bucket for e in entries(t)} == {0}  # the partition keeps the batch write's count


def test_staged_partitions_are_planned_on_the_whole_batch_then_written(catalog: Catalog, tmp_path):
    """Two writers (Spark tasks of unrouted input) stage a new partition they have no count for;
    `resolve_staged` plans it on both writers' rows together, writes real buckets in writer order
    and deletes the staged files, which no snapshot ever names."""
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "10"})
    staged = []
    for n, (ks, tag) in enumerate(((range(0, 8), "a"), (range(4, 12), "b"))):
        w = PostponeFixedBucketWriter(t.store, "job", {}, stage_unplanned=True)
        w.interleave_sequences(n, 2)
        w.write_arrow(rows(list(ks), "d1", tag))
        staged += w.prepare_commit()
        w.close()
    assert {m.bucket for m in staged} == {-2}
    paths = [t.store.data_file_path(m.partition, m.bucket, f) for m in staged for f in m.new_files]
    assert all(t.store.file_io.exists(p) for p in paths)
    messages = resolve_staged(t.store, "job", staged)
    assert not any(t.store.file_io.exists(p) for p in paths)
    assert {m.total_buckets for m in messages} == {2}  # 16 rows over 10 per bucket, not 8 of one writer
    TableCommitter(t.store, "job").commit(messages)
    assert values(t) == {(k, "d1"): (f"a{k}" if k < 4 else f"b{k}") for k in range(12)}


def test_a_failed_resolve_leaves_no_file(catalog: Catalog):
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "10"})
    w = PostponeFixedBucketWriter(t.store, "job", {}, stage_unplanned=True)
    w.write_arrow(rows(list(range(5)), "d1", "a"))
    w.write_arrow(rows(list(range(5)), "d2", "a"))
    staged = w.prepare_commit()
    # one staged file vanished (a lost task's cleanup): the resolve fails, writes nothing lasting
    gone = staged[-1]
    t.store.file_io.delete_many([t.store.data_file_path(gone.partition, gone.bucket, f) for f in gone.new_files])
    with pytest.raises(Exception, match=gone.new_files[0].file_name):
        resolve_staged(t.store, "job", staged)
    assert [p for p in Path(t.store.paths.root).rglob("bucket-*/*")] == []


def test_staged_rows_wait_in_parquet_files_which_no_snapshot_names(catalog: Catalog):
    """Staged files are never committed (`resolve_staged` reads and deletes them), so they are
    Parquet, not the Avro of Paimon's postpone files: fastavro's row-by-row encoding and decoding
    was most of a big unrouted write's commit."""
    t = make(catalog, **{"postpone.target-row-num-per-bucket": "10"})
    t.write_arrow(rows([1], "d0", "p"))  # a committed postpone file stays Avro, as Java writes it
    assert [e.file.file_name.rsplit(".", 1)[1] for e in entries(t)] == ["avro"]
    with PostponeFixedBucketWriter(t.store, "job", {}, stage_unplanned=True) as w:
        w.write_arrow(rows(list(range(12)), "d1", "a"))
        staged = w.prepare_commit()
    assert {f.file_name.rsplit(".", 1)[1] for m in staged for f in m.new_files} == {"parquet"}
    messages = resolve_staged(t.store, "job", staged)
    assert {m.total_buckets for m in messages} == {2}
    TableCommitter(t.store, "job").commit(messages)
    assert values(t) == {(k, "d1"): f"a{k}" for k in range(12)}
