"""Changes between two snapshots as the difference of their files: Paimon's read of
``incremental-between = 'tag1,tag2'`` (and, since Paimon 1.x, of snapshot ids with
``incremental-between-scan-mode = diff``).

Paimon does not replay the snapshots in between (they may have expired, only the tags remain); it
plans both snapshots (Java's ``SnapshotReaderImpl.readIncrementalDiff``) and, per (partition,
bucket), drops the files the two share. What is left is read by ``IncrementalDiffSplitRead``:

* primary-key buckets with files left on the ``before`` side: each side is merged per key with
  retractions dropped, the two merged sides are matched by key: a key only before is a ``-D`` row
  of its old value, a key only after is its new row with its merged kind (``+I`` or ``+U``), a key
  on both sides is its new row where the whole value differs, nothing where it is equal;
* primary-key buckets with nothing left before: the files left after, merged as a batch read that
  keeps retractions, each row with its merged kind;
* append tables: the rows of the files left after, as ``+I`` (files only before are not read).

The answer is the net change of each key, verified against Paimon Java 0.9
(``tests/differential/test_tag_diff.py``). Memory: both sides of one bucket at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidArgumentError, SchemaError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.merge import is_retract, sort_and_merge
from lake_assets.ops.plan import plan_splits
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split
from lake_assets.spec.manifest import DataFileMeta, IndexManifestEntry
from lake_assets.spec.row_kind import ROW_KIND, check_row_kind_free, row_kind_names_array
from lake_assets.spec.snapshot import Snapshot
from lake_assets.table_support import POSTPONE_BUCKET, Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

_SIDE = "_diff_side"
_DELETE = 3


@dataclass(frozen=True)
class DiffSplit:
    """One (partition, bucket): the files only the earlier snapshot has, and those only the later has."""

    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    before: tuple[DataFileMeta, ...]
    after: tuple[DataFileMeta, ...]
    before_dv: tuple[IndexManifestEntry, ...] = ()
    after_dv: tuple[IndexManifestEntry, ...] = ()


def diff_splits(store: FileStore, before: Snapshot, after: Snapshot) -> list[DiffSplit]:
    """The buckets whose files differ between ``before`` and ``after``, shared files dropped."""
    # Real buckets only: files waiting in ``bucket-postpone`` are not part of a batch incremental
    # read (Paimon's batch scans skip them, `lake_assets.ops.stream_postpone`).
    def buckets(snap: Snapshot) -> dict[tuple[bytes, int], Split]:
        splits = plan_splits(store, snap, None, Op.STREAM)
        return {(s.partition, s.bucket): s for s in splits if s.bucket != POSTPONE_BUCKET}

    old, new = buckets(before), buckets(after)
    out: list[DiffSplit] = []
    for key in sorted(old.keys() | new.keys()):
        b, a = old.get(key), new.get(key)
        b_files = list(b.files) if b else []
        a_files = list(a.files) if a else []
        shared = {f.file_name for f in b_files} & {f.file_name for f in a_files}
        b_left = tuple(f for f in b_files if f.file_name not in shared)
        a_left = tuple(f for f in a_files if f.file_name not in shared)
        if not b_left and not a_left:
            continue
        some = a if a is not None else b
        assert some is not None
        out.append(DiffSplit(key[0], some.partition_values, key[1], b_left, a_left,
                             b.dv_entries if b else (), a.dv_entries if a else ()))
    return out


def read_diff(store: FileStore, start: int | str, end: int | str | None, columns: list[str] | None) -> pa.Table:
    """The changes between two tags or snapshots (ids; ``end`` defaults to the latest) as Paimon's
    diff read gives them (see the module docstring), as one table with a ``_row_kind`` column."""
    check_row_kind_free(store.schema.field_names, store.name)
    unknown = [c for c in columns or () if not store.schema.has_field(c)]
    if unknown:
        raise SchemaError(f"Table {store.name} has no columns {unknown}")

    def resolve(x: int | str) -> Snapshot:
        return store.tag_manager().get(x).snapshot if isinstance(x, str) else store.snapshot_manager.snapshot(int(x))

    before = resolve(start)
    after = resolve(end) if end is not None else store.snapshot_manager.latest()
    store.schema_at(after)  # files committed under a newer schema are read with it
    reader = DiffReader(store, columns, ROW_KIND)
    if after is None or after.id == before.id:
        return reader.schema.empty_table()
    if after.id < before.id:
        raise InvalidArgumentError(f"Cannot read changes of {store.name}: end {end!r} (snapshot {after.id}) is "
                                   f"before start {start!r} (snapshot {before.id})")
    parts = [t for split in diff_splits(store, before, after) for t in reader.read(split)]
    return pa.concat_tables(parts).cast(reader.schema) if parts else reader.schema.empty_table()


class DiffReader:
    """Reads `DiffSplit`s into rows with the table's ``columns`` (all when None) and ``row_kind``."""

    def __init__(self, store: FileStore, columns: list[str] | None, row_kind: str) -> None:
        self.store = store
        self.columns = columns
        self.row_kind = row_kind
        # every column: Java compares whole values before it projects
        self._reader = SplitReader(store, store.schema, None, fill_defaults=True)

    @property
    def schema(self) -> pa.Schema:
        out = self._reader.output_schema
        if self.columns is not None:
            out = pa.schema([out.field(c) for c in self.columns])
        return out.append(pa.field(self.row_kind, pa.string(), nullable=False))

    def read(self, split: DiffSplit) -> Iterator[pa.Table]:
        """The changes of one bucket (see the module docstring)."""
        r = self._reader
        if not r.is_pk:
            sp = self._split(split, split.after, split.after_dv)
            for meta in sorted(split.after, key=lambda f: f.min_sequence_number):
                data = r.output_rows(r.read_file(sp, meta, False, r.split_columns), sp)
                yield self._out(data, np.zeros(data.num_rows, np.int8))
            return
        after, after_sp = self._merged(split, split.after, split.after_dv, keep_retract=not split.before)
        if not split.before:
            yield self._emit(after, after_sp, np.ones(after.num_rows, bool))
            return
        before, before_sp = self._merged(split, split.before, split.before_dv, keep_retract=False)
        yield from self._diff(before, before_sp, after, after_sp)

    # ----------------------------------------------------------------- parts
    def _split(self, split: DiffSplit, files: tuple[DataFileMeta, ...],
               dv: tuple[IndexManifestEntry, ...]) -> Split:
        return Split(split.partition, split.partition_values, split.bucket, -1, list(files), dv)

    def _merged(self, split: DiffSplit, files: tuple[DataFileMeta, ...], dv: tuple[IndexManifestEntry, ...],
                *, keep_retract: bool) -> tuple[pa.Table, Split]:
        """One side merged per key (system columns kept), retractions dropped unless ``keep_retract``."""
        r = self._reader
        sp = self._split(split, files, dv)
        visible = self.store.visible_files(files, r.schema)
        runs = [r.read_file(sp, f, True, r.split_columns) for f in visible]
        if not runs:
            return self._empty_side(), sp
        data = pa.concat_tables(runs)
        merged = sort_and_merge(data, r.key_names, r.merge_function, r.sequence_fields, r.sequence_descending)
        if not keep_retract:
            retract = is_retract(merged.column(VALUE_KIND).to_numpy())
            if retract.any():
                merged = merged.filter(pa.array(~retract))
        return merged, sp

    def _empty_side(self) -> pa.Table:
        r = self._reader
        names = [*r.split_columns, SEQUENCE_NUMBER, VALUE_KIND]
        return pa.table({n: pa.array([], pa.null()) for n in names})

    def _emit(self, merged: pa.Table, sp: Split, keep: np.ndarray, *, kinds: np.ndarray | None = None) -> pa.Table:
        rows = merged.filter(pa.array(keep))
        k = rows.column(VALUE_KIND).to_numpy().astype(np.int8) if kinds is None else kinds[keep]
        data = self._reader.output_rows(rows.select(self._reader.split_columns), sp)
        return self._out(data, k)

    def _out(self, data: pa.Table, kinds: np.ndarray) -> pa.Table:
        if self.columns is not None:
            data = data.select(self.columns)
        names = pc.take(row_kind_names_array(), pa.array(kinds.astype(np.int32)))
        return data.append_column(pa.field(self.row_kind, pa.string(), nullable=False), names)

    def _diff(self, before: pa.Table, before_sp: Split, after: pa.Table, after_sp: Split) -> Iterator[pa.Table]:
        """Match the two merged sides by key (each holds one row per key)."""
        r = self._reader
        if after.num_rows == 0:
            yield self._emit(before, before_sp, np.ones(before.num_rows, bool),
                             kinds=np.full(before.num_rows, _DELETE, np.int8))
            return
        if before.num_rows == 0:
            yield self._emit(after, after_sp, np.ones(after.num_rows, bool))
            return
        cols = [*r.split_columns, VALUE_KIND]
        both = pa.concat_tables([
            before.select(cols).append_column(_SIDE, pa.array(np.zeros(before.num_rows, np.int8))),
            after.select(cols).append_column(_SIDE, pa.array(np.ones(after.num_rows, np.int8))),
        ], promote_options="permissive")
        order = pc.sort_indices(both, sort_keys=[*((k, "ascending") for k in r.key_names), (_SIDE, "ascending")])
        both = both.take(order)
        n = both.num_rows
        side = both.column(_SIDE).to_numpy()
        same_next = np.ones(n - 1, bool)
        for k in r.key_names:
            same_next &= _equal_adjacent(both.column(k))
        differs_prev = np.zeros(n - 1, bool)
        for c in r.split_columns:
            if c not in r.key_names:
                differs_prev |= ~_equal_adjacent(both.column(c))
        prev_same = np.concatenate([[False], same_next])
        next_same = np.concatenate([same_next, [False]])
        gone = (side == 0) & ~next_same
        new_or_changed = (side == 1) & (~prev_same | np.concatenate([[False], differs_prev]))
        kinds = both.column(VALUE_KIND).to_numpy().astype(np.int8)
        kinds[gone] = _DELETE
        # both sides are of one partition: either split gives the partition's constant columns
        yield self._emit(both, after_sp, gone | new_or_changed, kinds=kinds)


def _equal_adjacent(column: pa.ChunkedArray) -> np.ndarray:
    """Row i equals row i + 1 (length n - 1), as Paimon compares binary rows: null equals null,
    floats by their bits (NaN equals NaN, -0.0 differs from 0.0)."""
    arr = column.combine_chunks()
    a, b = arr.slice(0, len(arr) - 1), arr.slice(1)
    typ = arr.type
    if pa.types.is_floating(typ):
        bits = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[typ.bit_width]
        a, b = a.view(bits), b.view(bits)
    nested = pa.types.is_nested(typ) or pa.types.is_dictionary(typ)
    if nested:
        return np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)], bool)
    eq = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b)).to_numpy(zero_copy_only=False)
    result: np.ndarray = eq | both_null
    return result
