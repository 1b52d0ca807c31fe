"""Batch reads: planning splits into Spark partitions, and reading one partition as Arrow batches.

Planning (`plan_read`) is a pure function of the table and the options, so tests can check what
Spark will be asked to read without starting Spark.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from lake_assets.errors import OptionError, SchemaError
from lake_assets.ops.read import SplitReader, sections
from lake_assets.ops.scan import Split
from lake_assets.ops.stream import ROW_KIND, ChangeReader, ChangeSplit, snapshot_changes
from lake_assets.options import parse_memory_size
from lake_assets.predicate import Predicate
from lake_assets.spark.filters import Clauses, Term, parse_filter_option, push_filters
from lake_assets.spark.schema import spark_arrow_schema, to_spark_batches
from lake_assets.spark.source_options import FILTER, SPLIT_TARGET_SIZE, SourceOptions
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.table import Table

DEFAULT_SPLIT_TARGET_SIZE = 128 * 1024 * 1024


@dataclass
class SplitPartition(InputPartition):
    """One Spark partition: a split (whole bucket, or a size-bounded part of it)."""

    split: Split


@dataclass
class ChangePartition(InputPartition):
    """One Spark partition of an incremental or streaming read: one snapshot's changes of a bucket."""

    split: ChangeSplit


def pack_files(files: Sequence[DataFileMeta], target_size: int) -> list[list[DataFileMeta]]:
    """Consecutive groups of files of about ``target_size`` bytes (a file larger than that is alone)."""
    groups: list[list[DataFileMeta]] = []
    size = 0
    for f in files:
        if groups and size + f.file_size <= target_size:
            groups[-1].append(f)
            size += f.file_size
        else:
            groups.append([f])
            size = f.file_size
    return groups


def divide_split(table: Table, split: Split, target_size: int) -> list[Split]:
    """Cut a large split into independent parts of about ``target_size`` bytes.

    Append tables' files are independent. A primary-key bucket must be merged per section (files
    with overlapping key ranges), and sections are independent, so whole sections are packed.
    """
    if split.size_bytes <= target_size:
        return [split]
    if table.primary_keys:
        schema = table.schema
        key_types = schema.types(list(schema.trimmed_primary_keys))
        visible = table.visible_files(split.files, schema)
        units = sections(visible, key_types)
    else:
        units = [[f] for f in sorted(split.files, key=lambda f: f.min_sequence_number)]
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
    return [Split(split.partition, split.partition_values, split.bucket, split.total_buckets, p) for p in parts]


def split_target_size(table: Table, options: SourceOptions) -> int:
    text = options.get(SPLIT_TARGET_SIZE) or table.options.get("source.split.target-size")
    return DEFAULT_SPLIT_TARGET_SIZE if text is None else parse_memory_size(text, "source.split.target-size")


def plan_read(table: Table, options: SourceOptions, filters: Clauses | None = None) -> list[InputPartition]:
    """The Spark partitions of a read: a snapshot (time travel or latest) or an incremental range."""
    if options.is_incremental:
        return [ChangePartition(s) for s in plan_changes(table, options)]
    snap = table.resolve_snapshot(**options.time_travel())
    if snap is None:
        return []
    splits = table.plan(snapshot=snap, filter=filters or None)
    target = split_target_size(table, options)
    return [SplitPartition(part) for s in splits for part in divide_split(table, s, target)]


def plan_changes(table: Table, options: SourceOptions) -> list[ChangeSplit]:
    """Change splits of the snapshots in ``(start, end]`` of ``incremental-between``."""
    start, end = options.incremental_range()

    def resolve(x: int | str) -> int:
        return table.tag_manager().get(x).snapshot.id if isinstance(x, str) else x

    lo, hi = resolve(start), resolve(end)
    source = options.incremental_source()
    out: list[ChangeSplit] = []
    for sid in range(lo + 1, hi + 1):
        out += snapshot_changes(table, table.snapshot_manager.snapshot(sid), source)  # type: ignore[arg-type]
    return out


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
            arrow = self._table().arrow_schema
            self.clauses = parse_filter_option(text, {f.name: f.type for f in arrow})

    def _table(self) -> Table:
        return self.options.table(self.schema_id)

    def filters(self) -> Clauses:
        """What rows must satisfy: the ``filter`` option AND the pushed filters (exact both)."""
        clauses = [c + self.pushed for c in self.clauses] if self.clauses else [self.pushed]
        return [c for c in clauses if c]

    def partitions(self) -> list[InputPartition]:
        return plan_read(self._table(), self.options, self.filters())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, (SplitPartition, ChangePartition)):
            return  # the placeholder Spark adds when there is nothing to read
        target = spark_arrow_schema(self.schema)
        table = self._table()
        if isinstance(partition, ChangePartition):
            changes = ChangeReader(table, self._columns(table, with_row_kind=True)).read(partition.split)
            yield from to_spark_batches(changes, target)
            return
        reader = SplitReader(table, table.schema, self._columns(table), Predicate.of(self.filters() or None))
        for data in reader.read_split(partition.split):
            yield from to_spark_batches(data, target)

    def _columns(self, table: Table, with_row_kind: bool = False) -> list[str]:
        names = [n for n in self.schema.names if not (with_row_kind and n == ROW_KIND)]
        unknown = [n for n in names if not table.schema.has_field(n)]
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
        arrow = self._table().arrow_schema
        pushed = push_filters(filters, {f.name: f.type for f in arrow})
        self.pushed = pushed.terms
        yield from pushed.rejected
