"""Batch writes of a postpone-bucket table straight into real buckets (``postpone.batch-write-fixed-bucket``).

Paimon's Flink and Spark *batch* sinks (``PostponeFixedBucketSink``, ``PaimonSparkWriter``;
``postpone.batch-write-fixed-bucket``, default true) do not leave a postpone table's rows in
``bucket-postpone``: each partition is written as a fixed-bucket table of the partition's bucket
count (`lake_assets.ops.postpone_batch.plan_batch_buckets`), so readers see the rows at once.
What Paimon does, and this writer with it (``KeyValueFileStore.newPostponeFixedBucketWrite``):

* a regular merge-tree writer per bucket, ``write-only`` (no inline compaction): sorted, merged
  level-0 files whose sequence numbers continue from the bucket's live files;
* the commit messages record the partition's bucket count as ``totalBuckets``, and the APPEND
  commit checks conflicts (``appendCommitCheckConflict``: a concurrent writer that gave a new
  partition another count fails the commit, `lake_assets.ops.commit`);
* a partition the batch needs more than ``rescale-load-factor`` times its buckets for is first
  rescaled in an OVERWRITE snapshot (`lake_assets.ops.rescale`), then written into the new count;
* rows already waiting in ``bucket-postpone`` are left there. Paimon's postpone compaction later
  writes them through the bucket's writer after what the bucket holds, so they supersede these
  rows even when they are older (Paimon's ``PostponeBucketTableITCase
  .testWritePostponeBucketThenWriteFixedBucket`` pins that outcome; we do the same).

The level-0 files stay until a compaction; the postpone compaction compacts every real bucket
holding level-0 files (`lake_assets.ops.postpone.plan_postpone`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor

import numpy as np
import pyarrow as pa

from lake_assets.errors import LakeError, UnsupportedFeatureError
from lake_assets.ops import postpone_size
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.conform import as_table, conform, row_kinds
from lake_assets.ops.kept_pool import KeptThreadPool
from lake_assets.ops.postpone_batch import BatchBucketOptions, StagedPartition, bucket_metadata, plan_batch_buckets
from lake_assets.ops.postpone_files import read_postpone_file
from lake_assets.ops.postpone_table import is_postpone_table
from lake_assets.ops.postpone_write import PostponeWriter
from lake_assets.ops.route import PARALLEL_GATHER_ROWS, partition_groups
from lake_assets.ops.write import TableWriter
from lake_assets.ops.write_spill import WRITER_THREAD_NAME
from lake_assets.ops.writer_abort import split_landed
from lake_assets.ops.writer_state import WriterBase
from lake_assets.parallelism import usable_cpus
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import FileKind, ManifestEntry
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER
from lake_assets.store.file_store import FileStore
from lake_assets.table_support import POSTPONE_BUCKET, Op

# the format of the files rows of unplanned partitions are staged in (see `_stage_writer`)
STAGE_FORMAT = "parquet"
POSTPONE_REWRITE_THREAD_NAME = "lake-postpone-rewrite"  # a kept thread rewriting a staged partition


def staged_partitions(store: FileStore, data: pa.Table, *, measure_bytes: bool = True) -> dict[bytes, StagedPartition]:
    """What ``data`` (conformed to the table) holds per partition: rows, and the bytes they take
    as the table's postpone files (HEAD measures its staged postpone files, `postpone_file_bytes`),
    the input of `plan_batch_buckets`. ``measure_bytes=False``: rows only (bytes 0), for a
    decision that reads no bytes."""
    keys = list(store.schema.partition_keys)
    types = store.schema.types(keys)
    ids, values = partition_groups(data, keys)
    # one partition, or a batch small enough to encode whole: each partition measured itself;
    # else one sample of the batch gives the ratio that scales each partition's Arrow size
    ratio = (None if not measure_bytes or len(values) == 1 or data.num_rows <= postpone_size.SAMPLE_ROWS
             else postpone_size.postpone_bytes_per_arrow_byte(store, data))
    out: dict[bytes, StagedPartition] = {}
    for gid, pvals in enumerate(values):
        rows = data if len(values) == 1 else data.take(pa.array(np.flatnonzero(ids == gid)))
        if not measure_bytes:
            nbytes = 0
        elif ratio is None:
            nbytes = postpone_size.postpone_file_bytes(store, rows)
        else:
            nbytes = int(-(-rows.nbytes * ratio // 1))
        out[serialize_row(list(pvals), types)] = StagedPartition(rows.num_rows, nbytes)
    return out


class PostponeFixedBucketWriter:
    """Writes a postpone table's rows into real buckets, each partition with its planned bucket
    count; the two-phase interface of `TableWriter` (`write_arrow`, `prepare_commit`, `abort`,
    `close`).

    ``bucket_counts`` maps serialized partitions to their counts; a partition missing from it
    gets ``default_count`` when given (``postpone.default-bucket-num``). Else it raises, unless
    ``stage_unplanned``: then its rows go into uncommitted ``bucket-postpone`` files (a
    `PostponeWriter`'s messages, bucket -2), which `resolve_staged` writes into real buckets once
    every writer has finished and their size is known (the Spark data source's unrouted writes).

    Each batch is conformed to the table once, here; its parts go to the writers as they are. The
    writers of the different counts hold disjoint buckets and share one state of the latest
    snapshot (`WriterBase`), restored at the first write: the manifests are read once per writer,
    not once per bucket count."""

    def __init__(
        self,
        store: FileStore,
        commit_user: str,
        bucket_counts: Mapping[bytes, int],
        *,
        default_count: int | None = None,
        ignore_previous_files: bool = False,
        stage_unplanned: bool = False,
    ) -> None:
        store.require(Op.WRITE)
        if not is_postpone_table(store):
            raise UnsupportedFeatureError(
                f"Cannot write to {store.name} into planned real buckets: it is not a postpone-bucket table")
        bad = {n for n in (*bucket_counts.values(), *([] if default_count is None else [default_count]))
               if not isinstance(n, int) or n <= 0}
        if bad:
            raise LakeError(f"Cannot write to {store.name}: bucket counts must be positive, got {sorted(bad)}")
        self.store = store
        self.commit_user = commit_user
        self.counts = dict(bucket_counts)
        self.default_count = default_count
        self.ignore_previous_files = ignore_previous_files
        self.stage_unplanned = stage_unplanned
        self._writers: dict[int, TableWriter] = {}
        self._base: WriterBase | None = None
        self._stage: PostponeWriter | None = None
        self._slot: tuple[int, int] | None = None
        self._partition_types = store.schema.types(list(store.schema.partition_keys))

    def interleave_sequences(self, slot: int, slots: int) -> None:
        """As `TableWriter.interleave_sequences`, for every bucket count's writer."""
        if self._writers or not 0 <= slot < slots:
            raise LakeError(f"Writer of {self.store.name}: sequence slot {slot} of {slots} is out of range "
                            "or set after the first write")
        self._slot = (slot, slots)

    def _writer(self, buckets: int) -> TableWriter:
        writer = self._writers.get(buckets)
        if writer is None:
            if self._base is None:
                # write-only writers never change it (no inline compaction), so one serves them all
                self._base = WriterBase.restore(self.store, Op.WRITE, self.ignore_previous_files)
            writer = TableWriter(self.store, self.commit_user, write_only=True, real_buckets=buckets,
                                 ignore_previous_files=self.ignore_previous_files, base=self._base)
            if self._slot is not None:
                writer.interleave_sequences(*self._slot)
            self._writers[buckets] = writer
        return writer

    def _stage_writer(self) -> PostponeWriter:
        if self._stage is None:
            # staged files are never committed (`resolve_staged` reads and deletes them), so they
            # need not be Avro as Paimon's postpone files: Parquet writes and reads them about ten
            # times faster (fastavro goes row by row), and the commit reads them on the driver
            self._stage = PostponeWriter(self.store, self.commit_user, file_format=STAGE_FORMAT)
        return self._stage

    def write_arrow(
        self, data: pa.Table | pa.RecordBatch | pa.RecordBatchReader, *, kinds: np.ndarray | None = None
    ) -> None:
        """Route rows by partition to the writer of the partition's bucket count."""
        if isinstance(data, pa.RecordBatchReader):
            for batch in data:
                self.write_arrow(batch)
            return
        table = as_table(data, self.store.name)
        if table.num_rows < PARALLEL_GATHER_ROWS:
            self._write_table(table, kinds, None)
            return
        # a big batch is checked and routed on kept threads, as `TableWriter.write_arrow` does
        with KeptThreadPool(max_workers=usable_cpus(), thread_name=WRITER_THREAD_NAME) as pool:
            self._write_table(table, kinds, pool)

    def _write_table(self, data: pa.Table, kinds: np.ndarray | None, pool: Executor | None) -> None:
        table = conform(data, self.store.schema, self.store.name, pool)
        if table.num_rows == 0:
            return
        if kinds is None:
            kinds = row_kinds(table, self.store.schema, self.store.name)
        ids, values = partition_groups(table, list(self.store.schema.partition_keys))
        for gid, pvals in enumerate(values):
            rows = np.arange(table.num_rows) if len(values) == 1 else np.flatnonzero(ids == gid)
            part = table if len(values) == 1 else table.take(pa.array(rows))
            n = self.counts.get(serialize_row(list(pvals), self._partition_types), self.default_count)
            if n is not None:
                self._writer(n).write_conformed(part, kinds[rows], pool)
            elif self.stage_unplanned:
                self._stage_writer().write_conformed(part, kinds[rows])
            else:
                where = dict(zip(self.store.schema.partition_keys, pvals, strict=True))
                raise LakeError(f"Cannot write to {self.store.name}: no bucket count was planned for "
                                f"partition {where}")

    def prepare_commit(self) -> list[CommitMessage]:
        """The messages of every bucket written since the last call (staged ones with bucket -2)."""
        messages = [m for n in sorted(self._writers) for m in self._writers[n].prepare_commit()]
        if self._stage is not None:
            messages += self._stage.prepare_commit()
        return messages

    def abort(self, messages: Iterable[CommitMessage] = ()) -> list[CommitMessage]:
        """Delete files written but not committed: every writer's, and those of ``messages`` (this
        writer's) that no snapshot since its first row committed; returns those that one did, as
        `TableWriter.abort` (which see: `CommitStateUnknownError` when that cannot be known)."""
        # the oldest point any of its writers started from, or last saw its remembered messages
        # not landed by (`PreparedNames.since`): no file of theirs can have landed before
        starts: list[int | None] = []
        if self._base is not None:
            base_id = None if self._base.snapshot is None else self._base.snapshot.id
            starts = [w.prepared.since(base_id) for w in self._writers.values()] or [base_id]
        if self._stage is not None and self._stage.based:
            starts.append(self._stage.prepared.since(self._stage.first_base_id))
        since = None if not starts or None in starts else min(s for s in starts if s is not None)
        own = set().union(*(w.prepared.names for w in self._writers.values()),
                          self._stage.prepared.names if self._stage is not None else ())
        landed, messages = split_landed(self.store, messages, since, own)
        # proven inside the table (through symlinks too) before anything goes
        doomed = self.store.paths.ensure_inside(
            [p for m in messages for f in m.all_written_files()
             for p in self.store.written_file_paths(m.partition, m.bucket, f)],
            resolve_links=self.store.file_io.has_symlinks)
        for writer in self._writers.values():
            writer.abort()
        if self._stage is not None:
            self._stage.abort()
        self.store.file_io.delete_many(doomed)
        for record in [*(w.prepared for w in self._writers.values()),
                       *([self._stage.prepared] if self._stage is not None else [])]:
            record.forget([*landed, *messages])  # settled (`PreparedNames`): each forgets its own
        return landed

    def close(self) -> None:
        """Drop buffered rows; files returned by `prepare_commit` are left to the committer."""
        for writer in self._writers.values():
            writer.close()
        if self._stage is not None:
            self._stage.close()

    def __enter__(self) -> PostponeFixedBucketWriter:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is not None:
            self.abort()
        self.close()


def write_fixed_buckets(
    store: FileStore,
    data: pa.Table | pa.RecordBatch,
    *,
    commit_user: str | None = None,
) -> int | None:
    """Write ``data`` into real buckets of postpone table ``store`` and commit it (one APPEND
    snapshot; its id, None when there is nothing to write), as Paimon's batch sinks do with
    ``postpone.batch-write-fixed-bucket`` (pypaimon's ``new_postpone_fixed_bucket_write_builder``).
    Each partition's count comes from `plan_batch_buckets` over ``data`` and the latest snapshot;
    partitions the batch outgrows are rescaled first (an OVERWRITE snapshot before the APPEND).
    `lake_assets.table.Table.write_arrow` keeps writing ``bucket-postpone``, as pypaimon's default
    batch writer does."""
    import uuid

    from lake_assets.ops.commit import TableCommitter  # here: a Spark task's writer of this module commits nothing

    table = conform(as_table(data, store.name), store.schema, store.name)
    if table.num_rows == 0:
        return None
    user = commit_user or f"fixed-bucket-{uuid.uuid4()}"
    # a partition the batch outgrows is rescaled first, in its own OVERWRITE snapshot (HEAD's order)
    opts, meta = BatchBucketOptions.of(store), bucket_metadata(store)
    # bytes decide only without a row target, for a partition without a default or with a recorded count
    measure = opts.target_rows is None and (opts.default_bucket_num is None or bool(meta.bucket_counts))
    plan = plan_batch_buckets(store, staged_partitions(store, table, measure_bytes=measure), meta, commit_user=user)
    with PostponeFixedBucketWriter(store, user, plan) as writer:
        writer.write_arrow(table)
        messages = writer.prepare_commit()
    ids = TableCommitter(store, user).commit(messages, BATCH_COMMIT_IDENTIFIER, check_committed=False)
    return ids[-1] if ids else None


def resolve_staged(
    store: FileStore,
    commit_user: str,
    staged: Sequence[CommitMessage],
    *,
    parallelism: int | None = None,
    options: BatchBucketOptions | None = None,
    overwrite: bool = False,
) -> list[CommitMessage]:
    """Write the rows of uncommitted ``bucket-postpone`` files (``staged``, the messages of
    `PostponeFixedBucketWriter` with ``stage_unplanned``, in writer order) into real buckets and
    delete those files; the new messages (not committed).

    Each partition's count is planned now that its whole batch is known (`plan_batch_buckets`
    with the write's ``options`` and ``overwrite`` over its rows and their Arrow bytes: the rows
    from the files' metadata, the bytes, when the plan needs them, from the files read one at a
    time per thread). The partitions are then
    written independently, up to ``parallelism`` at once (default: the CPUs; each its own
    write-only writer, so memory is up to that many write buffers plus one staged file each):
    a partition's rows are replayed in the order of ``staged``, each file by sequence number,
    through a fixed-bucket writer of its count, which numbers them after what the buckets hold.
    On failure the new files are deleted; the staged files always are (no snapshot names them)."""
    staged = [m for m in staged if m.bucket == POSTPONE_BUCKET]
    files = [ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
             for m in staged for f in m.new_files]
    try:
        if not files:
            return []
        by_partition: dict[bytes, list[ManifestEntry]] = {}
        for e in files:
            by_partition.setdefault(e.partition, []).append(e)
        workers = max(1, min(len(by_partition), parallelism or usable_cpus()))
        opts = BatchBucketOptions.of(store) if options is None else options
        with KeptThreadPool(max_workers=workers, thread_name=POSTPONE_REWRITE_THREAD_NAME) as pool:
            metadata = bucket_metadata(store)
            known = {} if overwrite else metadata.bucket_counts
            sizes = _staged_sizes(store, by_partition, known, opts, pool)
            plan = plan_batch_buckets(store, sizes, metadata, options=opts, overwrite=overwrite,
                                      commit_user=commit_user)
            base = WriterBase.restore(store, Op.WRITE, False)
            futures = [pool.submit(_rewrite_partition, store, commit_user, plan[p], entries, base)
                       for p, entries in by_partition.items()]
            done: list[CommitMessage] = []
            failure: BaseException | None = None
            for f in futures:
                try:
                    done += f.result()
                except BaseException as exc:  # the first failure wins; the others' files go too
                    failure = failure or exc
            if failure is not None:
                store.file_io.delete_many([p for m in done for f in m.all_written_files()
                                           for p in store.written_file_paths(m.partition, m.bucket, f)])
                raise failure
            return done
    finally:
        store.file_io.delete_many([p for e in files for p in store.written_file_paths(e.partition, e.bucket, e.file)])


def _staged_sizes(store: FileStore, by_partition: Mapping[bytes, list[ManifestEntry]],
                  known: Mapping[bytes, int], opts: BatchBucketOptions,
                  pool: Executor) -> dict[bytes, StagedPartition]:
    """The rows (file metadata) and bytes of each partition's staged files as the table's postpone
    files would store them (`postpone_file_bytes`: HEAD stages Avro postpone files and measures
    their size; ours are staged as Parquet for speed); the files are read only when a decision
    measures bytes (no row target, and a partition with a recorded count, which a big batch would
    rescale, or one without a count or default count)."""
    need_bytes = opts.target_rows is None and any(
        p in known or opts.default_bucket_num is None for p in by_partition)
    nbytes: dict[bytes, int] = dict.fromkeys(by_partition, 0)
    if need_bytes:
        entries = [e for es in by_partition.values() for e in es]

        def measure(e: ManifestEntry) -> int:
            return postpone_size.postpone_file_bytes(store, *read_postpone_file(store, e, "write to"))

        for e, n in zip(entries, pool.map(measure, entries), strict=True):
            nbytes[e.partition] += n
    return {p: StagedPartition(sum(e.file.row_count for e in es), nbytes[p]) for p, es in by_partition.items()}


def _rewrite_partition(store: FileStore, commit_user: str, buckets: int, entries: Sequence[ManifestEntry],
                       base: WriterBase) -> list[CommitMessage]:
    """One partition's staged files, in order, into ``buckets`` real buckets; its messages."""
    writer = TableWriter(store, commit_user, write_only=True, real_buckets=buckets, base=base)
    try:
        for e in entries:
            rows, kinds = read_postpone_file(store, e, "write to")
            writer.write_arrow(rows, kinds=kinds)
        return writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        writer.close()
