"""Rescale: rewrite partitions of a postpone-bucket table's real buckets into a new bucket count.

Paimon HEAD's Spark batch writer (``SparkPostponeStagedCommitter.commit``, ``rewriteRealBuckets``
and ``commitRescale``) rescales a partition before writing a batch that needs more than
``postpone.batch-write-fixed-bucket.rescale-load-factor`` times its buckets
(`lake_assets.ops.postpone_batch.decide_bucket_num`). What it does, and `rescale_partitions` with it:

* it reads the partitions' **real buckets only** as of the snapshot the decision was made on
  (``onlyReadRealBuckets`` of that snapshot), each bucket merged as a batch read merges it (the
  merge engine applied, deleted keys dropped, each row with its merged row kind);
* it writes the rows into the new count through a fixed-bucket writer that ignores the previous
  files (``withIgnorePreviousFiles``): write-only level-0 files, sequence numbers from 0 in each
  new bucket, ``_TOTAL_BUCKETS`` = the new count, no changelog (HEAD's ``rescaleWriteBuilder``
  copies the table with ``changelog-producer = none``: an ``input`` table's rewrite writes no
  changelog file, its rows are the partition as it was, not a change; `_rewrite_store`);
* it commits them as one OVERWRITE snapshot of exactly those partitions
  (``withOverwriteStaticPartitions``) on a table copy with a positive ``bucket``, so the overwrite
  deletes the partitions' real-bucket files only: rows waiting in ``bucket-postpone`` stay and
  are merged by a later postpone compaction after the rescaled rows, as before;
* the commit runs in strict mode from that snapshot (``commit.strict-mode.last-safe-snapshot``,
  ``StrictModeChecker``): it fails when another commit user landed, on one of the partitions, a
  COMPACT or OVERWRITE snapshot, or an APPEND snapshot adding real-bucket files - rows the
  rewrite did not read and the overwrite would delete. A concurrent writer into
  ``bucket-postpone`` is no conflict (the overwrite keeps those files). The check runs on every
  retry of the commit (`lake_assets.ops.overwrite.Overwrite.check`), so no snapshot can slip in
  between the check and the commit.

The batch itself is written afterwards, in its own APPEND snapshot, into the new count. With
deletion vectors, batch reads skip level-0 files, so (as in HEAD) the rescaled partition reads
empty until a compaction, as every batch write into real buckets of such a table does.
Memory is bounded: the buckets are read by the streaming merge (``read.batch-size`` rows per
step) and written by the rolling, spilling writer (``write-buffer-size``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lake_assets.errors import CommitConflictError, LakeError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.merge_reader import merge_sorted
from lake_assets.lsm.run_partition import chained, split_into_runs
from lake_assets.ops import deletion_vectors
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.overwrite import Overwrite
from lake_assets.ops.postpone_batch import BatchBucketOptions, StagedPartition, bucket_metadata, decide_bucket_num
from lake_assets.ops.postpone_table import is_postpone_table
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split
from lake_assets.ops.streaming_read import stream_bounds
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from lake_assets.store.file_store import FileStore
from lake_assets.table_support import Op

__all__ = ["rescale_partitions", "rescale_written", "strict_mode_check"]


def rescale_partitions(
    store: FileStore,
    counts: Mapping[bytes, int],
    *,
    base: Snapshot | None = None,
    commit_user: str | None = None,
) -> int | None:
    """Rewrite the real buckets of each partition in ``counts`` (serialized partition row → new
    bucket count) as of ``base`` (default: the latest snapshot; the snapshot the counts were
    decided on) into that many buckets, committed as one OVERWRITE snapshot of those partitions
    (see the module doc); its id, or None when ``counts`` is empty or nothing was replaced.

    Raises `CommitConflictError` (nothing committed, the new files deleted) when another writer
    changed a partition's real buckets after ``base``."""
    from lake_assets.ops.postpone_fixed_bucket import PostponeFixedBucketWriter  # it imports this module

    if not counts:
        return None
    store.require(Op.WRITE)
    if not is_postpone_table(store):
        raise LakeError(f"Cannot rescale {store.name}: it is not a postpone-bucket table")
    bad = sorted(n for n in counts.values() if not isinstance(n, int) or n <= 0)
    if bad:
        raise LakeError(f"Cannot rescale {store.name}: bucket counts must be positive, got {bad}")
    snap = store.snapshot_manager.latest() if base is None else base
    if snap is None:
        raise LakeError(f"Cannot rescale {store.name}: the table has no snapshot")
    user = commit_user or f"rescale-{uuid.uuid4()}"
    wanted = set(counts)
    types = store.schema.types(list(store.schema.partition_keys))

    def in_rescale(values: tuple[Any, ...]) -> bool:
        return serialize_row(list(values), types) in wanted

    # the files are checked as a write reads them (a read-only refusal such as
    # postpone.merge-on-read does not apply: the rewrite reads real buckets only, as HEAD)
    scan = store.file_store_scan(Op.WRITE, real_buckets_only=True)
    splits = deletion_vectors.attach(store, snap, scan.splits(scan.live_entries(snap, partition_filter=in_rescale)))
    reader = SplitReader(store, store.schema)
    reader.snapshot_id = snap.id
    batch_rows = stream_bounds(store.schema.core_options)[0]
    columns = list(store.schema.field_names)
    with PostponeFixedBucketWriter(_rewrite_store(store), user, counts, ignore_previous_files=True) as writer:
        for split in splits:
            for part in reader.stream_split(split, batch_rows, with_kind=True):
                if part.num_rows:
                    kinds = np.asarray(part.column(VALUE_KIND).to_numpy(), dtype=np.int8)
                    writer.write_arrow(part.select(columns), kinds=kinds)
        messages = writer.prepare_commit()
    overwrite = Overwrite(in_rescale, real_buckets_only=True,
                          check=strict_mode_check(store, snap.id, user, wanted))
    # HEAD commits the rewrite through `tableForPostponeRewrite`, a copy with write-only = false: its
    # commit runs the commit-time lifecycle (automatic tags, tag and partition expiry) even on a
    # write-only table, whose batch commit after it does not
    ids = TableCommitter(store, user, write_only=False).commit(
        messages, BATCH_COMMIT_IDENTIFIER, overwrite=overwrite, check_committed=False)
    return ids[-1] if ids else None


def _rewrite_store(store: FileStore) -> FileStore:
    """``store`` as the rewrite writes through it: the same table and schema with
    ``changelog-producer = none`` (HEAD: ``fixedWriteTable.copy(changelog-producer -> none)``), so
    an ``input`` table's writer writes no changelog files (nor keeps its buffer from spilling)."""
    if store.schema.core_options.changelog_producer == "none":
        return store
    schema = store.schema.with_options({**store.schema.options, "changelog-producer": "none"})
    copy = FileStore(store.name, store.file_io, store.paths.root, schema, branch=store.paths.branch)
    copy.pin_schema(schema)  # the files are written under this schema id, whatever lands meanwhile
    copy.fault_hook = store.fault_hook
    return copy


def strict_mode_check(store: FileStore, last_safe: int, commit_user: str,
                      partitions: set[bytes]) -> Callable[[Snapshot | None], None]:
    """Paimon's ``StrictModeChecker`` for an OVERWRITE of ``partitions`` (serialized) planned on
    snapshot ``last_safe``: a check of the snapshot the commit is about to follow that raises
    `CommitConflictError` when a snapshot after ``last_safe`` by another commit user is a COMPACT
    or OVERWRITE with data or index files of those partitions, or an APPEND with real-bucket files
    of them."""

    def check(latest: Snapshot | None) -> None:
        if latest is None:
            return
        sm = store.snapshot_manager
        scan = store.file_store_scan()
        for sid in range(last_safe + 1, latest.id + 1):
            snap = sm.snapshot(sid)
            if snap.commit_user == commit_user:
                continue
            if snap.commit_kind in (CommitKind.COMPACT, CommitKind.OVERWRITE):
                hit = (any(e.partition in partitions for e in scan.delta_entries(snap))
                       or _index_changed(store, snap, partitions))
            elif snap.commit_kind == CommitKind.APPEND:
                hit = any(e.partition in partitions and e.bucket >= 0 for e in scan.delta_entries(snap))
            else:
                hit = False
            if hit:
                values = ", ".join(str(scan.partition_values(p)) for p in sorted(partitions))
                raise CommitConflictError(
                    f"Cannot rescale {store.name}: snapshot {sid} ({snap.commit_kind.name} by {snap.commit_user}) "
                    f"changed the real buckets of partition(s) {values} after snapshot {last_safe} the rescale "
                    "read; giving up rather than overwrite rows it did not read")

    return check


def _index_changed(store: FileStore, snap: Snapshot, partitions: set[bytes]) -> bool:
    """Whether ``snap`` may have changed index files (deletion vectors) of ``partitions``: its
    index manifest differs from its parent's and lists one of them (``StrictModeChecker
    .hasOverlappedIndexPartition``; a compaction that only adds deletion vectors deletes rows
    the rewrite would otherwise bring back)."""
    if not snap.index_manifest:
        return False
    parent = store.snapshot_manager.try_snapshot(snap.id - 1)
    if parent is not None and parent.index_manifest == snap.index_manifest:
        return False
    return any(e.partition in partitions for e in store.index_entries(snap.index_manifest))


def rescale_written(store: FileStore, commit_user: str, messages: Sequence[CommitMessage],
                    opts: BatchBucketOptions) -> list[CommitMessage]:
    """For uncommitted ``messages`` that wrote partitions into their recorded counts before the
    batch was measured (a Spark ``df.write`` of unrouted input): measure each partition's new
    real-bucket files (rows, stored bytes: HEAD measures its staged files' stored size) and, where
    HEAD rescales (`decide_bucket_num`), rescale the partitions (`rescale_partitions` as
    ``commit_user``, one OVERWRITE snapshot), then replay their written files into the new count
    and delete them. Returns the messages to commit (the others unchanged, the replayed ones
    new); ``messages`` as they are when nothing needs a rescale.

    The replay keeps what the batch says: each old bucket's files are merged as sorted runs
    (`merge_sorted`, bounded memory) without collapsing versions, and each key range is written
    in sequence order, so every key's versions reach the new writer in the order they were
    numbered (the writer numbers them after the rescaled rows)."""
    from lake_assets.ops.postpone_fixed_bucket import PostponeFixedBucketWriter  # it imports this module

    written: dict[bytes, StagedPartition] = {}
    for m in messages:
        if m.bucket >= 0 and m.new_files:
            s = written.get(m.partition, StagedPartition(0, 0))
            written[m.partition] = StagedPartition(s.rows + sum(f.row_count for f in m.new_files),
                                                   s.nbytes + sum(f.file_size for f in m.new_files))
    meta = bucket_metadata(store)
    counts = {p: d.buckets for p, s in written.items()
              if p in meta.bucket_counts and (d := decide_bucket_num(s, meta.bucket_counts[p], opts)).requires_rescale}
    if not counts:
        return list(messages)
    base = None if meta.snapshot_id is None else store.snapshot_manager.snapshot(meta.snapshot_id)
    rescale_partitions(store, counts, base=base, commit_user=commit_user)
    replayed = [m for m in messages if m.partition in counts and m.bucket >= 0]
    reader = SplitReader(store, store.schema)
    batch_rows = stream_bounds(store.schema.core_options)[0]
    columns = list(store.schema.field_names)
    scan = store.file_store_scan()
    by_bucket: dict[tuple[bytes, int], list[CommitMessage]] = {}
    for m in replayed:
        by_bucket.setdefault((m.partition, m.bucket), []).append(m)
    with PostponeFixedBucketWriter(store, commit_user, counts) as writer:
        for (partition, bucket), ms in by_bucket.items():
            split = Split(partition, scan.partition_values(partition), bucket, ms[0].total_buckets,
                          [f for m in ms for f in m.new_files])
            for part in _in_sequence_order(reader, split, columns, batch_rows):
                writer.write_arrow(part.select(columns),
                                   kinds=np.asarray(part.column(VALUE_KIND).to_numpy(), dtype=np.int8))
        new = writer.prepare_commit()
    store.file_io.delete_many([p for m in replayed for f in m.all_written_files()
                               for p in store.written_file_paths(m.partition, m.bucket, f)])
    return [m for m in messages if not (m.partition in counts and m.bucket >= 0)] + new


def _in_sequence_order(reader: SplitReader, split: Split, columns: list[str], batch_rows: int) -> Iterator[pa.Table]:
    """Every row of ``split``'s files (none collapsed), in key ranges that hold all versions of
    their keys, each range sorted by sequence number."""

    def open_file(meta: DataFileMeta) -> Iterator[pa.Table]:
        return reader.iter_file(split, meta, True, columns, batch_rows)

    runs = [chained(run, open_file) for run in split_into_runs(split.files, reader.key_types)]
    for chunk in merge_sorted(runs, reader.key_names, lambda c: c.sort_by([(SEQUENCE_NUMBER, "ascending")]),
                              min_rows=batch_rows, max_step_rows=batch_rows):
        if chunk.num_rows:
            yield chunk
