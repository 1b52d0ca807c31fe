"""A table writer's per-bucket state: the rows it buffers, and what it starts from.

`BucketBuffer` holds one (partition, bucket)'s buffered rows, spilled runs and files written
since the last commit; `WriterBase` is what the writer restores from the latest snapshot when it
first buffers rows (Paimon's "scan" init mode): each bucket's highest sequence number, live files
and deletion-vector index files, which the writer's inline compaction (`compact_inline`) keeps
current across commits; `bucket_file_writer` makes each bucket's file writers.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_assets.formats.data_file import DataFileWriter, DataFileWriterConfig
from lake_assets.ops import deletion_vectors
from lake_assets.ops.bucket_count import partition_bucket_counts
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.spill import SpillRun
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import DataFileMeta, IndexManifestEntry
from lake_assets.spec.partition import partition_path
from lake_assets.spec.snapshot import Snapshot
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.spec.schema import TableSchema
    from lake_assets.store.file_store import FileStore

BucketKey = tuple[bytes, int]  # (serialized partition, bucket)


@dataclass
class BucketBuffer:
    """One bucket's buffered rows (routed slices, each in merge order) and what it wrote."""

    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    next_sequence: int
    tables: list[pa.Table] = field(default_factory=list)
    nbytes: int = 0
    new_files: list[DataFileMeta] = field(default_factory=list)
    new_changelog: list[DataFileMeta] = field(default_factory=list)
    writer: DataFileWriter | None = None
    changelog_writer: DataFileWriter | None = None
    runs: list[SpillRun] = field(default_factory=list)  # spilled since the last prepare_commit, oldest first


@dataclass
class WriterBase:
    """The snapshot a writer started from and, per bucket, its state in that snapshot."""

    snapshot: Snapshot | None
    max_sequences: dict[BucketKey, int]  # -1 for a bucket without files
    live_files: dict[BucketKey, list[DataFileMeta]]
    live_dv: dict[BucketKey, tuple[IndexManifestEntry, ...]]
    # each partition's bucket count as its live files record it (none with ignore_previous_files)
    bucket_counts: dict[bytes, int] = field(default_factory=dict)
    # APPEND/OVERWRITE snapshots since the newest COMPACT one up to ``snapshot``: read once, not
    # once per bucket (`compact_inline`)
    commits_since_compaction: int | None = None

    @staticmethod
    def restore(store: FileStore, op: Op, ignore_previous_files: bool) -> WriterBase:
        """Read the latest snapshot. ``ignore_previous_files`` (overwrites): buckets start without
        their live files, but sequence numbers still continue from them."""
        return WriterBase.restore_at(store, op, ignore_previous_files, store.snapshot_manager.latest())

    @staticmethod
    def restore_at(store: FileStore, op: Op, ignore_previous_files: bool, snap: Snapshot | None) -> WriterBase:
        """`restore` from ``snap``, the latest snapshot as the caller just read it (None: none)."""
        base = WriterBase(snap, defaultdict(lambda: -1), {}, {})
        if snap is None:
            return base
        if not ignore_previous_files:
            base.live_dv = dict(deletion_vectors.snapshot_index(store, snap))
        entries = store.file_store_scan(op).live_entries(snap)
        if not ignore_previous_files:
            base.bucket_counts = partition_bucket_counts(entries)
        for e in entries:
            k = (e.partition, e.bucket)
            if not ignore_previous_files:
                base.live_files.setdefault(k, []).append(e.file)
            # sequence numbers never need to restart, and an overwrite that loses a race to a
            # newer commit is retried against it
            base.max_sequences[k] = max(base.max_sequences[k], e.file.max_sequence_number)
        return base


def compact_inline(store: FileStore, base: WriterBase, num_buckets: int, key: BucketKey, buf: BucketBuffer,
                   msg: CommitMessage, *, full: bool = False, spill_dir: str | None = None) -> CommitMessage:
    """Paimon writers without ``write-only`` compact their bucket when universal compaction says
    so (every file into the top level with ``full``): ``msg`` with the compaction added, and
    ``base`` updated to the bucket's files after it."""
    from lake_assets.ops.compact.plan import commits_since_last_compaction, plan_bucket
    from lake_assets.ops.compact.rewrite import run_compaction_task
    from lake_assets.ops.scan import Split

    files = [*base.live_files.get(key, []), *buf.new_files]
    split = Split(buf.partition, buf.partition_values, buf.bucket, num_buckets, files, base.live_dv.get(key, ()))
    if base.commits_since_compaction is None:  # buckets racing here compute the same number
        base.commits_since_compaction = commits_since_last_compaction(store, base.snapshot)
    commits = base.commits_since_compaction + 1
    task = plan_bucket(store, split, full=full, commits_since_full=None if full else commits)
    if task is None:
        base.live_files[key] = files
        return msg
    result = run_compaction_task(store, task, spill_dir=spill_dir)
    removed = {f.file_name for f in result.compact_before}
    base.live_files[key] = [f for f in files if f.file_name not in removed] + list(result.compact_after)
    if result.index_before or result.index_after:
        base.live_dv[key] = result.index_after
    # The unit's changelog (lookup; full-compaction) goes into the COMPACT snapshot as with a
    # dedicated compaction: Java's writer commits it there, and dropped it would be orphaned.
    return dataclasses.replace(msg, compact_before=result.compact_before, compact_after=result.compact_after,
                               compact_changelog=result.compact_changelog, index_before=result.index_before,
                               index_after=result.index_after)


def bucket_file_writer(store: FileStore, schema: TableSchema, buf: BucketBuffer, config: DataFileWriterConfig,
                       partition_types: list[DataType], *, changelog: bool = False) -> DataFileWriter:
    """The bucket's data (or, with ``changelog``, changelog) file writer, made at first use.
    ``schema`` is the writer's (fixed when it was made: ``store.schema`` may move on, see
    `FileStore.schema_at`); ``config`` its one config for every bucket (a round can touch
    hundreds)."""
    if changelog:
        if buf.changelog_writer is None:
            data_writer = bucket_file_writer(store, schema, buf, config, partition_types)
            # from the table's config, not the data writer's (whose codec a format option replaced)
            cfg = dataclasses.replace(config, prefix=schema.core_options.changelog_file_prefix, changelog=True)
            buf.changelog_writer = DataFileWriter(store.file_io, data_writer.bucket_dir, schema, cfg)
        return buf.changelog_writer
    if buf.writer is None:
        opts = schema.core_options
        ppath = partition_path(schema.partition_keys, buf.partition_values, partition_types,
                               opts.partition_default_name, legacy_name=opts.partition_legacy_name)
        buf.writer = DataFileWriter(store.file_io, store.paths.bucket_dir(ppath, buf.bucket), schema, config)
    return buf.writer


PendingMessage = tuple[BucketKey, BucketBuffer, CommitMessage]


def bucket_message(buf: BucketBuffer, total_buckets: int, compact_requested: bool) -> CommitMessage | None:
    """The bucket's message of the files it wrote since the last commit (None: none, and no
    compaction requested)."""
    if not (buf.new_files or buf.new_changelog or compact_requested):
        return None
    return CommitMessage(buf.partition, buf.bucket, total_buckets, new_files=tuple(buf.new_files),
                         new_changelog=tuple(buf.new_changelog))


def discard_compactions(store: FileStore, messages: Iterable[CommitMessage]) -> None:
    """Delete what the inline compactions of ``messages`` wrote (their new data, changelog and
    deletion-vector index files) for a commit that will not happen. Upgraded files keep their
    names and stay referenced: never deleted; the level-0 files are left to the writer's abort."""
    from lake_assets.ops.compact.rewrite import discard_outputs  # the compaction stack, as in compact_inline

    # their files' extra files (file indexes) too, as any unit's outputs
    discard_outputs(store, [dataclasses.replace(m, new_files=(), new_changelog=()) for m in messages])
