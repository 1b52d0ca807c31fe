"""Filters of row-tracking tables: on ``_ROW_ID`` / ``_SEQUENCE_NUMBER``, and pruning by stats
merged across the files of a data-evolution row-id range.

**System columns in filters.** A read of a row-tracking table may filter on ``_ROW_ID`` and
``_SEQUENCE_NUMBER`` (`filter_schema` binds them as BIGINTs), as Paimon HEAD's reads push a row-id
filter down (``DataEvolutionFileStoreScan.filterByStats`` keeps a file when its range
``[_FIRST_ROW_ID, _FIRST_ROW_ID + row count - 1]`` meets the ranges the filter selects). Here a
file's (or a row-id range's) ids are its ``_ROW_ID`` stats: that exact minimum and maximum, no
null; a file storing them (a row-tracking compaction's output, no first row id) prunes by the
stored column's stats. A file's (or range's) ``_SEQUENCE_NUMBER`` is the ``_MAX_SEQUENCE_NUMBER`` of the file the
read takes it from (the newest of a range), so a filter on it prunes by that one value; a file
storing the column (a row-tracking compaction's output holds per-row values) prunes by the
column's stats, widened to its max sequence number (where a stored value is null). The rows are
filtered once the read computed the columns (`SplitReader`); the Spark source pushes both
filters here (`lake_assets.spark.reader`).

**Merged stats of data-evolution files.** Each file of a data-evolution table holds some columns of
a row-id range; a row's value of a column is the one of the newest file holding it. So a file's
own stats say nothing about the rows of its range, and Paimon HEAD prunes whole ranges instead,
by stats merged across the range's files (``DataEvolutionFileStoreScan.evolutionStats``), which
`range_may_match` follows: a column's stats are those of the newest file holding it (by max
sequence number), used only when that file is the only one of that sequence number, spans the
whole range, recorded stats for the column in the read type, and they are consistent (min <= max,
a null count within the rows); otherwise the column is unknown and prunes nothing. A column no
file of the range holds is null in every row. A filter on a column so never drops a row whose
newest value matches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_assets.errors import CorruptMetadataError
from lake_assets.ops.data_evolution_read import SYSTEM_FIELDS, merge_groups
from lake_assets.ops.row_tracking import ROW_ID, SEQUENCE_NUMBER, row_id_range, row_tracking_enabled
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.data_types import BigIntType, BinaryType, VarBinaryType
from lake_assets.spec.manifest import DataFileMeta, ManifestEntry
from lake_assets.spec.schema import TableSchema

if TYPE_CHECKING:
    from lake_assets.predicate import Predicate
    from lake_assets.store.file_store import FileStore

# The type of the stored system columns a file's stats may cover (BIGINT NOT NULL in HEAD).
_SYSTEM_STAT_TYPE = BigIntType(nullable=False)


def filter_schema(schema: TableSchema) -> pa.Schema:
    """The columns a filter of a read of ``schema``'s table may name: its fields, and on a
    row-tracking table the system columns."""
    arrow = schema.arrow_schema
    if not row_tracking_enabled(schema.options):
        return arrow
    return pa.schema([*arrow, *(f for n, f in SYSTEM_FIELDS.items() if n not in arrow.names)])


def row_ids_may_match(store: FileStore, pred: Predicate, files: Sequence[DataFileMeta]) -> bool:
    """Whether rows with the ids of ``files`` (one range, or one file) may pass ``pred``'s
    ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` terms (a file without a first row id: yes for ``_ROW_ID``)."""
    if SEQUENCE_NUMBER in pred.columns and not _sequence_numbers_may_match(store, pred, files):
        return False
    if ROW_ID not in pred.columns:
        return True
    ranges = [row_id_range(f, store.name) for f in files]
    if any(r is None for r in ranges):
        # a row-tracking compaction's output stores its ids: the column's stats (a null id reads null)
        stored = _stored_bounds(store, files[0], ROW_ID) if len(files) == 1 else None
        return stored is None or pred.test_ranges({ROW_ID: stored[0]}, {ROW_ID: stored[1]}, {ROW_ID: None},
                                                  files[0].row_count)
    lo = min(r[0] for r in ranges if r is not None)
    hi = max(r[1] for r in ranges if r is not None)
    return pred.test_ranges({ROW_ID: lo}, {ROW_ID: hi}, {ROW_ID: 0}, hi - lo + 1)


def _sequence_numbers_may_match(store: FileStore, pred: Predicate, files: Sequence[DataFileMeta]) -> bool:
    """The rows of ``files`` (one range, or one file) take ``_SEQUENCE_NUMBER`` from the newest
    file (`merge_groups`' order): its ``_MAX_SEQUENCE_NUMBER``, or the values it stores (a
    row-tracking compaction's output, one file alone), bounded by their stats."""
    newest = max(f.max_sequence_number for f in files)
    top = [f for f in files if f.max_sequence_number == newest]
    lo = hi = newest
    stored = [f for f in top if f.write_cols is not None and SEQUENCE_NUMBER in f.write_cols]
    if stored:
        if len(files) != 1:
            return True
        bounds = _stored_bounds(store, stored[0], SEQUENCE_NUMBER)
        if bounds is None:
            return True
        lo, hi = min(lo, bounds[0]), max(hi, bounds[1])  # a null stored value reads as the file's max
    rows = max(f.row_count for f in files)
    return pred.test_ranges({SEQUENCE_NUMBER: lo}, {SEQUENCE_NUMBER: hi}, {SEQUENCE_NUMBER: 0}, rows)


def _stored_bounds(store: FileStore, f: DataFileMeta, column: str) -> tuple[int, int] | None:
    """The min and max of the system ``column`` ``f`` stores, by its value stats (None: not
    stored, not recorded or not readable)."""
    names = list(f.value_stats_cols if f.value_stats_cols is not None else f.write_cols or ())
    if column not in names:
        return None
    file_schema = store.schema_by_id(f.schema_id)
    types = [file_schema.field(n).type if file_schema.has_field(n) else _SYSTEM_STAT_TYPE for n in names]
    try:
        lo = deserialize_row(f.value_stats.min_values, types)
        hi = deserialize_row(f.value_stats.max_values, types)
    except CorruptMetadataError:
        return None
    i = names.index(column)
    if len(lo) != len(names) or len(hi) != len(names):
        return None
    low, high = lo[i], hi[i]
    if not isinstance(low, int) or not isinstance(high, int) or high < low:
        return None
    return low, high


def _file_stats(store: FileStore, f: DataFileMeta) -> dict[int, tuple[Any, Any, int | None, Any]]:
    """Field id -> (min, max, null count, type) of the columns ``f`` recorded stats for: the
    columns it holds (``_WRITE_COLS``), narrowed to ``_VALUE_STATS_COLS`` when set, in the schema
    that wrote it (Paimon's ``EvolutionStatsCache``). Unreadable stats give none."""
    file_schema = store.schema_by_id(f.schema_id)
    held = [n for n in (f.write_cols if f.write_cols is not None else file_schema.field_names)
            if file_schema.has_field(n)]
    names = held if f.value_stats_cols is None else [n for n in f.value_stats_cols if n in held]
    types = file_schema.types(names)
    try:
        lo = deserialize_row(f.value_stats.min_values, types)
        hi = deserialize_row(f.value_stats.max_values, types)
    except CorruptMetadataError:
        return {}
    if len(lo) != len(names) or len(hi) != len(names):
        return {}
    counts = f.value_stats.null_counts or ()
    return {file_schema.field(n).id: (a, b, counts[i] if i < len(counts) else None, t)
            for i, (n, a, b, t) in enumerate(zip(names, lo, hi, types, strict=True))}


def _consistent(lo: Any, hi: Any, nulls: int | None, rows: int) -> bool:
    """Paimon's ``isValidStats``: a null count within the rows, both bounds or neither, and
    bounds that are ordered and not of an all-null column."""
    if nulls is not None and not 0 <= nulls <= rows:
        return False
    if (lo is None) != (hi is None):
        return False
    if lo is None:
        return True
    try:
        return (nulls is None or nulls != rows) and not hi < lo
    except TypeError:
        return False


def range_may_match(store: FileStore, group: Sequence[DataFileMeta], pred: Predicate, schema: TableSchema) -> bool:
    """Whether rows of one data-evolution row-id range (``group``: its files) may pass ``pred``,
    by its merged stats (module docstring). ``pred`` names columns as ``schema``, the read's."""
    if not row_ids_may_match(store, pred, group):
        return False
    columns = [c for c in pred.columns if schema.has_field(c)]
    if not columns:
        return True
    ranges = [row_id_range(f, store.name) for f in group]
    if any(r is None for r in ranges):
        return True
    lo_id = min(r[0] for r in ranges if r is not None)
    hi_id = max(r[1] for r in ranges if r is not None)
    rows = hi_id - lo_id + 1
    from lake_assets.ops.data_evolution_read import held_field_ids

    held = [held_field_ids(store, f) for f in group]
    stats: list[dict[int, tuple[Any, Any, int | None, Any]] | None] = [None] * len(group)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    null_counts: dict[str, int | None] = {}
    for name in columns:
        field = schema.field(name)
        holders = [i for i, ids in enumerate(held) if field.id in ids]
        if not holders:  # no file holds it: null in every row of the range
            null_counts[name] = rows
            continue
        newest = max(group[i].max_sequence_number for i in holders)
        top = [i for i in holders if group[i].max_sequence_number == newest]
        if len(top) != 1 or ranges[top[0]] != (lo_id, hi_id):
            continue
        i = top[0]
        if stats[i] is None:
            stats[i] = _file_stats(store, group[i])
        got = (stats[i] or {}).get(field.id)
        if got is None:
            continue
        lo, hi, nulls, file_type = got
        if file_type != field.type or not _consistent(lo, hi, nulls, rows):
            continue
        null_counts[name] = nulls
        if not isinstance(field.type, (BinaryType, VarBinaryType)):  # never trusted (plan.file_may_match)
            mins[name], maxs[name] = lo, hi
    return pred.test_ranges(mins, maxs, null_counts, rows)


def prune_ranges(store: FileStore, entries: Sequence[ManifestEntry], pred: Predicate,
                 schema: TableSchema) -> list[ManifestEntry]:
    """The entries of a data-evolution table whose row-id range may hold rows ``pred`` selects
    (a range is kept or dropped whole, with all its files)."""
    by_bucket: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for e in entries:
        by_bucket.setdefault((e.partition, e.bucket), []).append(e)
    kept: set[tuple[bytes, int, str]] = set()
    for (part, bucket), group_entries in by_bucket.items():
        if any(e.file.first_row_id is None for e in group_entries):  # merge_groups refuses these on read
            kept.update((part, bucket, e.file.file_name) for e in group_entries)
            continue
        for group in merge_groups([e.file for e in group_entries], store.name):
            if range_may_match(store, group, pred, schema):
                kept.update((part, bucket, f.file_name) for f in group)
    return [e for e in entries if (e.partition, e.bucket, e.file.file_name) in kept]


__all__ = ["filter_schema", "prune_ranges", "range_may_match", "row_ids_may_match"]
