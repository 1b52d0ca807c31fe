"""Reads of row-tracking tables: the merge of data-evolution files, and the system columns.

**Data evolution** (``data-evolution.enabled = true``, Paimon 1.2+). A file may hold a subset of
the columns (``_WRITE_COLS``): an update of some columns of existing rows, or a column added
later, written by pypaimon's ``update_by_arrow_with_row_id`` or Spark's MERGE INTO. Its rows are
the rows of the base file with the same row-id range. A read merges them as Paimon HEAD's
``DataEvolutionSplitRead`` does (`merge_groups`, `read_group`):

* the files of a split are grouped by overlapping row-id ranges (``RangeHelper.mergeOverlappingRanges``);
  every file of a group must span the same range (Java checks it too);
* in a group, files are ordered by ``_MAX_SEQUENCE_NUMBER``, newest first, and each read column
  comes from the first file that holds it - matched by field id through the schema that wrote the
  file, as every read maps columns - else it is null;
* ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` come from the newest file (`with_system_columns`).

**System columns** of row-tracking tables (``SpecialFields.rowTypeWithRowTracking``): a read that
names ``_ROW_ID`` or ``_SEQUENCE_NUMBER`` gets each row's id - the file's ``_FIRST_ROW_ID`` plus
the row's position in the file - and the file's ``_MAX_SEQUENCE_NUMBER``; a file that stores
them as columns (a Paimon HEAD compaction's output) gives its stored values where they are not
null, as Java's ``DataFileRecordReader`` falls back from the stored value to the computed one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.data_file import read_data_file
from lake_assets.ops.file_rows import check_rows_read, checked_row_count
from lake_assets.ops.row_tracking import ROW_ID, SEQUENCE_NUMBER, row_id_range, row_tracking_enabled
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.schema import TableSchema

if TYPE_CHECKING:
    from lake_assets.ops.read import SplitReader
    from lake_assets.ops.scan import Split
    from lake_assets.store.file_store import FileStore

#: The system columns' types: BIGINT, nullable as Java's readers read them
#: (``rowTypeWithRowTracking(rowType, true, true)``): a file with neither a first row id nor
#: stored ids gives null ids.
SYSTEM_FIELDS = {ROW_ID: pa.field(ROW_ID, pa.int64()), SEQUENCE_NUMBER: pa.field(SEQUENCE_NUMBER, pa.int64())}


def system_columns(schema: TableSchema) -> dict[str, pa.Field]:
    """The system columns a read of a table with ``schema`` may ask for, by name (none without
    row tracking)."""
    return dict(SYSTEM_FIELDS) if row_tracking_enabled(schema.options) else {}


def merge_groups(files: Sequence[DataFileMeta], table: str) -> list[list[DataFileMeta]]:
    """The files of one split grouped by overlapping row-id ranges (in row-id order), each group
    newest first (by max sequence number; ties keep the manifest's order)."""
    ranged = ranged_files(files, f"read {table}", table)
    return [sorted(group, key=lambda f: -f.max_sequence_number) for group in overlap_groups(ranged, f"read {table}")]


def ranged_files(files: Sequence[DataFileMeta], action: str, table: str) -> list[tuple[int, int, DataFileMeta]]:
    """``(first row id, last row id, file)`` of a data-evolution table's files, in row-id order; a
    file without a first row id is damaged metadata: "Cannot {action}: ..."."""
    ranged: list[tuple[int, int, DataFileMeta]] = []
    for f in files:
        r = row_id_range(f, table)
        if r is None:
            raise CorruptMetadataError(
                f"Cannot {action}: data file {f.file_name} of a data-evolution table has no _FIRST_ROW_ID")
        ranged.append((r[0], r[1], f))
    ranged.sort(key=lambda t: (t[0], t[1]))
    return ranged


def overlap_groups(ranged: Sequence[tuple[int, int, DataFileMeta]], action: str) -> list[list[DataFileMeta]]:
    """Files with their row-id ranges (sorted by first id) grouped by overlapping ranges, in order.
    Paimon requires the files of one group to span the same range (a column update covers a whole
    range); anything else is damaged metadata: "Cannot {action}: ..."."""
    groups: list[list[tuple[int, int, DataFileMeta]]] = []
    end = -1
    for lo, hi, f in ranged:
        if groups and lo <= end:
            groups[-1].append((lo, hi, f))
            end = max(end, hi)
        else:
            groups.append([(lo, hi, f)])
            end = hi
    for group in groups:
        if len({(lo, hi) for lo, hi, _ in group}) > 1:
            names = ", ".join(f"{f.file_name} [{lo}, {hi}]" for lo, hi, f in group)
            raise CorruptMetadataError(
                f"Cannot {action}: data files of overlapping row-id ranges must span the same range "
                f"(as Paimon requires), got {names}")
    return [[f for _, _, f in group] for group in groups]


def check_disjoint_ranges(files: Sequence[DataFileMeta], table: str) -> None:
    """Refuse files of a row-tracking table (without data evolution) whose row-id ranges overlap:
    every commit gives new files fresh ids, so no Paimon writer leaves two live files sharing one,
    and reading them would give two rows one ``_ROW_ID``. Files without a first row id (ids
    stored in the file, or none) are not ranged."""
    ranged = sorted((r[0], r[1], f.file_name) for f in files if (r := row_id_range(f, table)) is not None)
    end, name = -1, ""
    for lo, hi, other in ranged:
        if lo <= end:
            raise CorruptMetadataError(
                f"Cannot read {table}: data files {name} and {other} hold overlapping row ids (up to {end}, "
                f"from {lo}); a row-tracking table gives each row its own id")
        if hi > end:
            end, name = hi, other


def needs_merge(group: Sequence[DataFileMeta]) -> bool:
    """Whether a group is more than one whole file (a lone file of all columns is read as it is)."""
    return len(group) > 1 or group[0].write_cols is not None


def held_field_ids(store: FileStore, f: DataFileMeta) -> set[int]:
    """Ids of the table columns ``f`` holds (its ``_WRITE_COLS`` in the schema that wrote it)."""
    schema = store.schema_by_id(f.schema_id)
    if f.write_cols is None:
        return {field.id for field in schema.fields}
    return {schema.field(n).id for n in f.write_cols if schema.has_field(n)}


def _sources(reader: SplitReader, group: Sequence[DataFileMeta]) -> tuple[list[list[str]], dict[str, int]]:
    """The split columns each file of ``group`` gives (newest file holding a column wins, matched
    by field id), and which file gives each column (absent: no file holds it)."""
    by_file: list[list[str]] = [[] for _ in group]
    held = [held_field_ids(reader.store, f) for f in group]
    source: dict[str, int] = {}
    for name in reader.split_columns:
        fid = reader.schema.field(name).id
        for i, ids in enumerate(held):
            if fid in ids:
                by_file[i].append(name)
                source[name] = i
                break
    return by_file, source


def _assemble(reader: SplitReader, group: Sequence[DataFileMeta], source: dict[str, int],
              parts: dict[int, pa.Table], rows: int) -> pa.Table:
    """``rows`` merged rows from the files' ``parts`` (aligned slices of one stretch of the range)."""
    arrays: list[pa.ChunkedArray | pa.Array] = []
    fields: list[pa.Field] = []
    for name in reader.split_columns:
        held_by = source.get(name)
        if held_by is None:
            lone = len(group) == 1 and reader.lone_files_null_fill  # Java reads it through the file's reader
            if not reader.schema.field(name).type.nullable and not lone:  # Java's createUnionReader checks it
                raise CorruptMetadataError(
                    f"Cannot read {reader.store.name}: column {name} is NOT NULL but no file of the row-id range "
                    f"of {group[0].file_name} holds it")
            field = reader.schema.arrow_schema.field(name).with_nullable(True)
            arrays.append(pa.nulls(rows, field.type))
        else:
            field = parts[held_by].schema.field(name)
            arrays.append(parts[held_by].column(name))
        fields.append(field)
    if not arrays:
        # no file column asked for (partition or system columns only): the rows still count, as
        # Java reads such a range through one file's reader
        return pa.table({"rows": pa.nulls(rows)}).select([])
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _row_count_error(reader: SplitReader, group: Sequence[DataFileMeta], f: DataFileMeta, got: str) -> Exception:
    return CorruptMetadataError(
        f"Cannot read {reader.store.name}: data file {f.file_name} has {got} rows, its manifest entry and "
        f"the other files of its row-id range {group[0].row_count}")


def _group_rows(reader: SplitReader, split: Split, group: Sequence[DataFileMeta], by_file: Sequence[object]) -> int:
    """The rows of a merge group: its manifest count, which each file read is checked against;
    when no file column is read (partition or system columns only), the first file's own count,
    checked against the manifest's before anything is sized by it (`ops.file_rows`)."""
    if any(by_file):
        return group[0].row_count
    path = reader.store.data_file_path(split.partition, split.bucket, group[0])
    return checked_row_count(reader.store, path, group[0])


def read_group(reader: SplitReader, split: Split, group: Sequence[DataFileMeta]) -> pa.Table:
    """The rows of one merge group: each of the reader's split columns from the newest file that
    holds it (nulls when none does), plus the system columns the read asks for."""
    by_file, source = _sources(reader, group)
    rows = _group_rows(reader, split, group, by_file)
    parts: dict[int, pa.Table] = {}
    for i, names in enumerate(by_file):
        if names:
            part = reader.read_file(split, group[i], False, names)
            if part.num_rows != rows:
                raise _row_count_error(reader, group, group[i], str(part.num_rows))
            parts[i] = part
    return with_system_columns(reader, split, group[0], _assemble(reader, group, source, parts, rows), 0)


def iter_group(reader: SplitReader, split: Split, group: Sequence[DataFileMeta], batch_rows: int
               ) -> Iterator[pa.Table]:
    """`read_group` in batches of at most ``batch_rows`` rows: the files of the range are read side
    by side, each batch by batch, so the merge holds about one batch of each file at a time
    (Java's ``DataEvolutionFileReader`` reads its files' batches in step too)."""
    by_file, columns_from = _sources(reader, group)
    rows = _group_rows(reader, split, group, by_file)
    readers = {i: reader.iter_file(split, group[i], False, names, batch_rows)
               for i, names in enumerate(by_file) if names}
    pending: dict[int, list[pa.Table]] = {i: [] for i in readers}
    source = system_source(reader, split, group[0]) if reader.system_columns else None
    done = 0
    while done < rows:
        want = min(batch_rows, rows - done)
        parts: dict[int, pa.Table] = {}
        for i, it in readers.items():
            have = sum(t.num_rows for t in pending[i])
            while have < want:  # a file's batches need not end where another's do (row groups)
                more = next(it, None)
                if more is None:
                    raise _row_count_error(reader, group, group[i], str(done + have))
                pending[i].append(more)
                have += more.num_rows
            # one chunk per column, so that the merged batch stays one record batch
            whole = pa.concat_tables(pending[i]).combine_chunks() if len(pending[i]) != 1 else pending[i][0]
            parts[i] = whole.slice(0, want)
            pending[i] = [whole.slice(want)] if have > want else []
        merged = _assemble(reader, group, columns_from, parts, want)
        yield with_system_columns(reader, split, group[0], merged, done, source)
        done += want
    for i, it in readers.items():
        if pending[i] or any(t.num_rows for t in it):
            raise _row_count_error(reader, group, group[i], f"more than {rows}")


def raw_units(reader: SplitReader, split: Split) -> list[DataFileMeta]:
    """The files a read of a data-evolution ``split`` returns one by one: the newest file of each
    merge group, in row-id order; each group is recorded for `read_raw`."""
    groups = merge_groups(split.files, reader.store.name)
    for group in groups:
        reader.merge_units[(split.partition, split.bucket, group[0].file_name)] = group
    return [g[0] for g in groups]


def _group_of(reader: SplitReader, split: Split, meta: DataFileMeta) -> list[DataFileMeta] | None:
    key = (split.partition, split.bucket, meta.file_name)
    group = reader.merge_units.get(key)
    if group is None:  # the split was planned by another reader (a Spark task's, say)
        raw_units(reader, split)
        group = reader.merge_units.get(key)
    return group


def read_raw(reader: SplitReader, split: Split, meta: DataFileMeta, *, use_threads: bool | None) -> pa.Table:
    """The rows one of the raw files of ``split`` gives (`SplitReader.raw_files`), before
    `SplitReader.output_rows`: the merge of its group on a data-evolution table, the file with the
    system columns the read asks for otherwise."""
    if reader.data_evolution:
        group = _group_of(reader, split, meta)
        if group is not None and needs_merge(group):
            return read_group(reader, split, group)
    data = reader.read_file(split, meta, False, reader.split_columns, use_threads=use_threads)
    return with_system_columns(reader, split, meta, data, 0)


def iter_raw(reader: SplitReader, split: Split, meta: DataFileMeta, with_kind: bool, batch_rows: int
             ) -> Iterator[pa.Table]:
    """`read_raw` in batches of at most ``batch_rows`` rows (a merge group's files read side by
    side: `iter_group`), each finished (`SplitReader.output_rows`)."""
    if reader.data_evolution:
        group = _group_of(reader, split, meta)
        if group is not None and needs_merge(group):
            for part in iter_group(reader, split, group, batch_rows or max(group[0].row_count, 1)):
                yield reader.output_rows(part, split)
            return
    start = 0
    source = system_source(reader, split, meta) if reader.system_columns else None
    for part in reader.iter_file(split, meta, with_kind, reader.split_columns, batch_rows):
        n = part.num_rows
        part = with_system_columns(reader, split, meta, part, start, source)
        start += n
        yield reader.output_rows(part, split, with_kind)


@dataclass(frozen=True)
class SystemSource:
    """What the system columns of one file's rows come from, found once per file (a batched read
    would otherwise re-read the stored ids and re-scan the deletion vector at every batch): the
    positions of its kept rows (None: every row), and the system columns it stores itself."""

    kept: np.ndarray | None
    stored: dict[str, pa.ChunkedArray]


def system_source(reader: SplitReader, split: Split, meta: DataFileMeta) -> SystemSource:
    """The `SystemSource` of ``meta`` for ``reader``'s read."""
    keep = reader.kept_rows(split, meta)
    return SystemSource(np.flatnonzero(keep) if keep is not None else None,
                        _stored_system_columns(reader, split, meta))


def with_system_columns(reader: SplitReader, split: Split, meta: DataFileMeta, data: pa.Table, start: int,
                        source: SystemSource | None = None) -> pa.Table:
    """``data`` (the rows of ``meta`` from its ``start``-th kept row on) with the system columns
    the read asks for appended; ``source``: the file's `system_source`, if known."""
    if not reader.system_columns:
        return data
    n = data.num_rows
    if source is None:
        source = system_source(reader, split, meta)
    positions = source.kept[start:start + n] if source.kept is not None else np.arange(start, start + n)
    stored = source.stored
    for name in reader.system_columns:
        if name == ROW_ID:
            ids = row_id_range(meta, reader.store.name)  # checked: numpy would wrap past BIGINT
            computed = pa.array(positions + ids[0], pa.int64()) if ids is not None else None
        else:
            computed = pa.array(np.full(n, meta.max_sequence_number, np.int64), pa.int64())
        held = stored.get(name)
        if held is not None:
            held = held.take(pa.array(positions))
            column = held if computed is None else pc.coalesce(held, computed)
        elif computed is not None:
            column = computed
        else:  # neither a first row id nor stored ids (Java reads null too)
            column = pa.nulls(n, pa.int64())
        data = data.append_column(SYSTEM_FIELDS[name], column)
    return data


def _stored_system_columns(reader: SplitReader, split: Split, meta: DataFileMeta) -> dict[str, pa.ChunkedArray]:
    """The system columns ``meta`` stores itself (named in its ``_WRITE_COLS``), all rows."""
    wanted = [n for n in reader.system_columns if meta.write_cols is not None and n in meta.write_cols]
    if not wanted:
        return {}
    path = reader.store.data_file_path(split.partition, split.bucket, meta)
    raw = read_data_file(reader.store.file_io, path, wanted, meta.file_size)
    check_rows_read(reader.store, path, meta, raw.num_rows)
    return {n: raw.column(n) for n in wanted}


__all__ = ["SYSTEM_FIELDS", "SystemSource", "check_disjoint_ranges", "held_field_ids", "iter_group", "iter_raw",
           "merge_groups", "needs_merge", "raw_units", "read_group", "read_raw", "system_columns", "system_source",
           "with_system_columns"]
