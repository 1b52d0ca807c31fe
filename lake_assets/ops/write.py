"""The table writer: buffers rows per (partition, bucket), sorts, merges and flushes files.

Like a Paimon/Flink sink writer it never commits: `prepare_commit` flushes and returns commit
messages for a single committer. Its `BucketRouter` (ops/bucket_router.py) puts each row in its
bucket's buffer; here are the checks on input, when the buffer flushes or spills, and the commit
messages; what `abort` and `close` delete is `WriterCleanup`'s (ops/writer_abort.py), the tables
it refuses are `check_writable`'s (ops/writer_refusals.py). Everything on the row path is
vectorized with pyarrow/numpy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, wait
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lake_assets.errors import LakeError, UnsupportedFeatureError, WriterStateLostError
from lake_assets.lsm.merge import is_retract
from lake_assets.ops.allocator import release_pool_threads
from lake_assets.ops.bucket_router import BucketRouter
from lake_assets.ops.column_subset import subset_write_schema, with_write_cols
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.conform import as_table, conform, row_kinds
from lake_assets.ops.dynamic_bucket import attach_index_changes
from lake_assets.ops.flush_schedule import FlushCompactSchedule
from lake_assets.ops.kept_pool import KeptThreadPool
from lake_assets.ops.level0_flush import Level0Flush
from lake_assets.ops.prepared_names import PreparedNames
from lake_assets.ops.route import PARALLEL_GATHER_ROWS
from lake_assets.ops.spill import SpillStats, spill_root
from lake_assets.ops.write_spill import WRITER_THREAD_NAME, WriteBufferSpill, bucket_flush_threads
from lake_assets.ops.writer_abort import WriterCleanup
from lake_assets.ops.writer_refusals import check_writable
from lake_assets.ops.writer_rounds import RoundLedger
from lake_assets.ops.writer_state import (
    BucketBuffer,
    BucketKey,
    PendingMessage,
    WriterBase,
    bucket_message,
    compact_inline,
    discard_compactions,
)
from lake_assets.spec.row_kind import RowKind
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.ops.cross_partition import CrossPartitionRouter
    from lake_assets.spec.snapshot import Snapshot
    from lake_assets.store.file_store import FileStore


# Fewest rows routed at a time when a big input is cut to fit the write buffer.
MIN_ROUTED_ROWS = 1024


class TableWriter(WriterCleanup):
    """Writes Arrow data into new level-0 files of one table; see `prepare_commit`."""

    def __init__(
        self, store: FileStore, commit_user: str, *, write_only: bool = False, ignore_previous_files: bool = False,
        real_buckets: int | None = None, base: WriterBase | None = None,
        spill_dir: str | os.PathLike[str] | None = None, write_columns: Sequence[str] | None = None,
    ) -> None:
        # ``real_buckets``: the postpone compaction (ops/postpone.py) writes a postpone table's rows
        # into that many real buckets; it runs as a compaction, which the table allows. With
        # ``write_only`` it is a batch write into real buckets (ops/postpone_fixed_bucket.py).
        # ``base``: the snapshot state to start from, restored once and shared by write-only
        # writers of disjoint buckets (one per bucket count there); else read at the first write.
        # ``spill_dir``: where the write buffer and inline compaction spill (`spill.spill_root`),
        # checked now, before anything is written. ``write_columns``: new rows of some columns of a
        # data-evolution table (`ops.column_subset`); the writer's schema is then theirs.
        self._op = Op.WRITE if real_buckets is None or write_only else Op.COMPACT
        store.require(self._op)
        self.store = store
        # Paimon's ignorePreviousFiles (set for overwrites): buckets start without their live files
        self.ignore_previous_files = ignore_previous_files
        self.schema = store.schema
        # files of a column subset: rows are conformed to, and files hold, those columns only
        self._subset = subset_write_schema(self.schema, write_columns, store.name)
        if self._subset is not None:
            self.schema = self._subset
        self.commit_user = commit_user
        opts = self.schema.core_options
        # The postpone compaction always compacts what it writes, whatever the table's write-only
        # says (Java's PostponeUtils.tableForPostponeRewrite sets write-only = false).
        self.write_only = write_only or (opts.write_only and real_buckets is None)
        self.options = opts
        self.is_pk = bool(self.schema.primary_keys)
        self.num_buckets = opts.bucket if real_buckets is None else real_buckets
        # dynamic bucket mode: an assigner and the table's hash index decide each key's bucket
        self.dynamic = self.is_pk and self.num_buckets == -1
        # bucket = N append table: ordered per-bucket streams, compacted inline (lsm/bucketed_append.py)
        self.fixed_append = not self.is_pk and self.num_buckets > 0
        check_writable(store, self.schema, self.num_buckets, ignore_previous_files=ignore_previous_files)
        self.partition_types = self.schema.types(list(self.schema.partition_keys))
        self.bucket_types = self.schema.types(list(self.schema.bucket_keys))
        # the table's own fixed count (not a postpone table's per-partition one) is checked per partition
        fixed_table_count = real_buckets is None and self.num_buckets > 0
        # the write buffer's local spill directory root (None: the system temp directory)
        self.spill_dir = spill_root(spill_dir)
        self._router = BucketRouter(
            store, self._op, num_buckets=self.num_buckets, partition_types=self.partition_types,
            bucket_types=self.bucket_types, ignore_previous_files=ignore_previous_files, base=base,
            checked_count=self.num_buckets if fixed_table_count else None, spill_dir=self.spill_dir)
        self._buffers = self._router.buffers  # the router fills them; flushes empty them
        self._compact_requested: set[tuple[bytes, int]] = set()  # see `request_compaction`
        self._full_requested: set[tuple[bytes, int]] = set()  # ... with full=True
        self._closed = False
        self.prepared = PreparedNames()  # of its `prepare_commit`s, not seen landed: what `abort` knows as its own
        self._rounds = RoundLedger()  # rounds carried on before seen landed (`_check_earlier_rounds`)
        # the write buffer's local spill (None: a full buffer flushes level-0 files)
        self._spill = WriteBufferSpill.for_writer(opts, self.is_pk, list(self.schema.trimmed_primary_keys),
                                                  self.spill_dir)
        self._level0 = Level0Flush(store, self.schema, self.partition_types, self._spill, write_only=self.write_only)
        self._threads: KeptThreadPool | None = None  # see `_worker_pool`

    def interleave_sequences(self, slot: int, slots: int) -> None:
        """Number each bucket's records ``base + slot``, ``base + slot + slots``, ... (base = the
        bucket's maximum sequence number + 1) instead of ``base``, ``base + 1``, ...

        Writers of one commit that share a bucket (Spark tasks over unrouted input) and hold
        distinct slots then never share a sequence number, so every reader orders the versions of
        a key the same way; within one writer, later rows still win. Call before the first write.
        """
        self._router.interleave_sequences(slot, slots)

    def start_from(self, snapshot: Snapshot | None) -> None:
        """Start from ``snapshot``, the latest as the caller that made this writer just read it
        (`Table.write_arrow`, which fills and commits it in one call), rather than read the latest
        again at the first row. The commit still reads the latest and checks for conflicts."""
        self._router.start_from(snapshot)

    # ----------------------------------------------------------------- input
    def write_arrow(
        self, data: pa.Table | pa.RecordBatch | pa.RecordBatchReader, *, kinds: np.ndarray | None = None
    ) -> None:
        """Buffer rows; flushes level-0 files when ``write-buffer-size`` is exceeded.

        ``kinds`` (int8 RowKind per row) gives the rows' kinds when they come from data files
        rather than from ``rowkind.field`` (the postpone compaction); a Table only."""
        if self._closed:
            raise LakeError(f"Writer of {self.store.name} is closed")
        if isinstance(data, pa.RecordBatchReader):
            for batch in data:
                self.write_arrow(batch)
            return
        data = as_table(data, self.store.name)  # anything else is refused by name, not by AttributeError
        if data.num_rows < PARALLEL_GATHER_ROWS:
            self._write_table(data, kinds, None)
            return
        # a big batch is checked and routed on the writer's threads (see conform and route)
        self._write_table(data, kinds, self._worker_pool())

    def _worker_pool(self) -> KeptThreadPool:
        """The writer's threads, for routing big batches and per-bucket spills and flushes, kept
        until `close` and then handed back for the next writer (`ops.kept_pool`: no thread
        start per round). Arrow's allocator (mimalloc) keeps a thread's freed pages in that
        thread's heap: with a fresh pool per batch and per flush, every pool's pages were left
        behind when its threads ended, and the resident memory above Arrow's live bytes grew with
        the number of batches and spills (issue 17 §2: a 1.6M-row upsert peaked at 157 MiB, a
        6.4M-row one at 210 MiB, both at 88 MiB of Arrow data). Kept threads reuse their own pages."""
        if self._threads is None:
            self._threads = KeptThreadPool(max_workers=bucket_flush_threads(), thread_name=WRITER_THREAD_NAME)
        return self._threads

    def _write_table(self, data: pa.Table, kinds: np.ndarray | None, pool: Executor | None) -> None:
        cross = self._router.cross_router
        if cross is not None and cross.advance_due:  # a long-lived cross-partition writer (key_index_race.py)
            cross.advance_base(self.commit_user)
            if self.write_only and cross.pending:  # before this round writes a file (a compacting
                self._check_earlier_rounds()        # writer looks at its prepare_commit)
            elif self.write_only:  # every round landed, seen up to the base
                self._rounds = RoundLedger(seen_snapshot=cross.base_snapshot)
        if data.num_rows == 0:
            conform(data, self.schema, self.store.name)
            return
        data = conform(data, self.schema, self.store.name, pool)
        if kinds is None:
            kinds = row_kinds(data, self.schema, self.store.name)
        self.write_conformed(data, kinds, pool)

    def write_conformed(self, data: pa.Table, kinds: np.ndarray, pool: Executor | None = None) -> None:
        """Buffer rows already conformed to the table (`conform`: its columns, order and types)
        with their kinds (int8 RowKind per row): `write_arrow` after its checks, for writers that
        conform a batch once and hand its parts on (`PostponeFixedBucketWriter`). ``pool`` routes
        a big batch on its threads (`write_arrow`'s)."""
        if self._closed:
            raise LakeError(f"Writer of {self.store.name} is closed")
        if data.num_rows == 0:
            return
        if self.options.ignore_delete and self.is_pk:
            keep = ~is_retract(kinds)
            if not keep.all():
                data = data.filter(pa.array(keep))
                kinds = kinds[keep]
                if data.num_rows == 0:
                    return  # only retractions: nothing to buffer (Java's writer drops them all too)
        if not self.is_pk and (kinds != RowKind.INSERT).any():
            raise UnsupportedFeatureError(
                f"Cannot write to {self.store.name}: append tables only take +I rows; "
                "updates and deletes need a primary key"
            )
        # The whole batch is validated above; it is routed in slices so that the sorted copies the
        # routing makes stay within about half the write buffer, whatever size the input has.
        # The floor only keeps per-slice overhead sane for tiny buffers; it must stay small, or wide
        # rows would overshoot the buffer (64k rows of 1 KiB are 64 MiB whatever the setting).
        # A batch that fits in the room the buffer has left is routed whole: its copy stays within
        # the buffer, and each bucket then holds one sorted slice, which flushes without a re-sort.
        slice_bytes = max(1, self.options.write_buffer_size // 2)
        room = self.options.write_buffer_size - self._router.buffered_bytes
        rows = data.num_rows if data.nbytes <= max(slice_bytes, room) else max(
            MIN_ROUTED_ROWS, data.num_rows * slice_bytes // data.nbytes)
        for start in range(0, data.num_rows, rows):
            self._router.route(data.slice(start, rows), kinds[start : start + rows], pool)
            if self._router.buffered_bytes >= self.options.write_buffer_size:
                self.flush()

    # ---------------------------------------------------------------- flushes
    @property
    def buffered_bytes(self) -> int:
        """The Arrow bytes the write buffer holds (``write-buffer-size`` bounds them)."""
        return self._router.buffered_bytes

    @property
    def spill_stats(self) -> SpillStats | None:
        """What this writer spilled and merged so far (None when it does not spill)."""
        return None if self._spill is None else self._spill.stats

    @property
    def spilling(self) -> bool:
        """Whether a full write buffer spills to local disk instead of writing level-0 files."""
        return self._spill is not None

    def _each(self, fn: Callable[[BucketBuffer], None], bufs: list[BucketBuffer], *, spills: bool = False) -> None:
        """Run ``fn`` over buckets in parallel (pyarrow frees the GIL); ``spills``: ``fn`` spills
        each bucket's buffer."""
        if len(bufs) <= 1:
            for buf in bufs:
                fn(buf)
            return
        # Only a round that spills or merges spilled runs handles a write buffer's worth of data:
        # its tasks drop big sorted copies and merge batches, which the threads' heaps would keep
        # above Arrow's live bytes (see `ops.allocator`). A commit of a small buffer frees little,
        # and releasing then costs more than it returns: the next round faults the pages in
        # again (7% of a 200K-row upsert round's CPU, issue 17 §1 round 5).
        release = spills or any(buf.runs for buf in bufs)
        pool = self._worker_pool()
        futures = [pool.submit(fn, buf) for buf in bufs]
        wait(futures)  # every task has ended before a failure is raised (and files are cleaned up)
        if release:
            release_pool_threads(pool, min(len(bufs), bucket_flush_threads()))
        for f in futures:
            f.result()

    def flush(self) -> None:
        """Empty the write buffer: into local spill runs when the writer spills (merged into
        level-0 files at `prepare_commit`), else into level-0 files now."""
        pending = [buf for buf in self._buffers.values() if buf.tables]
        nbytes = sum(buf.nbytes for buf in pending)
        if self._spill is not None and pending and self._spill.has_room(nbytes):
            self._router.buffered_bytes -= nbytes
            self._each(self._spill.spill, pending, spills=True)
            return
        # Not spilling, or write-buffer-spill.max-disk-size would be exceeded (the estimate is the
        # uncompressed size, an upper bound): like Paimon, fall back to a real flush - every bucket
        # merges its runs and buffer into level-0 files now, which frees the disk for later spills.
        self._write_level0()

    def _write_level0(self) -> None:
        """Every bucket's runs and buffered rows become level-0 files."""
        targets = [buf for buf in self._buffers.values() if buf.tables or buf.runs]
        self._router.buffered_bytes -= sum(buf.nbytes for buf in targets)
        self._each(self._level0.flush, targets)

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush and return the commit messages of everything written since the last call."""
        total = self.num_buckets if self.is_pk or self.fixed_append else -1
        compacts = (self.is_pk or self.fixed_append) and not self.write_only
        if compacts:  # before compacting what earlier rounds left in its buckets (cross-partition too)
            self._check_earlier_rounds()
            pending = self._flush_and_compact(total)
        else:
            self._write_level0()
            pending = [(key, buf, msg) for key, buf in self._buffers.items()
                       if (msg := bucket_message(buf, total, key in self._compact_requested)) is not None]
        if self._spill is not None:
            self._spill.cleanup()  # every run is merged now; the next spill makes a new directory
        for _, buf, _ in pending:
            buf.new_files = []
            buf.new_changelog = []
        self._compact_requested.clear()
        self._full_requested.clear()
        messages = [msg for _, _, msg in pending if not msg.is_empty()]
        if self._subset is not None:
            messages = with_write_cols(messages, self._subset)
        if self._router.assigner is not None:
            changes = self._router.assigner.prepare_commit(
                lambda name, data: self.store.file_io.write_bytes(self.store.paths.index_file(name), data))
            messages = attach_index_changes(messages, changes, total)
        cross = self._router.cross_router
        if cross is not None:  # the commit checks for writers racing this one (ops/key_index_race.py)
            cross.advance_base(self.commit_user)
            messages = cross.stamp(messages)
            # the next write moves the base over this commit (before snapshots expire past it)
            cross.advance_due = True
        if compacts or cross is not None:
            self._rounds.record(self.store, messages, self._router.restore)
        self.prepared.record(self.store, messages, self._router.first_base_id if self._router.based else None)
        return messages

    def _check_earlier_rounds(self) -> None:
        """Look whether the earlier rounds whose files this round compacts (a write-only
        cross-partition writer: whose placements its index holds) landed (`RoundLedger`): their
        rows discarded, this round's files go, the writer closes and raises; only their
        compaction lost, the buckets' files are reloaded from the latest snapshot."""
        try:
            refused = self._router.cross_router is not None  # later rounds carry the lost one as pending
            if self._rounds.check(self.store, self.store.name, later_rounds_refused=refused):
                self._router.reload_base()
        except WriterStateLostError:
            self.abort()
            self.close()
            raise

    def _flush_and_compact(self, total: int) -> list[PendingMessage]:
        """Each bucket's level-0 flush and, once it is done, its inline compaction, on the
        writer's threads in the order `FlushCompactSchedule` gives (a compaction beside another
        thread's flush, not beside another compaction; no barrier after the flushes: the commit's
        critical path, issue 14). If any bucket fails, no new task starts, the running ones end,
        and the compaction outputs of those that completed are deleted before the first failure
        is raised."""
        done: dict[BucketKey, CommitMessage] = {}
        targets = [buf for key, buf in self._buffers.items()
                   if buf.tables or buf.runs or buf.new_files or buf.new_changelog or key in self._compact_requested]
        self._router.buffered_bytes -= sum(buf.nbytes for buf in targets)
        release = any(buf.runs for buf in targets)  # as `_each`: a round that merged spilled runs

        def flush(buf: BucketBuffer) -> CommitMessage | None:
            self._level0.flush(buf)
            return bucket_message(buf, total, (buf.partition, buf.bucket) in self._compact_requested)

        def compact(buf: BucketBuffer, msg: CommitMessage) -> None:
            key = (buf.partition, buf.bucket)
            done[key] = self._compact_inline(key, buf, msg)

        schedule = FlushCompactSchedule(targets, flush, compact, workers=bucket_flush_threads())
        pool = self._worker_pool() if len(targets) > 1 else None  # one bucket: on this thread
        try:
            schedule.run(pool)
        except BaseException:
            discard_compactions(self.store, done.values())
            raise
        finally:
            if release and pool is not None and schedule.ended:
                release_pool_threads(pool, schedule.workers)
        return [(key, buf, done[key]) for key, buf in self._buffers.items() if key in done]

    def request_compaction(self, partition_values: tuple[Any, ...], bucket: int, *, full: bool = False) -> None:
        """Have the next `prepare_commit` run the bucket's compaction even if nothing was written
        to it (Java's ``write.compact(partition, bucket, full)``, which the postpone compaction
        calls for real buckets holding level-0 files, or for every real bucket with ``full``: all
        of the bucket's files, old and new, into the top level). A write-only writer ignores it."""
        buf = self._router.buffer(partition_values, bucket)
        self._compact_requested.add((buf.partition, buf.bucket))
        if full:
            self._full_requested.add((buf.partition, buf.bucket))

    def _compact_inline(self, key: tuple[bytes, int], buf: BucketBuffer, msg: CommitMessage) -> CommitMessage:
        return compact_inline(self.store, self._router.restore(), self.num_buckets, key, buf, msg,
                              full=key in self._full_requested, spill_dir=self.spill_dir)

    def adopt_key_index(self, router: CrossPartitionRouter) -> bool:
        """Route with the key index of an earlier writer of this commit user (`detach_key_index`,
        the previous micro-batch of a streaming write) where it still matches the table (else it
        is closed, and the index is read from the table); before the first write. Whether it was."""
        return self._router.adopt_cross_router(router, self.commit_user, self.ignore_previous_files)

    def detach_key_index(self) -> CrossPartitionRouter | None:
        """Hand the cross-partition key index (its spill files and lease) over to a later writer of
        this commit user (`adopt_key_index`), after `prepare_commit`; `close` then leaves it open."""
        router, self._router.cross_router = self._router.cross_router, None
        return router

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is not None:
            self.abort()
        self.close()
