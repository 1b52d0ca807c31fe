"""Old values a deletion-vector compaction merges in, as Paimon's lookup compaction does.

A unit of a deduplicate table marks the rows it supersedes from their keys alone
(`ops.dv_compact.VectorUpdate.note`): the newest record wins whatever the older row holds. With
``merge-engine`` partial-update or aggregation the result of a key depends on its older row, and
with ``sequence.field`` the older row may win. Paimon's lookup compaction
(``LookupChangelogMergeFunctionWrapper``) then looks each key of the unit up in the levels above
its output (``LookupLevels.lookup(key, outputLevel + 1)``: the first level holding a live row),
merges that row with the key's new records in sequence order (``calculateResult``), writes the
result and marks the old row deleted (``notifyNewDeletion``). A key whose live row is already
among the unit's inputs (a level above 0 rewritten by the unit) has nothing above it to find.

`OldValues.merge_in` does the same for all keys of one merge step at once: their positions in the
files above come from the unit's `VectorUpdate.found` (the deduplicate path's per-file key
lookup), the live ones (kept by the old vectors) are taken from their files' decoded rows, kept
between rounds within ``lookup.cache-max-memory-size`` (`ops.dv_row_cache`), the lowest level's
row of a key is kept, its position is marked, and those rows join the step's
records before the merge. The pair merge below takes any key of integer and string columns
(session 17): for a string or composite key the old rows' records are found through
`lsm.key_ranks.KeyRanks` over the step's records.

With a single integer key, no ``sequence.field`` and the step's records in merge order already
(a unit of one level-0 file), the old rows are gathered with the records in one take, each just
before its key's records, and the merge skips its sort (`_interleaved`: the order the sort would
give). Memory: one file's selected rows at a time (a kept file is
referenced, not copied), then the step's old rows and records (at most one old row per key of the
step, so bounded by ``compaction.merge-rows``). Where every key of the step has one record and at
most one old row, none a retraction (`OldValues.merge`), the engine merges each pair column by
column instead (`lsm.merge_engine.pair_merge`), and only the columns it reads are taken from the
old rows: no interleaved table, no key groups.

Tables without deletion vectors that merge by lookup (``changelog-producer = lookup`` or
``force-lookup``: `lsm.lookup_merge`) compact the same way (Java's wrapper is the same): their
unit looks its level-0 keys up in the files above its output level (`AboveLookup`), merges the
row found into the row it writes and marks nothing - the old row stays in its deeper level, and
reads skip it (they take a key's newest row above level 0 only). A key with a row above level 0
among the unit's own records looks nothing up (Java: ``highLevel`` is among the candidates).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.key_compare import key_view
from lake_assets.lsm.key_ranks import KeyRanks, strictly_ascending
from lake_assets.lsm.lookup_merge import LEVEL, merges_by_lookup
from lake_assets.lsm.merge import group_bounds, is_retract
from lake_assets.lsm.merge_engine.function import MergeFunction
from lake_assets.lsm.merge_engine.pair_merge import PairInput, PairMerging
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.ops.dv_compact import VectorUpdate
from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.lsm.compact_strategy import RewriteSection
    from lake_assets.ops.compact.plan import CompactionTask
    from lake_assets.options import CoreOptions

Found = tuple[list[tuple[DataFileMeta, np.ndarray]], list[tuple[pa.Table, np.ndarray | None]]]
"""The live rows above a unit for a merge step's keys (`OldValues._sources`)."""

ReadRows = Callable[[DataFileMeta, np.ndarray], tuple[pa.Table, np.ndarray | None]]
"""Reads the rows of a file at ascending positions (every row counted, no deletion vector
applied), with system columns: a table holding them and their positions in it, None when the
table is those rows in file order (`ops.dv_row_cache.LookedUpRows.source`)."""


def needs_old_values(options: CoreOptions) -> bool:
    """Whether a deletion-vector compaction must merge each key's older row into its output (Java
    persists looked-up values for the same engines: ``PositionedKeyValueProcessor``'s
    ``mergeEngine != DEDUPLICATE || !sequenceField.isEmpty()``). ``ignore-delete`` alone needs no
    values: a deduplicate key whose new records are all ignored deletes has no output row, so its
    old row is not marked and stays."""
    return not engine_of(options).deletion_vectors_by_key or bool(options.sequence_fields)


def lookup_merge_function(function: MergeFunction) -> MergeFunction:
    """``function`` as Paimon's lookup compaction applies it: to a key's only record as well (the
    partial-update and aggregation engines otherwise emit it unchanged, as Java's reducer wrapper
    does; a lone record with an all-null sequence group then keeps its group's values, where the
    lookup merge drops them)."""
    if not hasattr(function, "merges_singles"):
        return function
    lookup = copy.copy(function)
    lookup.merges_singles = True
    return lookup


def folds_lone_records(options: CoreOptions, task: CompactionTask) -> bool:
    """Whether ``task`` merges with Java's lookup wrapper (``LookupChangelogMergeFunctionWrapper``,
    which merges a key's lone record too: `lookup_merge_function`): a unit of a table that merges
    by lookup with a level-0 file among its inputs and an output above level 0
    (``ChangelogMergeTreeRewriter.rewriteLookupChangelog``); other units merge as usual."""
    return (merges_by_lookup(options) and task.output_level > 0
            and any(f.level == 0 for f in task.input_files))


class AboveLookup(VectorUpdate):
    """`VectorUpdate`'s key search over the files above a unit, for a table without deletion
    vectors: every row is live and nothing is marked (the old row stays where it is)."""

    def record(self, name: str, positions: np.ndarray) -> None:
        """Nothing to mark: reads skip a key's older rows above level 0 by their level."""


class OldValues:
    """The live rows above a compaction unit for the keys it merges, one merge step at a time."""

    def __init__(self, update: VectorUpdate, read_rows: ReadRows, key_names: Sequence[str],
                 sequence_fields: Sequence[str] = ()) -> None:
        self.update = update
        self._read = read_rows
        self.key_names = list(key_names)
        self._int_key = update.int_key
        self._ranked_key = update.ranked_key
        # the merge orders a key's records by these before ``_SEQUENCE_NUMBER`` (`sort_for_merge`)
        self._sequence_fields = tuple(sequence_fields)

    def merge(self, chunk: pa.Table, function: MergeFunction,
              merge_step: Callable[[pa.Table, bool], pa.Table]) -> pa.Table:
        """``chunk`` (every record of its keys the unit holds) merged with each key's live row
        from above the unit, whose position is marked in the vectors the unit writes: by the
        engine's pair merge where it applies (`_merge_pairs`), else `merge_in`'s table through
        ``merge_step`` (the table and whether it is in merge order already)."""
        merged = self._merge_pairs(chunk, function)
        if isinstance(merged, pa.Table):
            return merged
        with_old, presorted = self.merge_in(chunk) if merged is None else self._merge_found(chunk, *merged)
        return merge_step(with_old, presorted)

    def _merge_pairs(self, chunk: pa.Table, function: MergeFunction) -> pa.Table | Found | None:
        """The merged step when every key of ``chunk`` has one record and at most one live row
        above, none a retraction, none newer than its record, and the engine merges such pairs
        (`pair_merge`: only the columns it reads are gathered from the old rows, bench/RESULTS.md
        session 17); else what was found for `_merge_found` (None: nothing looked up yet)."""
        if not hasattr(function, "merge_pairs"):
            return None
        pairing = cast(PairMerging, function)
        records = self._pair_records(chunk)
        needed = None if records is None else pairing.pair_columns(records)
        if records is None or needed is None:
            return None
        found, sources = self._sources(chunk)
        at = np.zeros(0, dtype=np.int64)
        if found:
            at_or_none = self._pair_positions(records, sources)
            if (at_or_none is None
                    or bool(np.any(_column_at(sources, SEQUENCE_NUMBER)
                                   > records.column(SEQUENCE_NUMBER).to_numpy()[at_or_none]))
                    or bool(is_retract(_column_at(sources, VALUE_KIND)).any())):
                return found, sources
            at = at_or_none
            for meta, live in found:
                self.update.record(meta.file_name, live)
        old = _gathered(sources, needed) if found else {}
        return pairing.merge_pairs(PairInput(records, at, old))

    def _pair_records(self, chunk: pa.Table) -> pa.Table | None:
        """``chunk`` without `LEVEL` when a pair merge may take it: a key of integer or string
        columns, no ``sequence.field``, one record per key in key order, every record from level
        0; else None."""
        if not (self._int_key or self._ranked_key) or self._sequence_fields:
            return None
        if LEVEL in chunk.column_names:
            if bool(np.any(chunk.column(LEVEL).to_numpy() != 0)):
                return None
            chunk = chunk.drop_columns([LEVEL])
        if not self._int_key:
            keys = chunk.select(self.key_names)
            if any(c.null_count for c in keys.columns) or not strictly_ascending(keys):
                return None
            return chunk
        column = chunk.column(self.key_names[0])
        if column.null_count:
            return None
        keys = column.to_numpy()
        if keys.size > 1 and not bool(np.all(keys[1:] > keys[:-1])):
            return None
        return chunk

    def _pair_positions(self, records: pa.Table,
                        sources: Sequence[tuple[pa.Table, np.ndarray | None]]) -> np.ndarray | None:
        """Per old row of ``sources``, the position of its key's record in ``records`` (one per
        key, key order); None when one has none, two share one, or ``records`` are not one per
        key in key order (`_pair_records` checked it)."""
        if self._int_key:
            keys = records.column(self.key_names[0]).to_numpy()
            return _first_records(keys, _column_at(sources, self.key_names[0]))
        ranks = KeyRanks.build(records.select(self.key_names))
        if ranks is None:
            return None
        at = ranks.locate(pa.table(_gathered(sources, self.key_names)))
        if at.size and int(at.min()) < 0:
            return None
        taken = np.zeros(records.num_rows, dtype=bool)
        taken[at] = True
        return at if int(np.count_nonzero(taken)) == at.size else None

    def merge_in(self, chunk: pa.Table) -> tuple[pa.Table, bool]:
        """``chunk`` (every record of its keys the unit holds) with each key's live row from above
        the unit put in front; those rows' positions are marked in the vectors the unit writes.
        The second item tells whether the table is in merge order already (`sort_and_merge`'s
        ``presorted``): each old row put just before its key's records (`_interleaved`)."""
        return self._merge_found(chunk, *self._sources(chunk))

    def _sources(self, chunk: pa.Table) -> Found:
        """The live rows above the unit of ``chunk``'s keys: (file, live positions) by ascending
        level, and per file its rows as `ReadRows` gives them."""
        keys = self._distinct_keys(self._without_high_level(chunk))
        found = [(meta, live) for meta, positions in self.update.found(keys)
                 if (live := self.update.live(meta, positions)).size]
        found.sort(key=lambda item: item[0].level)  # LookupLevels: the lowest level first
        sources = []
        for meta, live in found:
            table, at_rows = self._read(meta, live)
            if at_rows is None and table.num_rows != live.size:
                raise CorruptMetadataError(f"{meta.file_name} gave {table.num_rows} rows for {live.size} positions")
            sources.append((table, at_rows))
        return found, sources

    def _merge_found(self, chunk: pa.Table, found: list[tuple[DataFileMeta, np.ndarray]],
                     sources: list[tuple[pa.Table, np.ndarray | None]]) -> tuple[pa.Table, bool]:
        """`merge_in` once the old rows are found."""
        if not found:
            return chunk, False
        ordered = self._ordered_int_keys(chunk)
        if ordered is not None and all(t.schema == chunk.schema for t, _ in sources):
            # one gather from the files' rows and the chunk together, straight into merge order
            at = _first_records(ordered, _column_at(sources, self.key_names[0]))
            if at is not None:  # one row per key (the usual case: a key's older rows are hidden by vectors)
                for meta, live in found:
                    self.update.record(meta.file_name, live)
                offsets = np.cumsum([0, *(t.num_rows for t, _ in sources)])
                index = np.concatenate([offset + (np.arange(t.num_rows) if rows is None else rows)
                                        for (t, rows), offset in zip(sources, offsets, strict=False)])
                both = pa.concat_tables([*(t for t, _ in sources), chunk])
                base = int(offsets[-1])
                order = _interleaved(at, _column_at(sources, SEQUENCE_NUMBER), chunk, index, base)
                if order is not None:
                    return both.take(pa.array(order)), True
                # an old row newer than its key's records: old rows in front, and the merge sorts
                return both.take(pa.array(np.concatenate([index, np.arange(base, base + chunk.num_rows)]))), False
        tables = [t if rows is None else t.take(pa.array(rows)) for t, rows in sources]
        if len(found) == 1 or self._disjoint_int_keys(tables):
            for meta, live in found:
                self.update.record(meta.file_name, live)
            old = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        else:
            old = self._lowest_level_rows(found, tables)
        if old.schema != chunk.schema:  # the same reader gives both: only nullability may differ
            old = old.select(chunk.column_names).cast(chunk.schema)
        at = None if ordered is None else _first_records(ordered, _column_at([(old, None)], self.key_names[0]))
        order = (None if at is None else
                 _interleaved(at, _column_at([(old, None)], SEQUENCE_NUMBER), chunk, np.arange(old.num_rows),
                              old.num_rows))
        both = pa.concat_tables([old, chunk])
        return (both, False) if order is None else (both.take(pa.array(order)), True)

    def _ordered_int_keys(self, chunk: pa.Table) -> np.ndarray | None:
        """The keys of ``chunk`` when old rows can be put in merge order without a sort: a single
        integer key, no ``sequence.field`` (the merge orders by it first), and ``chunk`` in merge
        order already (keys ascending, a key's records by ascending ``_SEQUENCE_NUMBER``: a unit
        of one level-0 file, the usual case); else None, and the merge sorts. A sort of a
        bucket's old and new rows was the largest part of the merge (bench/RESULTS.md, session 16)."""
        if not self._int_key or self._sequence_fields:
            return None
        column = chunk.column(self.key_names[0])
        if column.null_count:
            return None
        keys: np.ndarray = column.to_numpy()
        if keys.size > 1 and not bool(np.all(keys[1:] > keys[:-1])):
            if not bool(np.all(keys[1:] >= keys[:-1])):
                return None
            same = keys[1:] == keys[:-1]
            seq = chunk.column(SEQUENCE_NUMBER).to_numpy()
            if bool(np.any(seq[1:][same] < seq[:-1][same])):
                return None
        return keys

    def _disjoint_int_keys(self, tables: list[pa.Table]) -> bool:
        """Whether no key of a single integer key column is in two of ``tables`` (each file's
        rows hold a key once: then every row is its key's only one)."""
        if not self._int_key:
            return False
        columns = [t.column(self.key_names[0]) for t in tables]
        if any(c.null_count for c in columns):
            return False
        values = np.sort(np.concatenate([c.to_numpy() for c in columns]))
        return not bool(np.any(values[1:] == values[:-1]))

    def _lowest_level_rows(self, found: list[tuple[DataFileMeta, np.ndarray]], tables: list[pa.Table]) -> pa.Table:
        """One row per key from rows of several files (``found`` by ascending level): the first
        level's, as Paimon's lookup stops at the first level holding the key; only that row is
        marked. (A deletion-vector compaction leaves one live row per key above level 0: several
        come only from files written otherwise.)"""
        rows = pa.concat_tables(tables)
        which = np.concatenate([np.full(live.size, i, dtype=np.int64) for i, (_, live) in enumerate(found)])
        positions = np.concatenate([live for _, live in found])
        order = pc.sort_indices(key_view(rows.select(self.key_names), self.key_names),
                                sort_keys=[(k, "ascending") for k in self.key_names]).to_numpy()
        # sort_indices is stable: among equal keys, concatenation order (the lowest level) first
        starts, _ = group_bounds(rows.select(self.key_names).take(pa.array(order)), self.key_names)
        picked = np.sort(order[starts])
        for i, (meta, _) in enumerate(found):
            mine = picked[which[picked] == i]
            if mine.size:
                self.update.record(meta.file_name, positions[mine])
        return rows.take(pa.array(picked))

    def _without_high_level(self, chunk: pa.Table) -> pa.Table:
        """The records of ``chunk`` whose key has no record above level 0 in it (those keys look
        nothing up: Java's wrapper takes the unit's own newest row above level 0)."""
        if LEVEL not in chunk.column_names:
            return chunk
        levels = chunk.column(LEVEL).to_numpy()
        high = levels > 0
        if not high.any():
            return chunk
        keys = chunk.select(self.key_names)
        order = pc.sort_indices(key_view(keys, self.key_names),
                                sort_keys=[(k, "ascending") for k in self.key_names]).to_numpy()
        starts, _ = group_bounds(keys.take(pa.array(order)), self.key_names)
        has_high = np.maximum.reduceat(high[order].astype(np.int8), starts).astype(bool)
        lookup = np.repeat(~has_high, np.diff(np.append(starts, order.size)))
        return chunk.take(pa.array(order[lookup]))

    def _distinct_keys(self, chunk: pa.Table) -> pa.Table:
        """The key columns of ``chunk``, sorted, one row per key (an integer key is left as it is:
        `VectorUpdate.found` sorts and dedupes its values itself)."""
        keys = chunk.select(self.key_names)
        if self._int_key or keys.num_rows <= 1:
            return keys
        order = pc.sort_indices(key_view(keys, self.key_names), sort_keys=[(k, "ascending") for k in self.key_names])
        keys = keys.take(order)
        starts, _ = group_bounds(keys, self.key_names)
        return keys if starts.size == keys.num_rows else keys.take(pa.array(starts))


# Options that give a level's files another format, codec or statistics than level 0's: a level-0
# file relabelled into such a level would not be what a rewrite writes there
PER_LEVEL_OPTIONS = ("file.format.per.level", "file.compression.per.level", "metadata.stats-mode.per.level")


def relabel_candidate(options: CoreOptions, schema_id: int, section: RewriteSection,
                      whole_rows: int) -> DataFileMeta | None:
    """The level-0 file a lookup unit's ``section`` rewrites alone (its one interval, read whole
    and merged once), which may be relabelled to the section's level when its merged rows are its
    own rows (`same_rows`); None otherwise. Such a rewrite would write the file's very rows again,
    in a file a reader cannot tell from it (its statistics and key range are the rows'): Java's
    lookup rewriter rewrites level 0 of partial-update and aggregation tables because a merge with
    the rows above may change them (``LookupMergeTreeCompactRewriter``), and where it did not, the
    rewrite's Parquet encode was a third of a partial-update DV round (bench/RESULTS.md, session 16).
    Not when a level-specific format, codec or statistics mode is set, or the file has another
    schema than the table's (a rewrite writes the current one)."""
    if section.kind != "rewrite" or section.output_level <= 0 or len(section.intervals) != 1:
        return None
    files = section.intervals[0]
    if len(files) != 1 or files[0].level != 0 or files[0].schema_id != schema_id or files[0].row_count > whole_rows:
        return None
    if any(options.raw.get(key) for key in PER_LEVEL_OPTIONS):
        return None
    return files[0]


def same_rows(merged: pa.Table, rows: pa.Table) -> bool:
    """Whether a merge's output ``merged`` is ``rows`` (a file's rows as the unit read them),
    every column and row in order (a NaN never equals itself here: such a file is rewritten)."""
    if LEVEL in rows.column_names:
        rows = rows.drop_columns([LEVEL])
    return bool(merged.num_rows == rows.num_rows and merged.schema.equals(rows.schema) and merged.equals(rows))


def _first_records(keys: np.ndarray, old_keys: np.ndarray) -> np.ndarray | None:
    """For each old row's key (``old_keys``), the position of its key's first record among
    ``keys`` (ascending); None when a key is not there or two old rows share one."""
    at: np.ndarray = np.searchsorted(keys, old_keys)
    if at.size and (int(at.max()) >= keys.size or not np.array_equal(keys[at], old_keys)):
        return None
    taken = np.zeros(keys.size, dtype=bool)
    taken[at] = True
    return at if int(np.count_nonzero(taken)) == at.size else None


def _column_at(sources: Sequence[tuple[pa.Table, np.ndarray | None]], name: str) -> np.ndarray:
    """Column ``name`` of the rows ``sources`` name (a table and the positions of its rows, or
    None: every row), one source after another, as numpy (a null fails `_first_records`' match)."""
    parts = []
    for table, rows in sources:
        values = table.column(name).to_numpy()
        parts.append(values if rows is None else values[rows])
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _gathered(sources: Sequence[tuple[pa.Table, np.ndarray | None]], names: Sequence[str]) -> dict[str, pa.Array]:
    """Columns ``names`` of the rows ``sources`` name (as `_column_at`), each one Arrow array."""
    if not names:
        return {}
    parts: dict[str, list[pa.Array]] = {name: [] for name in names}
    for table, rows in sources:
        index = None if rows is None else pa.array(rows)
        for name in names:
            column = table.column(name)
            parts[name].append((column if index is None else column.take(index)).combine_chunks())
    return {name: chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks) for name, chunks in parts.items()}


def _interleaved(at: np.ndarray, old_seq: np.ndarray, chunk: pa.Table, old_index: np.ndarray,
                 base: int) -> np.ndarray | None:
    """The merge order of old rows (at ``old_index``, with sequence numbers ``old_seq``) and
    ``chunk`` (at ``base`` on), in a table holding both, without a sort: each old row just
    before its key's first record in ``chunk`` (at ``at``), as the merge's stable sort puts it
    when it is not newer than that record (old rows first among equal sequence numbers); None
    when one is newer (then the sort decides)."""
    new_seq = chunk.column(SEQUENCE_NUMBER).to_numpy()
    if bool(np.any(old_seq > new_seq[at])):
        return None
    n_old, n_new = at.size, chunk.num_rows
    before = np.zeros(n_new, dtype=np.int64)
    before[at] = 1
    np.cumsum(before, out=before)  # old rows up to and including each record's key
    order = np.empty(n_old + n_new, dtype=np.int64)
    order[at + before[at] - 1] = old_index
    order[np.arange(n_new, dtype=np.int64) + before] = np.arange(base, base + n_new, dtype=np.int64)
    return order


__all__ = ["PER_LEVEL_OPTIONS", "AboveLookup", "OldValues", "ReadRows", "folds_lone_records", "lookup_merge_function",
           "needs_old_values", "relabel_candidate", "same_rows"]
