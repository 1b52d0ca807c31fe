"""Batch reads of postpone-bucket tables with ``postpone.merge-on-read = true`` (Paimon 2.0+).

A postpone table's writers leave rows unsorted in ``bucket-postpone`` until the postpone
compaction moves them into real buckets; plain batch reads skip them. With the option, a batch
read merges them in, as Paimon's ``PostponeMergeReadBuilder`` / ``MergeFileSplitRead
.createPostponeMergeReader`` (apache/paimon#8802, #8849; Spark and Flink batch sources) do:

* per partition holding postpone files, the bucket count is the one its real buckets record, else
  the count the compaction would pick (``postpone.default-bucket-num``, else an estimate on the
  postpone files: `lake_assets.ops.postpone.new_bucket_num`, Java's ``PostponeBucketRouter``);
* the postpone files are replayed in the compaction's order (creation time, ties in manifest
  order; each file in its own sequence order), each row routed to its bucket by the table's bucket
  function, and numbered after the highest sequence number of that bucket's real files read, in
  the bucket's merge order (Java: "its input order defines sequence numbers after the real
  files, while user-defined sequence fields take precedence");
* each bucket's real files and routed rows are merged by the table's merge engine (row kinds,
  ``sequence.field``, deletes), retractions dropped; a bucket with postponed rows only (a
  partition without real buckets yet) is merged alone. Real files are the ones a plain batch read
  sees (`FileStore.visible_files`: deletion vectors applied, level 0 hidden where Paimon hides it);
* a filter prunes partitions, and files by their key stats (both safe before the merge); rows are
  dropped before the merge by key terms only, and the whole filter is applied after it, as Java
  ("postpone records make real-file value filters unsafe before the final merge").

So a merge-on-read before compaction returns the rows a plain read returns after
`lake_assets.ops.postpone.compact_postpone` has moved them - except for real-bucket level-0 files of
first-row and deletion-vector tables (a fixed-bucket batch write's, write-only): batch reads hide
them, here as in Java, and the compaction lifts them into view. Streaming reads of such tables are
refused, as Paimon's (``FlinkSourceBuilder``: "only supported for batch reads").

Memory: routed rows are buffered up to ``write-buffer-size`` (all buckets together; checked after
each postpone file), then each
bucket's buffer is sorted and spilled as a run (`lake_assets.ops.write_spill.WriteBufferSpill`;
``write-buffer-spillable = false`` fails instead, as Java's "Postpone merge read buffer is full");
each bucket is then a streaming k-way merge (`lake_assets.lsm.merge_reader.merge_sorted`) of its
real sorted runs and its spilled runs, batch by batch. One postpone file is read whole at a time
(a file rolls at the target file size).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import LakeError, UnsupportedFeatureError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.lookup_merge import LEVEL, LEVEL_FIELD, with_level
from lake_assets.lsm.merge import is_retract, sort_and_merge
from lake_assets.lsm.merge_reader import merge_sorted
from lake_assets.lsm.run_partition import chained, split_into_runs
from lake_assets.ops.conform import conform
from lake_assets.ops.plan import file_may_match, plan_splits
from lake_assets.ops.postpone_files import read_postpone_file
from lake_assets.ops.postpone_table import record_bucket_count
from lake_assets.ops.route import RouteSpec, route
from lake_assets.ops.scan import Split
from lake_assets.ops.spill import SpillDirectory, key_batches, spill_batch_bytes, spill_root
from lake_assets.ops.write_spill import WriteBufferSpill
from lake_assets.ops.writer_state import BucketBuffer
from lake_assets.option_classification import is_true
from lake_assets.spec.arrow_types import to_arrow_field
from lake_assets.table_support import POSTPONE_BUCKET, Op

if TYPE_CHECKING:
    from lake_assets.ops.read import SplitReader
    from lake_assets.predicate import Predicate
    from lake_assets.spec.manifest import DataFileMeta, ManifestEntry
    from lake_assets.spec.schema import TableSchema
    from lake_assets.spec.snapshot import Snapshot
    from lake_assets.store.file_store import FileStore

MERGE_ON_READ_KEY = "postpone.merge-on-read"

__all__ = ["MERGE_ON_READ_KEY", "PostponeMergePlan", "PostponeMergeUnit", "configured", "plan_merge_read",
           "read_unit"]


def configured(schema: TableSchema) -> bool:
    """Whether batch reads of a table of ``schema`` merge ``bucket-postpone`` in (Java's
    ``PostponeMergeOnRead.configured``: the option, postpone bucket mode, a primary key)."""
    return (bool(schema.primary_keys) and schema.core_options.bucket == POSTPONE_BUCKET
            and is_true(schema.options.get(MERGE_ON_READ_KEY)))


@dataclass(frozen=True)
class PostponeMergeUnit:
    """One partition whose postponed rows a read merges: its real splits (pruned as a plain read
    prunes them), its postpone files in replay order and the bucket count they are routed into.
    Independent of other partitions: a Spark read runs each unit in its own task."""

    partition: bytes
    partition_values: tuple[Any, ...]
    buckets: int
    real: tuple[Split, ...]
    postponed: tuple[ManifestEntry, ...]

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for s in self.real) + sum(e.file.file_size for e in self.postponed)


@dataclass(frozen=True)
class PostponeMergePlan:
    """A merge-on-read of one snapshot: plain splits (partitions without postponed rows the read
    needs) and the partitions to merge."""

    splits: tuple[Split, ...]
    units: tuple[PostponeMergeUnit, ...]


def plan_read(store: FileStore, snap: Snapshot, pred: Predicate | None,
              schema: TableSchema) -> tuple[list[Split], tuple[PostponeMergeUnit, ...]]:
    """The splits of a batch read of ``snap`` and, when the table merges on read, the partitions
    whose postponed rows are merged in (`read_unit`); other tables read their splits only."""
    if not configured(schema):
        return plan_splits(store, snap, pred, schema=schema), ()
    merge_plan = plan_merge_read(store, snap, pred, schema)
    return list(merge_plan.splits), merge_plan.units


def plan_merge_read(store: FileStore, snap: Snapshot, pred: Predicate | None, schema: TableSchema) -> PostponeMergePlan:
    """The merge-on-read plan of ``snap`` for ``pred`` (named as ``schema``, the read's, names
    columns); reads manifests only."""
    from lake_assets.ops.postpone import new_bucket_num  # the compaction's count for a new partition

    splits = plan_splits(store, snap, pred, schema=schema)  # real buckets, pruned as a plain read
    scan = store.file_store_scan(Op.READ, real_buckets_only=False)
    pkeys = list(schema.partition_keys)
    partition_filter = None
    if pred is not None and pred.clauses and pkeys and set(pkeys) & pred.columns:
        def partition_filter(values: tuple[Any, ...]) -> bool:  # prunes manifests' partitions too
            return pred.test_values(dict(zip(pkeys, values, strict=True)))
    entries = scan.live_entries(snap, partition_filter=partition_filter)
    known: dict[bytes, int] = {}
    postponed: dict[bytes, list[ManifestEntry]] = defaultdict(list)
    for e in entries:
        if e.bucket == POSTPONE_BUCKET:
            postponed[e.partition].append(e)
        elif e.bucket >= 0:  # a count of 0 or less raises (record_bucket_count)
            record_bucket_count(store, known, e)
    units: list[PostponeMergeUnit] = []
    by_partition: dict[bytes, list[Split]] = defaultdict(list)  # one pass, not one per partition
    for s in splits:
        by_partition[s.partition].append(s)
    for partition, files in postponed.items():
        # the count from every postpone file of the partition, as the compaction decides it
        buckets = known.get(partition) or new_bucket_num(store, files)
        # key stats of postpone files are kept (only value stats are dropped): pruning by them is
        # safe, a file holding no key the filter accepts changes none of the keys read
        wanted = [e for e in files if pred is None or not pred.clauses or file_may_match(store, e.file, pred, schema)]
        if not wanted:
            continue
        replay = tuple(sorted(wanted, key=lambda e: e.file.creation_time_ms or 0))  # stable: ties in manifest order
        real = tuple(by_partition.get(partition, ()))
        units.append(PostponeMergeUnit(partition, scan.partition_values(partition), buckets, real, replay))
    merged = {u.partition for u in units}
    return PostponeMergePlan(tuple(s for s in splits if s.partition not in merged), tuple(units))


class _Router:
    """Routes a unit's postponed rows into per-bucket buffers, numbered after the bucket's real
    files, spilling them as sorted runs when the buffers outgrow ``write-buffer-size``."""

    def __init__(self, reader: SplitReader, unit: PostponeMergeUnit, unified: pa.Schema, spill_dir: str | None) -> None:
        store = reader.store
        self.reader = reader
        self.unit = unit
        self.unified = unified
        options = store.schema.core_options
        self.spec = RouteSpec(
            partition_keys=(), bucket_keys=tuple(store.schema.bucket_keys),
            bucket_types=tuple(store.schema.types(list(store.schema.bucket_keys))),
            num_buckets=unit.buckets, primary_keys=tuple(reader.key_names),
            sequence_fields=tuple(options.sequence_fields), sequence_descending=options.sequence_descending,
        )
        self.budget = options.write_buffer_size
        self.spillable = options.write_buffer_spillable is not False
        directory = SpillDirectory(compression=options.spill_compression, zstd_level=options.spill_zstd_level,
                                   max_disk_bytes=options.write_buffer_spill_max_disk_size,
                                   batch_bytes=spill_batch_bytes(options.write_buffer_size,
                                                                 options.local_sort_max_num_file_handles),
                                   parent=spill_root(spill_dir))
        self.spill = WriteBufferSpill(directory, list(reader.key_names), options)
        real_max = {s.bucket: max((f.max_sequence_number for f in s.files), default=-1) for s in unit.real}
        self.buffers = {b: BucketBuffer(unit.partition, unit.partition_values, b, real_max.get(b, -1) + 1)
                        for b in range(unit.buckets)}
        self.buffered_bytes = 0

    def add(self, rows: pa.Table, kinds: np.ndarray) -> None:
        """Route one postpone file's rows (in their sequence order) to their buckets."""
        reader = self.reader
        columns = [*reader.split_columns, SEQUENCE_NUMBER, VALUE_KIND, *([LEVEL] if reader.lookup_levels else [])]
        for group in route(rows, kinds, self.spec):
            buf = self.buffers.get(group.bucket)
            if buf is None:  # the bucket function gives 0 <= bucket < count
                raise LakeError(f"Cannot read {reader.store.name}: a postponed row routed to bucket {group.bucket} "
                                f"of {self.unit.buckets}")
            n = group.rows.num_rows
            # numbered in the group's merge order, (key, sequence fields, arrival), as the writer
            # the compaction replays them through numbers them (`BucketRouter.route`)
            seq = pa.array(np.arange(buf.next_sequence, buf.next_sequence + n, dtype=np.int64))
            buf.next_sequence += n
            chunk = group.rows.append_column(SEQUENCE_NUMBER, seq)
            if reader.lookup_levels:  # postponed rows are level-0 files' (lsm/lookup_merge.py)
                chunk = with_level(chunk, 0)
            chunk = chunk.select(columns).cast(self.unified)
            buf.tables.append(chunk)
            buf.nbytes += chunk.nbytes
            self.buffered_bytes += chunk.nbytes
        if self.buffered_bytes > self.budget:
            self._spill_all()

    def _spill_all(self) -> None:
        if not self.spillable:
            raise LakeError(
                f"Cannot read {self.reader.store.name}: the rows postponed in partition "
                f"{self.unit.partition_values} outgrow write-buffer-size ({self.budget} bytes) and "
                "write-buffer-spillable is false; enable it or raise write-buffer-size (as Paimon's "
                "\"Postpone merge read buffer is full\")")
        for buf in self.buffers.values():
            if not buf.tables:
                continue
            if not self.spill.has_room(buf.nbytes):
                raise LakeError(
                    f"Cannot read {self.reader.store.name}: the rows postponed in partition "
                    f"{self.unit.partition_values} outgrow write-buffer-spill.max-disk-size")
            self.spill.spill(buf)
        self.buffered_bytes = 0

    def runs(self, bucket: int) -> list[Iterator[pa.Table]]:
        """The bucket's routed rows as key-sorted inputs of whole keys (spilled runs, then the
        buffered rest); the buffer lets go of its rows."""
        buf = self.buffers[bucket]
        inputs: list[Iterator[pa.Table]] = [run.batches() for run in buf.runs]
        if buf.tables:
            rest = buf.tables[0] if len(buf.tables) == 1 else self.spill.sort_chunk(pa.concat_tables(buf.tables))
            buf.tables.clear()
            self.buffered_bytes -= buf.nbytes
            buf.nbytes = 0
            inputs.append(key_batches(rest, self.spill.keys))
        return inputs

    def cleanup(self) -> None:
        self.spill.cleanup()


def _unified_schema(reader: SplitReader) -> pa.Schema:
    """One schema for the real files' and the postponed rows' chunks of a merge (every column
    nullable: a file of an older schema may hold nulls a NOT NULL field of today's does not)."""
    fields = [to_arrow_field(reader.schema.field(c)).with_nullable(True) for c in reader.split_columns]
    level = [LEVEL_FIELD] if reader.lookup_levels else []  # as `SplitReader` adds it to the real files'
    return pa.schema([*fields, pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False),
                      pa.field(VALUE_KIND, pa.int8(), nullable=False), *level])


def read_unit(reader: SplitReader, unit: PostponeMergeUnit, batch_rows: int, *,
              spill_dir: str | None = None) -> Iterator[pa.Table]:
    """The merged, filtered and projected rows of ``unit`` (as `SplitReader.read_split` gives a
    split's), bucket by bucket in batches of about ``batch_rows`` rows (at most about twice that).
    Spilled runs go under ``spill_dir`` (`lake_assets.ops.spill.spill_root`) and are removed when
    the read ends or is dropped."""
    store = reader.store
    if reader.schema.fields != store.schema.fields:
        # postponed rows are replayed as the table's current columns (`read_postpone_file`)
        raise UnsupportedFeatureError(
            f"Cannot read {store.name} with postpone.merge-on-read: the read's schema {reader.schema.id} "
            f"has other columns than the table's schema {store.schema.id}; merging postponed rows across "
            "column changes is not implemented (compact the table first)")
    unified = _unified_schema(reader)
    router = _Router(reader, unit, unified, spill_dir)
    try:
        for entry in unit.postponed:
            rows, kinds = read_postpone_file(store, entry, action="read")
            if not rows.num_rows:
                continue
            rows = conform(rows, store.schema, store.name)  # as the compaction's writer takes them
            if reader.key_filter is not None:
                # every version of a key shares its key columns: dropping keys the filter rejects
                # before the merge changes no result (Java pushes key predicates only)
                keep = pc.fill_null(reader.key_filter.mask(rows), False).to_numpy(zero_copy_only=False)
                rows, kinds = rows.filter(pa.array(keep)), kinds[keep]
            if rows.num_rows:
                router.add(rows, kinds)
        real = {s.bucket: s for s in unit.real}
        for bucket in range(unit.buckets):
            split = real.get(bucket) or Split(unit.partition, unit.partition_values, bucket, unit.buckets, [])
            yield from _merge_bucket(reader, split, router.runs(bucket), unified, batch_rows)
        # real splits of buckets beyond the count cannot exist (the count is theirs); none is lost
        missing = [b for b in real if not 0 <= b < unit.buckets]
        if missing:
            raise LakeError(f"Cannot read {store.name}: partition {unit.partition_values} has real buckets "
                            f"{missing} outside its bucket count {unit.buckets}")
    finally:
        router.cleanup()


def _merge_bucket(reader: SplitReader, split: Split, postponed: list[Iterator[pa.Table]], unified: pa.Schema,
                  batch_rows: int) -> Iterator[pa.Table]:
    """A streaming k-way merge of one bucket's real sorted runs and its postponed runs."""
    files = reader.store.visible_files(split.files, reader.schema)
    columns = reader.split_columns

    def open_file(meta: DataFileMeta) -> Iterator[pa.Table]:
        for part in reader.iter_file(split, meta, True, columns, batch_rows):
            yield part if part.schema == unified else part.cast(unified)

    def merge(chunk: pa.Table) -> pa.Table:
        merged = sort_and_merge(chunk, reader.key_names, reader.merge_function, reader.sequence_fields,
                                reader.sequence_descending)
        retract = is_retract(merged.column(VALUE_KIND).to_numpy())
        if retract.any():  # retractions only cancel older rows; readers never see them
            merged = merged.filter(pa.array(~retract))
        return merged.select(columns)

    inputs: list[Iterator[pa.Table]] = [chained(run, open_file) for run in split_into_runs(files, reader.key_types)]
    inputs += postponed
    if not inputs:
        return
    for merged in merge_sorted(inputs, reader.key_names, merge, min_rows=batch_rows, max_step_rows=batch_rows):
        if merged.num_rows:
            yield reader.output_rows(merged, split)
        del merged

