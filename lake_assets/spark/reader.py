"""Batch reads: planning splits into Spark partitions, and reading one partition as Arrow batches.

Planning (`plan_read`) is a pure function of the table and the options, so tests can check what
Spark will be asked to read without starting Spark.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from lake_assets.errors import OptionError, SchemaError
from lake_assets.lsm.run_partition import sections
from lake_assets.ops import postpone_merge_read
from lake_assets.ops.data_evolution_read import system_columns
from lake_assets.ops.postpone_merge_read import PostponeMergeUnit
from lake_assets.ops.read import SplitReader
from lake_assets.ops.row_range_prune import filter_schema
from lake_assets.ops.scan import Split
from lake_assets.ops.streaming_read import stream_bounds
from lake_assets.options import parse_memory_size
from lake_assets.parallelism import usable_cpus
from lake_assets.predicate import Predicate
from lake_assets.spark.fallback_plan import fallback_read_store, has_fallback, plan_fallback
from lake_assets.spark.filters import Clauses, Term, parse_filter_option, push_filters
from lake_assets.spark.native_read import MERGE_SECTIONS_ONLY, PLANNED_SNAPSHOT, NativeFiles
from lake_assets.spark.schema import spark_arrow_schema, to_spark_batches
from lake_assets.spark.source_options import (
    FILTER,
    SPLIT_MIN_PARTITIONS,
    SPLIT_OPEN_FILE_COST,
    SPLIT_TARGET_SIZE,
    SourceOptions,
)
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.row_kind import ROW_KIND
from lake_assets.spec.snapshot import Snapshot
from lake_assets.table import Table
from lake_assets.table_support import Op

if TYPE_CHECKING:  # change reads are imported where they run: a batch read's worker needs none of them
    from lake_assets.ops.stream import ChangeSplit

DEFAULT_SPLIT_TARGET_SIZE = 128 * 1024 * 1024
# What opening a file "weighs" when splits are packed into partitions. Paimon's and Spark's 4 MB
# fits object stores (tens of milliseconds per GET). On a local or mounted file system opening a
# data file costs about a millisecond, while each Spark task of a Python source costs 50-100 ms:
# with 4 MB, a table of many small level-0 files became hundreds of tasks that were mostly
# overhead (SF 0.1 TPC-H lineitem: 67 tasks, 3x slower than 5 tasks at 256 KB).
DEFAULT_SPLIT_OPEN_FILE_COST = 4 * 1024 * 1024
DEFAULT_LOCAL_SPLIT_OPEN_FILE_COST = 256 * 1024


@dataclass
class SplitPartition(InputPartition):
    """One Spark partition: splits (whole buckets, or size-bounded parts of one), read in turn.

    Several small splits share a partition because every Spark task of a Python source has a fixed
    cost (tens of milliseconds: scheduling, the worker round trip, Arrow stream setup) that is
    larger than reading a small bucket; see `pack_splits`.
    """

    splits: list[Split]
    snapshot_id: int | None = None  # planned from: tells a lost race with expiry from corruption
    # splits of the table's fallback branch (scan.fallback-branch): its name and the schema planned with
    branch: str | None = None
    schema_id: int | None = None


@dataclass
class PostponeMergePartition(InputPartition):
    """One Spark partition of a ``postpone.merge-on-read`` read: a table partition whose waiting
    rows are merged into its real buckets (`lake_assets.ops.postpone_merge_read.read_unit`)."""

    unit: PostponeMergeUnit
    snapshot_id: int | None = None


@dataclass
class ChangePartition(InputPartition):
    """One Spark partition of an incremental or streaming read: one snapshot's changes of a bucket."""

    split: ChangeSplit


def divide_split(table: Table, split: Split, target_size: int) -> list[Split]:
    """Cut a large split into independent parts of about ``target_size`` bytes.

    Append tables' files are independent. A primary-key bucket must be merged per section (files
    with overlapping key ranges), and sections are independent, so whole sections are packed.
    """
    if split.size_bytes <= target_size:
        return [split]
    schema = table.schema
    # files a read returns one by one, without a merge (append tables, deletion-vector buckets
    # above level 0: `SplitReader.raw_files`, the decision every reader takes) are independent
    reader = SplitReader(table.store, schema)
    raw = reader.raw_files(split)
    if raw is not None:
        # a data-evolution table's merge group stays whole (ops/data_evolution_read.py)
        units = [reader.merge_units.get((split.partition, split.bucket, f.file_name), [f]) for f in raw]
    else:
        key_types = schema.types(list(schema.trimmed_primary_keys))
        units = sections(table.store.visible_files(split.files, schema), key_types)
    parts: list[list[DataFileMeta]] = []
    size = 0
    for unit in units:
        unit_size = sum(f.file_size for f in unit)
        if parts and size + unit_size <= target_size:
            parts[-1].extend(unit)
            size += unit_size
        else:
            parts.append(list(unit))
            size = unit_size
    return [Split(split.partition, split.partition_values, split.bucket, split.total_buckets, p, split.dv_entries)
            for p in parts]


def _memory_option(table: Table, options: SourceOptions, keys: tuple[str, ...], default: int) -> int:
    """A size read option, else the table option of the same (Paimon) name, else ``default``."""
    text = options.get(keys) or table.options.get(keys[0])
    return default if text is None else parse_memory_size(text, keys[0])


def split_target_size(table: Table, options: SourceOptions) -> int:
    return _memory_option(table, options, SPLIT_TARGET_SIZE, DEFAULT_SPLIT_TARGET_SIZE)


def split_open_file_cost(table: Table, options: SourceOptions) -> int:
    # opening a file costs a request round trip where parallel reads pay off (object stores)
    remote = table.file_io.parallel_reads_pay_off
    default = DEFAULT_SPLIT_OPEN_FILE_COST if remote else DEFAULT_LOCAL_SPLIT_OPEN_FILE_COST
    return _memory_option(table, options, SPLIT_OPEN_FILE_COST, default)


def min_partitions(options: SourceOptions) -> int:
    """``source.split.min-partitions``, else twice the CPUs this (planning) process may use.

    The planning worker runs on the driver and cannot see Spark's ``defaultParallelism``; in
    local mode the driver's CPUs are the executors' CPUs. On a cluster, set the option to the
    number of executor cores for small tables (large tables are cut by the target size anyway).
    Spark sets ``OMP_NUM_THREADS`` for task workers only, not for planning workers, so
    `usable_cpus` is the driver's affinity (and cgroup quota) here.
    """
    n = options.get_int(SPLIT_MIN_PARTITIONS)
    if n is not None:
        if n < 1:
            raise OptionError(f"Option 'source.split.min-partitions' must be at least 1, got {n}")
        return n
    return 2 * usable_cpus()


def split_weight(split: Split, open_file_cost: int) -> int:
    """Paimon's split weight: every file counts at least ``open_file_cost`` bytes."""
    return sum(max(f.file_size, open_file_cost) for f in split.files)


def pack_splits(splits: Sequence[Split], target_size: int, open_file_cost: int, min_parts: int) -> list[list[Split]]:
    """Group splits into Spark partitions of about ``max_bytes`` of weight each.

    ``max_bytes`` = min(target size, max(open-file cost, total weight / ``min_parts``)), as
    Spark's file sources size their partitions (``maxPartitionBytes``, ``openCostInBytes``, the
    default parallelism): big tables get partitions of the target size, small ones at least
    ``min_parts`` partitions so every core has work. Heaviest first, each into the current
    partition while it fits (Spark's next-fit), so sizes stay even. Each split stays whole: a
    primary-key split is a merge unit.
    """
    if not splits:
        return []
    weights = [split_weight(s, open_file_cost) for s in splits]
    max_bytes = min(target_size, max(open_file_cost, sum(weights) // max(1, min_parts)))
    order = sorted(range(len(splits)), key=lambda i: -weights[i])
    groups: list[list[Split]] = []
    size = 0
    for i in order:
        if groups and size + weights[i] <= max_bytes:
            groups[-1].append(splits[i])
            size += weights[i]
        else:
            groups.append([splits[i]])
            size = weights[i]
    return groups


def plan_read(table: Table, options: SourceOptions, filters: Clauses | None = None) -> list[InputPartition]:
    """The Spark partitions of a read: a snapshot (time travel or latest) or an incremental range."""
    if options.is_incremental:
        return [ChangePartition(s) for s in plan_changes(table, options)]
    planned = options.get_int(PLANNED_SNAPSHOT)
    snap = table.snapshot(planned) if planned is not None else table.resolve_snapshot(**options.time_travel())
    if has_fallback(table):
        return _plan_with_fallback(table, options, snap, filters)
    if snap is None:
        return []
    if postpone_merge_read.configured(table.schema):
        return _plan_postpone_merge(table, options, snap, filters)
    splits = table.plan(snapshot=snap, filter=filters or None)
    if options.get_bool(MERGE_SECTIONS_ONLY):
        splits = NativeFiles(table, table.schema).merge_only(splits)  # read_table reads the rest
    target = split_target_size(table, options)
    parts = [part for s in splits for part in divide_split(table, s, target)]
    groups = pack_splits(parts, target, split_open_file_cost(table, options), min_partitions(options))
    return [SplitPartition(g, snap.id) for g in groups]


def _plan_with_fallback(table: Table, options: SourceOptions, snap: Snapshot | None,
                        filters: Clauses | None) -> list[InputPartition]:
    """A read of a table carrying ``scan.fallback-branch``: its own splits' partitions, then those
    of the fallback branch's splits of the partitions it lacks (`lake_assets.spark.fallback_plan`)."""
    own, fallback, fb_snap, extra = plan_fallback(table, options, snap, filters or None)
    target = split_target_size(table, options)
    cost = split_open_file_cost(table, options)
    out: list[InputPartition] = []
    for source, at, splits in ((table, snap, own), (fallback, fb_snap, extra)):
        if source is None or at is None or not splits:
            continue
        parts = [part for s in splits for part in divide_split(source, s, target)]
        branch = None if source is table else (source.store.paths.branch or "main")
        out += [SplitPartition(g, at.id, branch, source.schema.id if branch else None)
                for g in pack_splits(parts, target, cost, min_partitions(options))]
    return out


def _plan_postpone_merge(
    table: Table, options: SourceOptions, snap: Snapshot, filters: Clauses | None
) -> list[InputPartition]:
    """A read of a table with ``postpone.merge-on-read``: partitions without waiting rows as any
    read's splits, and each partition with waiting rows one task that merges them
    (`lake_assets.ops.postpone_merge_read`; Paimon shuffles them to their buckets instead)."""
    table.store.require(Op.READ)
    pred = Predicate.of(filters or None)
    if pred is not None:
        pred = pred.bind(table.schema.arrow_schema, table.name)
    plan = postpone_merge_read.plan_merge_read(table.store, snap, pred, table.schema)
    target = split_target_size(table, options)
    parts = [part for s in plan.splits for part in divide_split(table, s, target)]
    groups = pack_splits(parts, target, split_open_file_cost(table, options), min_partitions(options))
    merged: list[InputPartition] = [PostponeMergePartition(unit, snap.id) for unit in plan.units]
    return [*merged, *(SplitPartition(g, snap.id) for g in groups)]


def plan_changes(table: Table, options: SourceOptions) -> list[ChangeSplit]:
    """Change splits of the snapshots in ``(start, end]`` of ``incremental-between``."""
    from lake_assets.ops.stream import change_splits_between

    start, end = options.incremental_range()
    return change_splits_between(table.store, start, end, options.incremental_source())  # type: ignore[arg-type]


class LakeReader(DataSourceReader):
    """Reads a table snapshot, or an incremental range, one split per Spark partition.

    Spark gives no column pruning to Python sources: ``schema`` is the full declared schema (or the
    columns of a user-given ``.schema(...)``, which are then the only ones read). Rows are pruned
    and filtered by the ``filter`` option only; see `LakePushdownReader` for Spark's filters.
    """

    def __init__(self, options: SourceOptions, schema: StructType, schema_id: int | None) -> None:
        self.options = options
        self.schema = schema
        self.schema_id = schema_id
        self.clauses: Clauses = []  # the ``filter`` option, OR of ANDs
        self.pushed: list[Term] = []  # Spark's claimed filters, ANDed to every clause
        text = options.get(FILTER)
        if text is not None and options.is_incremental:
            raise OptionError("Option 'filter' does not apply to incremental reads (every change of a key matters)")
        if text is not None:
            self.clauses = parse_filter_option(text, self._filter_types())

    def _table(self) -> Table:
        return self.options.table(self.schema_id)

    def _filter_types(self) -> dict[str, pa.DataType]:
        """The columns a filter may name: the table's, and a row-tracking table's ``_ROW_ID`` /
        ``_SEQUENCE_NUMBER`` (the core's planner prunes files and row-id ranges by them)."""
        return {f.name: f.type for f in filter_schema(self._table().schema)}

    def filters(self) -> Clauses:
        """What rows must satisfy: the ``filter`` option AND the pushed filters (exact both)."""
        clauses = [c + self.pushed for c in self.clauses] if self.clauses else [self.pushed]
        return [c for c in clauses if c]

    def partitions(self) -> list[InputPartition]:
        return plan_read(self._table(), self.options, self.filters())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, (SplitPartition, ChangePartition, PostponeMergePartition)):
            return  # the placeholder Spark adds when there is nothing to read
        target = spark_arrow_schema(self.schema)
        table = self._table()
        if isinstance(partition, ChangePartition):
            from lake_assets.ops.stream import ChangeReader

            changes = ChangeReader(table.store, self._columns(table, with_row_kind=True))
            for part in changes.read_batches(partition.split):  # bounded by read.batch-size
                yield from to_spark_batches(part, target)
            return
        store, schema = table.store, table.schema
        if isinstance(partition, SplitPartition) and partition.branch is not None and partition.schema_id is not None:
            store, schema = fallback_read_store(table, partition.branch, partition.schema_id)
        pred = Predicate.of(self.filters() or None)
        if pred is not None:  # bound once per task, not per batch (planning bound and checked it too)
            pred = pred.bind(filter_schema(schema), table.name)
        reader = SplitReader(store, schema, self._columns(table), pred, fill_defaults=True)
        reader.snapshot_id = partition.snapshot_id
        batch_rows, _ = stream_bounds(schema.core_options)  # the table's read.batch-size
        if isinstance(partition, PostponeMergePartition):
            for data in postpone_merge_read.read_unit(reader, partition.unit, batch_rows):
                yield from to_spark_batches(data, target)
            return
        for split in partition.splits:  # one after another, each streamed in bounded batches
            for data in reader.stream_split(split, batch_rows):
                yield from to_spark_batches(data, target)

    def _columns(self, table: Table, with_row_kind: bool = False) -> list[str]:
        names = [n for n in self.schema.names if not (with_row_kind and n == ROW_KIND)]
        # a batch read of a row-tracking table may declare _ROW_ID / _SEQUENCE_NUMBER in its
        # schema (`.schema("id long, _ROW_ID long")`), as the core's reads name them
        system = system_columns(table.schema) if not with_row_kind else {}
        unknown = [n for n in names if not table.schema.has_field(n) and n not in system]
        if unknown:
            raise SchemaError(f"Table {table.name} has no columns {unknown} (declared in the read schema)")
        return names


class LakePushdownReader(LakeReader):
    """A `LakeReader` that also takes Spark's filters (``filter-pushdown=true``).

    Spark 4.3 keeps the read planned by a filter pushdown on the DataFrame's data source and reuses
    it for later queries of that DataFrame that push no filters: after ``df.filter(f).count()``,
    ``df.count()`` counts only the rows matching ``f``. So this reader is opt-in, for DataFrames
    used by one query (a fresh ``load()`` each time), and the ``filter`` option is the safe way
    to prune a reused DataFrame (options belong to the DataFrame, not to one query). It needs
    ``spark.sql.python.filterPushdown.enabled=true`` (Spark refuses the read otherwise).
    """

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Keep the filters we apply exactly (see `lake_assets.spark.filters`); return the rest."""
        if self.options.is_incremental:
            yield from filters  # change rows are not filtered: every change of a key matters
            return
        pushed = push_filters(filters, self._filter_types())
        self.pushed = pushed.terms
        yield from pushed.rejected
