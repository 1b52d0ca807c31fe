"""A table writer's bucket routing: the (partition, bucket) buffer each row goes to, and its number.

`BucketRouter` groups conformed rows by partition and bucket (`ops.route`; a dynamic-bucket
table's buckets come from its assigner and hash index), numbers each bucket's records on from the
bucket's live files, and appends them to that bucket's `BucketBuffer`. When the buffers are
flushed, spilled or compacted is the `TableWriter`'s business (ops/write.py).
"""

from __future__ import annotations

import functools
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lake_assets.errors import LakeError
from lake_assets.formats.data_file import SEQUENCE_NUMBER
from lake_assets.ops.bucket_count import check_bucket_count
from lake_assets.ops.cross_partition import CrossPartitionRouter
from lake_assets.ops.dynamic_bucket import DynamicBucketAssigner, assigner_for
from lake_assets.ops.route import BucketAssign, RouteSpec, route
from lake_assets.ops.writer_state import BucketBuffer, BucketKey, WriterBase
from lake_assets.spec.binary_row import serialize_row
from lake_assets.table_support import Op, cross_partition_fields

if TYPE_CHECKING:
    from lake_assets.spec.data_types import DataType
    from lake_assets.spec.snapshot import Snapshot
    from lake_assets.store.file_store import FileStore


class BucketRouter:
    """Routes a writer's rows into its per-bucket buffers (`buffers`), numbering them."""

    def __init__(
        self, store: FileStore, op: Op, *, num_buckets: int, partition_types: list[DataType],
        bucket_types: list[DataType], ignore_previous_files: bool, base: WriterBase | None,
        checked_count: int | None, spill_dir: str | None = None,
    ) -> None:
        # ``num_buckets``: the writer's count (-1: dynamic for a primary-key table, unaware for an
        # append table); ``base``: the snapshot state to start from, else read at the first row;
        # ``checked_count``: the table's own fixed count (not a postpone table's per-partition one),
        # a partition whose live files another count wrote is refused (ops/bucket_count.py).
        self.store = store
        self.schema = store.schema
        self._op = op
        self._ignore_previous_files = ignore_previous_files
        self.partition_types = partition_types
        is_pk = bool(self.schema.primary_keys)
        self.dynamic = is_pk and num_buckets == -1
        self._checked_count = checked_count
        self.buffers: dict[BucketKey, BucketBuffer] = {}
        self.buffered_bytes = 0  # what `route` added to the buffers; the writer subtracts what it flushes
        # the dynamic-bucket assigner, made at the first row of a dynamic-bucket table
        self.assigner: DynamicBucketAssigner | None = None
        # cross-partition upsert (a dynamic-bucket key without every partition field): the global
        # key index places rows instead (ops/cross_partition.py), made at the first row
        self.cross_partition = self.dynamic and bool(cross_partition_fields(self.schema))
        self.cross_router: CrossPartitionRouter | None = None
        self._spill_dir = spill_dir
        self._base = base
        # the latest snapshot as the writer's maker just read it (`start_from`), a 1-tuple: None is
        # a table without one
        self._start: tuple[Snapshot | None] | None = None
        # whether a base was restored, and the id of the first one's snapshot: no file of the
        # writer can have landed in or before it (`TableWriter.abort` looks after it)
        self.based = base is not None
        self.first_base_id = None if base is None or base.snapshot is None else base.snapshot.id
        # Sequence numbers of a bucket are next, next + stride, ... (see `interleave_sequences`)
        self._sequence_stride = 1
        self._sequence_offset = 0
        self._spec = RouteSpec(
            partition_keys=tuple(self.schema.partition_keys),
            bucket_keys=tuple(self.schema.bucket_keys),
            bucket_types=tuple(bucket_types),
            # append tables: bucket = N hashes the bucket key; unaware (-1) puts every row in bucket 0
            num_buckets=num_buckets if is_pk or num_buckets > 0 else 1,
            primary_keys=tuple(self.schema.trimmed_primary_keys) if is_pk else (),
            sequence_fields=tuple(self.schema.core_options.sequence_fields),
            sequence_descending=self.schema.core_options.sequence_descending,
            bucket_function=self.schema.core_options.bucket_function,
        )

    def interleave_sequences(self, slot: int, slots: int) -> None:
        """See `TableWriter.interleave_sequences`."""
        if self.buffers or not 0 <= slot < slots:
            raise LakeError(f"Writer of {self.store.name}: sequence slot {slot} of {slots} is out of range "
                            "or set after the first write")
        self._sequence_offset, self._sequence_stride = slot, slots

    def route(self, data: pa.Table, kinds: np.ndarray, pool: Executor | None = None) -> None:
        """Append conformed rows (with their int8 kinds) to their buckets' buffers, counting
        their bytes in `buffered_bytes`. ``pool`` routes a big batch on its threads."""
        if not self.cross_partition:
            self._buffer_rows(data, kinds, self._assign_dynamic if self.dynamic else None, pool)
            return
        # a cross-partition batch's placements stay only with its rows buffered: a failure in
        # between takes them back (ops/cross_partition.py), and the buffering undoes its appends
        router = self._cross_router()
        data, kinds, buckets = router.route(data, kinds)
        try:
            self.store.fault_point("write.cross_partition_routed")
            if data.num_rows:
                self._buffer_rows(data, kinds, functools.partial(_given_buckets, buckets), pool)
        except BaseException:
            router.undo_route()
            raise
        router.confirm_route()

    def _buffer_rows(self, data: pa.Table, kinds: np.ndarray, assign: BucketAssign | None,
                     pool: Executor | None) -> None:
        """Route and number rows into their buffers: all of them, or (on a failure) none."""
        appended: list[tuple[BucketBuffer, int]] = []  # each buffer appended to, its next number before
        try:
            for group in route(data, kinds, self._spec, assign, pool):
                buf = self.buffer(group.partition, group.bucket)
                n = group.rows.num_rows
                # Sequence numbers follow the group's merge order, (key, arrival): a key's versions
                # keep their arrival order, which is all a merge reads from them (Paimon numbers
                # records as they come; across keys the numbering carries no meaning).
                step = self._sequence_stride
                first = buf.next_sequence
                seq = pa.array(np.arange(first, first + n * step, step, dtype=np.int64))
                chunk = group.rows.append_column(SEQUENCE_NUMBER, seq)
                nbytes = chunk.nbytes
                appended.append((buf, first))
                buf.tables.append(chunk)
                buf.next_sequence += n * step
                buf.nbytes += nbytes
                self.buffered_bytes += nbytes
        except BaseException:
            for buf, first in reversed(appended):
                nbytes = buf.tables.pop().nbytes
                buf.nbytes -= nbytes
                self.buffered_bytes -= nbytes
                buf.next_sequence = first
            raise

    def buffer(self, pvals: tuple[Any, ...], bucket: int) -> BucketBuffer:
        """The buffer of a partition (by its values) and bucket, made at its first use."""
        partition = serialize_row(list(pvals), self.partition_types)
        key = (partition, bucket)
        buf = self.buffers.get(key)
        if buf is None:
            base = self.restore()
            if self._checked_count is not None:
                check_bucket_count(self.store.name, self.schema.partition_keys, pvals,
                                   base.bucket_counts.get(partition), self._checked_count)
            start = base.max_sequences[key] + 1
            buf = BucketBuffer(partition, pvals, bucket, start + self._sequence_offset)
            self.buffers[key] = buf
        return buf

    def _assign_dynamic(self, data: pa.Table, part_ids: np.ndarray, part_values: list[tuple[Any, ...]]) -> np.ndarray:
        """Buckets of rows of a dynamic-bucket table, from the writer's assigner (`route`'s hook)."""
        partitions = [serialize_row(list(p), self.partition_types) for p in part_values]
        return self._dynamic_assigner().assign_rows(data, self.schema, part_ids, partitions)

    def _dynamic_assigner(self) -> DynamicBucketAssigner:
        """The writer's bucket assigner, loaded from the snapshot the writer starts from."""
        if self.assigner is None:
            self.assigner = assigner_for(self.store, self.restore().snapshot,
                                         ignore_previous=self._ignore_previous_files)
        return self.assigner

    def _cross_router(self) -> CrossPartitionRouter:
        """The writer's cross-partition router, its key index bootstrapped from the snapshot the
        writer starts from."""
        if self.cross_router is None:
            self.cross_router = CrossPartitionRouter(self.store, self.restore().snapshot, self._spill_dir)
        return self.cross_router

    def adopt_cross_router(self, router: CrossPartitionRouter, commit_user: str, ignore_previous: bool) -> bool:
        """Take ``router`` (a key index kept from an earlier writer of ``commit_user``) as this
        writer's where it still matches the table (`CrossPartitionRouter.resume`) and nothing was
        routed yet; else close it. Whether it was taken."""
        if (self.cross_partition and self.cross_router is None and not self.buffers and not ignore_previous
                and router.resume(self.store, commit_user)):
            self.cross_router = router
            return True
        router.close()
        return False

    def start_from(self, snapshot: Snapshot | None) -> None:
        """Restore from ``snapshot`` (the latest, just read by the one call that makes, fills and
        commits this writer) at the first row, rather than read the latest again."""
        if self._base is None:
            self._start = (snapshot,)

    def restore(self) -> WriterBase:
        """Sequence numbers continue from each bucket's live files (Paimon's "scan" init mode)."""
        if self._base is None:
            if self._start is not None:
                self._base = WriterBase.restore_at(self.store, self._op, self._ignore_previous_files, self._start[0])
            else:
                self._base = WriterBase.restore(self.store, self._op, self._ignore_previous_files)
            if not self.based:
                self.based = True
                self.first_base_id = None if self._base.snapshot is None else self._base.snapshot.id
        return self._base

    def reload_base(self) -> None:
        """Restore the buckets' files from the latest snapshot again (the writer's own were not
        all committed); buffers keep their sequence numbers, which only grow."""
        self._base = WriterBase.restore(self.store, self._op, self._ignore_previous_files)


def _given_buckets(buckets: np.ndarray, _data: pa.Table, _part_ids: np.ndarray,
                   _values: list[tuple[Any, ...]]) -> np.ndarray:
    """`route`'s assign hook for rows whose buckets are known already (cross-partition tables)."""
    return buckets
