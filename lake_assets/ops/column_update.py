"""Column updates of data-evolution tables: new values of some columns of existing rows, by ``_ROW_ID``.

A data-evolution table (``data-evolution.enabled``, Paimon 1.2+) takes an update of some columns
without rewriting its rows: the commit adds, for each row-id range it touches, one file holding
only the updated columns (``_WRITE_COLS``) over the whole range (``_FIRST_ROW_ID`` of the range,
its row count). Reads merge it over the range's older files, newest file first per column
(`lake_assets.ops.data_evolution_read`). This is what pypaimon 2.1's ``update_by_arrow_with_row_id``
writes (``TableUpdateByRowId._write_by_first_row_id``): rows of the range not updated keep their
current values in the new file, a column no file held yet (added by a schema change) is null there.

The commit is checked as Paimon HEAD checks such commits (``DataEvolutionConflictDetection``,
pypaimon's ``ConflictDetection``), at every attempt (`check_row_id_updates`):

* every range written must still be a live range of the latest snapshot (same partition, bucket,
  first row id and row count): a compaction or overwrite that rewrote it makes the update stale;
* no snapshot committed since the one the update read may have written one of the updated columns
  of an overlapping range (an update racing this one would otherwise be lost without notice), nor
  compacted away a file of such a range.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_assets.errors import CommitConflictError, InvalidArgumentError, UnsupportedFeatureError
from lake_assets.ops.conform import as_table, conform
from lake_assets.ops.data_evolution_read import held_field_ids, merge_groups
from lake_assets.ops.row_tracking import ROW_ID, ROW_TRACKING_FIELDS, data_evolution_enabled, row_id_range
from lake_assets.spec.manifest import DataFileMeta, FileKind, FileSource, ManifestEntry
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.ops.scan import Split
    from lake_assets.store.file_store import FileStore


@dataclasses.dataclass(frozen=True)
class RangeGroup:
    """The live files of one row-id range of a (partition, bucket), newest first."""

    partition: bytes
    partition_values: tuple[object, ...]
    bucket: int
    total_buckets: int
    first_row_id: int
    row_count: int
    files: tuple[DataFileMeta, ...]


def range_groups(store: FileStore, snap: Snapshot) -> list[RangeGroup]:
    """The row-id ranges of ``snap``'s live files, sorted by first row id."""
    from lake_assets.table_support import Op

    scan = store.file_store_scan(Op.WRITE)
    out: list[RangeGroup] = []
    for split in scan.splits(scan.live_entries(snap)):
        for group in merge_groups(split.files, store.name):
            first, _ = row_id_range(group[0], store.name) or (0, 0)
            out.append(RangeGroup(split.partition, split.partition_values, split.bucket, split.total_buckets,
                                  first, group[0].row_count, tuple(group)))
    out.sort(key=lambda g: g.first_row_id)
    return out


def update_columns_schema(schema: TableSchema, columns: Sequence[str]) -> TableSchema:
    """The schema of an update file of ``columns`` (in the table's order): the table's schema (its
    id, field ids and options) with those fields only. File indexes are not written into update
    files (pypaimon writes none either), so their options go."""
    wanted = set(columns)
    return dataclasses.replace(
        schema, fields=tuple(f for f in schema.fields if f.name in wanted), partition_keys=(), primary_keys=(),
        options={k: v for k, v in schema.options.items() if not k.startswith("file-index.")})


def _check_columns(schema: TableSchema, names: Sequence[str], table: str) -> list[str]:
    if ROW_ID not in names:
        raise InvalidArgumentError(f"Cannot update {table}: the data needs a {ROW_ID} column naming the rows")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InvalidArgumentError(f"Cannot update {table}: duplicate columns {dup}")
    columns = [n for n in names if n != ROW_ID]
    if not columns:
        raise InvalidArgumentError(f"Cannot update {table}: the data holds {ROW_ID} only, no column to update")
    system = [n for n in columns if n in ROW_TRACKING_FIELDS]
    unknown = [n for n in columns if not schema.has_field(n) and n not in ROW_TRACKING_FIELDS]
    if system or unknown:
        what = f"system columns {system} are not updatable" if system else f"unknown columns {unknown}"
        raise InvalidArgumentError(f"Cannot update {table}: {what} (columns: {list(schema.field_names)})")
    keys = [n for n in columns if n in schema.partition_keys]
    if keys:
        raise InvalidArgumentError(
            f"Cannot update {table}: partition columns {keys} cannot be updated (a row stays in its partition's "
            "files; delete and write it again to move it)")
    return [n for n in schema.field_names if n in columns]  # the table's order, as the file holds them


def _row_ids(data: pa.Table, table: str) -> np.ndarray:
    col = data.column(ROW_ID)
    if not pa.types.is_integer(col.type):
        raise InvalidArgumentError(f"Cannot update {table}: {ROW_ID} must be an integer column, got {col.type}")
    if col.null_count:
        raise InvalidArgumentError(f"Cannot update {table}: {col.null_count} rows have a null {ROW_ID}")
    raw = col.to_numpy()
    if col.type == pa.uint64() and len(raw) and raw.max() > np.iinfo(np.int64).max:
        raise InvalidArgumentError(f"Cannot update {table}: {ROW_ID} {int(raw.max())} is no row id")
    ids: np.ndarray = raw.astype(np.int64)
    uniq, counts = np.unique(ids, return_counts=True)
    if len(uniq) != len(ids):
        dup = uniq[counts > 1][:5].tolist()
        raise InvalidArgumentError(f"Cannot update {table}: duplicate {ROW_ID} values, e.g. {dup}")
    return ids


def _locate(groups: Sequence[RangeGroup], ids: np.ndarray, snap: Snapshot, table: str) -> np.ndarray:
    """The index in ``groups`` of each row id's range; ids no live range holds are refused."""
    starts = np.array([g.first_row_id for g in groups], np.int64)
    ends = np.array([g.first_row_id + g.row_count - 1 for g in groups], np.int64)
    where: np.ndarray = np.searchsorted(starts, ids, side="right") - 1
    ok = where >= 0
    ok[ok] = ids[ok] <= ends[where[ok]]
    if not ok.all():
        missing = np.sort(ids[~ok])[:5].tolist()
        raise InvalidArgumentError(
            f"Cannot update {table}: no row of snapshot {snap.id} has {ROW_ID} {missing[0]}"
            + (f" (nor {missing[1:]})" if len(missing) > 1 else "")
            + f"; its row ids are below {snap.next_row_id or 0}, in the ranges of its live files")
    return where


def _current_values(store: FileStore, schema: TableSchema, group: RangeGroup, columns: list[str]) -> pa.Table:
    """The range's current values of ``columns`` (the merge of its files; no defaults filled in:
    the update file keeps what is stored)."""
    from lake_assets.ops.read import SplitReader, concat_or_empty
    from lake_assets.ops.scan import Split

    reader = SplitReader(store, schema, columns)
    split: Split = Split(group.partition, group.partition_values, group.bucket, group.total_buckets,
                         list(group.files))
    out = concat_or_empty(list(reader.read_split(split)), reader.output_schema)
    if out.num_rows != group.row_count:
        raise InvalidArgumentError(
            f"Cannot update {store.name}: the range of {group.files[0].file_name} reads {out.num_rows} rows, "
            f"its metadata says {group.row_count}")
    return out


def _merged(current: pa.Table, update: pa.Table, positions: np.ndarray, target: pa.Schema) -> pa.Table:
    """``current`` with the rows at ``positions`` replaced by ``update``'s (column by column)."""
    n = current.num_rows
    take = np.arange(n, dtype=np.int64)
    take[positions] = n + np.arange(len(positions), dtype=np.int64)
    index = pa.array(take)
    arrays = []
    for field in target:
        both = pa.chunked_array([*current.column(field.name).cast(field.type).chunks,
                                 *update.column(field.name).chunks], field.type)
        arrays.append(both.take(index))
    return pa.Table.from_arrays(arrays, schema=target)


def prepare_column_update(store: FileStore, data: object) -> tuple[list[CommitMessage], Snapshot | None]:
    """Write the update files of ``data`` (``_ROW_ID`` and the columns to update) against the latest
    snapshot: the commit messages and the snapshot they were computed from (None: nothing to do).

    Refused before any file is written: a table without data evolution, a ``_ROW_ID`` missing,
    null, duplicated or naming no live row, unknown, system or partition columns, values the
    columns' types cannot hold (`conform`'s rules, NOT NULL included). Memory: the updated columns
    of one row-id range (at most one data file's rows) at a time."""
    from lake_assets.formats.data_file import DataFileWriter
    from lake_assets.ops.commit_message import CommitMessage

    name = store.name
    snap = store.snapshot_manager.latest()  # read once: the rows, ranges and schema all come from it
    schema = store.schema_at(snap)
    if not data_evolution_enabled(schema.options):
        raise UnsupportedFeatureError(
            f"Cannot update columns of {name}: it needs data-evolution.enabled = true (and row-tracking.enabled), "
            "whose files may hold a subset of the columns")
    table = as_table(data, name)
    columns = _check_columns(schema, table.column_names, name)
    ids = _row_ids(table, name)
    file_schema = update_columns_schema(schema, columns)
    values = conform(table.select(columns), file_schema, name)  # types, NOT NULL, write defaults
    if table.num_rows == 0:
        return [], snap
    if snap is None:
        raise InvalidArgumentError(f"Cannot update {name}: the table has no rows (no snapshot) to update")
    groups = range_groups(store, snap)
    where = _locate(groups, ids, snap, name)
    order = np.argsort(where, kind="stable")
    bounds = np.flatnonzero(np.diff(where[order])) + 1
    config = dataclasses.replace(store.data_file_config(), target_file_size=2**62)  # one file per range
    messages: list[CommitMessage] = []
    written: list[tuple[str, DataFileMeta]] = []
    try:
        for rows in np.split(order, bounds):
            group = groups[int(where[rows[0]])]
            current = _current_values(store, schema, group, columns)
            merged = _merged(current, values.take(pa.array(rows)), ids[rows] - group.first_row_id,
                             file_schema.arrow_schema)
            bucket_dir = store.bucket_dir(group.partition, group.bucket)
            files = DataFileWriter(store.file_io, bucket_dir, file_schema, config).write(
                merged, level=0, file_source=FileSource.APPEND, sequence_range=(0, 0))
            written += [(bucket_dir, f) for f in files]
            if len(files) != 1 or files[0].row_count != group.row_count:  # never: the writer does not roll
                raise InvalidArgumentError(f"Cannot update {name}: the update of a range did not make one file")
            f = dataclasses.replace(files[0], write_cols=tuple(columns), first_row_id=group.first_row_id)
            messages.append(CommitMessage(group.partition, group.bucket, group.total_buckets, new_files=(f,)))
    except BaseException:
        store.file_io.delete_many(f"{d}/{x}" for d, f in written for x in (f.file_name, *f.extra_files))
        raise
    return messages, snap


def check_row_id_updates(store: FileStore, latest: Snapshot | None, delta: Sequence[ManifestEntry],
                         read_at: int | None) -> None:
    """Paimon HEAD's checks of a commit whose new files update existing row-id ranges (see the
    module docstring); raises `CommitConflictError` naming the range. ``read_at``: the snapshot
    the update read (None: only the first check)."""
    updates = [e for e in delta if e.kind == FileKind.ADD and e.file.first_row_id is not None]
    if not updates:
        return
    name = store.name
    if latest is None:
        raise CommitConflictError(f"Cannot commit to {name}: it updates rows of a table that has no snapshot")
    live = {(e.partition, e.bucket, e.file.first_row_id, e.file.row_count)
            for e in store.file_store_scan().live_entries(latest) if e.file.first_row_id is not None}
    for e in updates:
        if (e.partition, e.bucket, e.file.first_row_id, e.file.row_count) not in live:
            raise CommitConflictError(
                f"Cannot commit to {name}: the update of rows {_span(e.file)} (file {e.file.file_name}) is stale: "
                f"snapshot {latest.id} no longer holds that row-id range (rewritten or removed by a concurrent "
                "commit, e.g. a compaction); read the rows again and retry")
    if read_at is None or latest.id <= read_at:
        return
    ours = [(row_id_range(e.file, name), held_field_ids(store, e.file)) for e in updates]
    scan = store.file_store_scan()
    sm = store.snapshot_manager
    below = sm.snapshot(read_at).next_row_id or 0
    for sid in range(read_at + 1, latest.id + 1):
        snap = sm.snapshot(sid)
        for other in scan.delta_entries(snap):
            f = other.file
            rng = row_id_range(f, name)
            if rng is None or rng[0] >= below:  # rows new since the update read: not ours
                continue
            # a compaction's deleted files (its outputs keep the ranges), any other commit's new ones
            compacted = snap.commit_kind == CommitKind.COMPACT
            if other.kind != (FileKind.DELETE if compacted else FileKind.ADD):
                continue
            fields = held_field_ids(store, f)
            for r, ids in ours:
                if r is not None and r[0] <= rng[1] and rng[0] <= r[1] and ids & fields:
                    raise CommitConflictError(
                        f"Cannot commit to {name}: snapshot {sid} ({snap.commit_kind.value}) "
                        f"{'compacted' if compacted else 'wrote'} columns of rows {_span(f)} that this update "
                        f"of rows [{r[0]}, {r[1]}] also writes, after snapshot {read_at} it read; an update "
                        "racing it would be lost: read the rows again and retry")


def _span(f: DataFileMeta) -> str:
    first = f.first_row_id or 0
    return f"[{first}, {first + f.row_count - 1}]"


__all__ = ["RangeGroup", "check_row_id_updates", "prepare_column_update", "range_groups", "update_columns_schema"]
