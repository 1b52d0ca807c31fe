"""Sequence numbers of a native write: planned on the driver above every number the table holds.

Paimon orders the versions of a key by sequence number within its bucket, and a writer numbers a
bucket's new rows above the bucket's highest number. The native write's Spark tasks cannot ask
the table per row, so the driver plans one base for the whole write - the highest number of any
live file of the latest snapshot, plus one - which is above every bucket's maximum; each task
numbers its rows from there (`native_write.native_frame`).

A commit landing between the planning and the native write's commit can put files with higher
numbers into a bucket the write also writes (the same race exists for any two writers of one
bucket; Paimon supports one writer per bucket). `check_sequence_bases` refuses the commit then,
nothing committed, instead of letting readers pick the older version of a key.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from lake_assets.ops.bucket_count import partition_bucket_counts
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spark.task_sequences import BucketWriterConflictError
from lake_assets.store.file_store import FileStore
from lake_assets.table_support import Op


@dataclass(frozen=True)
class WriteBase:
    """What a native write is planned on: the latest snapshot id (None: an empty table), the first
    sequence number of the write, and each partition's recorded bucket count (`native_buckets`)."""

    snapshot_id: int | None
    first_sequence: int
    bucket_counts: dict[bytes, int] = field(default_factory=dict)


def _live_state(store: FileStore, snapshot_id: int) -> tuple[dict[tuple[bytes, int], int], dict[bytes, int]]:
    """(the highest sequence number per bucket, the bucket count per partition) of a snapshot."""
    snap = store.snapshot_manager.snapshot(snapshot_id)
    entries = store.file_store_scan(Op.WRITE).live_entries(snap)
    out: dict[tuple[bytes, int], int] = defaultdict(lambda: -1)
    for e in entries:
        k = (e.partition, e.bucket)
        out[k] = max(out[k], e.file.max_sequence_number)
    return out, partition_bucket_counts(entries)


def plan_write_base(store: FileStore) -> WriteBase:
    """The `WriteBase` of a write planned on the latest snapshot (one read of its live files)."""
    latest = store.snapshot_manager.latest_id()
    if latest is None:
        return WriteBase(None, 0)
    highest, counts = _live_state(store, latest)
    return WriteBase(latest, max(highest.values(), default=-1) + 1, counts)


def sequence_base(store: FileStore) -> tuple[int | None, int]:
    """(the latest snapshot id, the first sequence number of a write planned on it)."""
    base = plan_write_base(store)
    return base.snapshot_id, base.first_sequence


def check_sequence_bases(store: FileStore, planned: int | None, messages: Sequence[CommitMessage]) -> None:
    """Refuse messages whose numbers do not lie above their bucket's in the latest snapshot (a
    commit landed after the write planned its base on snapshot ``planned``)."""
    latest = store.snapshot_manager.latest_id()
    if latest is None or latest == planned:
        return
    highest, counts = _live_state(store, latest)
    for m in messages:
        previous = counts.get(m.partition)
        if m.new_files and previous is not None and m.total_buckets > 0 and previous != m.total_buckets:
            # a commit that landed meanwhile left the partition at another count
            raise BucketWriterConflictError(
                f"Cannot commit to {store.name}: a commit landed while the native write ran and left a partition "
                f"at {previous} buckets, this write wrote {m.total_buckets}. Nothing was committed. Write again."
            )
        top = highest.get((m.partition, m.bucket), -1)
        low = min((f.min_sequence_number for f in m.new_files), default=top + 1)
        if low <= top:
            raise BucketWriterConflictError(
                f"Cannot commit to {store.name}: a commit landed while the native write ran and wrote bucket "
                f"{m.bucket} with sequence numbers up to {top}, at or above this write's {low}, so readers "
                "could keep an older version of a key. Nothing was committed. Write again."
            )
