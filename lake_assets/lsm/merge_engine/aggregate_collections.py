"""The collection aggregate functions: collect, merge_map, nested_update, nested_partial_update.

Paimon's FieldCollectAgg, FieldMergeMapAgg, FieldNestedUpdateAgg and (1.x) FieldNestedPartialUpdateAgg,
vectorized: the elements of every record of every key group are laid out flat
(`collection_values.elements`), each gets an id of its value (or of its nested key), and the
fold is segment-wise numpy work over the runs of equal (group, id). Java applies records one by
one to an accumulator that starts null; what that computes:

- A result is null when the key's folded records hold no non-null insert; a null array/map
  contributes nothing, and a retraction finding a null accumulator does nothing (Java: "hard to
  mark the input is retracted without accumulator"). A null retraction does nothing (Java 0.9
  throws a NullPointerException on it; 1.x returns the accumulator).
- ``collect`` (ARRAY): the arrays' elements concatenated in record order, null elements
  included. A retraction removes, per element of the retracted array, one equal element from the
  accumulator, the oldest first. ``fields.<c>.distinct = true``: each value once (nulls as one
  value), a retraction removes it, a later insert adds it again at the end.
- ``merge_map`` (MAP): entries put in record order, a key's newest value wins (null values
  included); a retraction removes the keys of the retracted map, whatever their values.
- ``nested_update`` (ARRAY<ROW>): null elements are dropped (1.x; Java 0.9 keeps them without a
  nested key and throws with one). Without ``fields.<c>.nested-key`` rows are concatenated and a
  retraction removes *every* equal row. With it, the newest row of each nested key wins (1.x
  ``fields.<c>.nested-sequence-field``: the largest sequence, nulls smallest, ties to the newest)
  and a retraction removes its rows' keys. 1.x ``fields.<c>.count-limit``: at most that many rows
  (without a key the oldest rows are kept, later ones dropped; with one, new keys are refused
  once the limit is reached). 1.x ``fields.<c>.nested-key-null-strategy`` for rows whose nested
  key holds a null: merge (default: null equals null), ignore (the row is skipped), error.
- ``nested_partial_update`` (1.x, ARRAY<ROW>, ``nested-key`` required): per nested key, each
  field takes its newest non-null value; it cannot retract.
- ``merge_map_with_keytime`` (1.x): its own module, `aggregate_keytime`.

The options and the types each function takes are read and checked in `aggregate_collection_options`.

Equality is by value (Java 0.9 compares BINARY/VARBINARY elements and map keys by identity, so
it never finds two of them equal; 1.x compares contents, as here). Order: Java's results of
distinct collect, merge_map and keyed nested_update come out of a Java HashSet/HashMap, in hash
order, which carries no meaning; lake_assets orders them by first appearance (an element or key
retracted and added again goes to the end).

Cost: everything is group-wise numpy/Arrow work (bench/bench_collection_aggregates.py: about
1 M records of 4 elements per CPU second, about 10x a sum over a scalar column), except nested_update
with a finite count-limit in the key groups that also hold a retraction: Java's limit depends on
the order of inserts and retractions, so those groups (and only they) loop in Python over their
elements, about 8 us per group of 40 elements (bench/RESULTS.md, session 14).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.aggregate_collection_options import CollectionOptions
from lake_assets.lsm.merge_engine.aggregate_keytime import fold_keytime
from lake_assets.lsm.merge_engine.collection_values import (
    as_is,
    build_like,
    combine_ids,
    elements,
    grouped_cummin,
    grouped_cumsum,
    runs_of,
    value_ids,
)
from lake_assets.lsm.merge_engine.grouping import sequence_rank, valid_mask
from lake_assets.option_types import INT_MAX

# ---------------------------------------------------------------------------------------- fold


def fold_collection(
    func: str,
    opts: CollectionOptions,
    column: str,
    col: pa.Array,
    rows: np.ndarray,
    retract: np.ndarray,
    gid: np.ndarray,
    n_groups: int,
) -> pa.Array:
    """Fold ``col[rows]`` per group in entry order with ``func`` (see the module docstring)."""
    if func == "merge_map_with_keytime":
        return fold_keytime(opts.ts_field, col, rows, gid, n_groups)
    entries = col.take(pa.array(rows, type=pa.int64()))
    valid = valid_mask(entries)
    result_valid = np.zeros(n_groups, dtype=bool)
    result_valid[gid[valid & ~retract]] = True
    values, parent = elements(entries)
    e_gid, e_retract = gid[parent], retract[parent]
    keep = np.ones(len(values), dtype=bool)
    if func in ("nested_update", "nested_partial_update"):
        keep &= valid_mask(values)
    if func == "merge_map":
        ids = value_ids(values.field(0))
    elif func in ("nested_update", "nested_partial_update") and opts.nested_key:
        key_cols = [values.field(name) for name in opts.nested_key]
        keep &= _nested_key_null_rule(column, opts, key_cols, keep)
        ids = combine_ids([value_ids(c) for c in key_cols])
    else:
        ids = value_ids(values)
    idx = np.flatnonzero(keep)
    slots = combine_ids([e_gid[idx], ids[idx]]) if len(idx) else idx
    retracted = e_retract[idx]
    if func == "nested_partial_update":
        return _nested_partial(col.type, values, idx, slots, e_gid, n_groups, result_valid)
    if func == "collect" and not opts.distinct:
        chosen = idx[_collect_survivors(slots, retracted)]
    elif func == "nested_update" and not opts.nested_key:
        chosen = _nested_rows(idx, slots, e_gid, retracted, opts.count_limit)
    else:
        rank = None
        if func == "nested_update" and opts.nested_sequence_field:
            rank = sequence_rank([values.field(name).take(pa.array(idx)) for name in opts.nested_sequence_field])
        limit = opts.count_limit if func == "nested_update" else INT_MAX
        chosen = _keyed(idx, slots, e_gid, retracted, rank, limit)
    # group by group (each path keeps its order inside a group)
    chosen = chosen[np.argsort(e_gid[chosen], kind="stable")]
    counts = np.bincount(e_gid[chosen], minlength=n_groups) if len(chosen) else np.zeros(n_groups, np.int64)
    out = build_like(col.type, counts, values.take(pa.array(chosen, type=pa.int64())), result_valid)
    return as_is(entries, retract, gid, n_groups, out) if func == "merge_map" else out


def _nested_key_null_rule(
    column: str, opts: CollectionOptions, key_cols: list[pa.Array], keep: np.ndarray
) -> np.ndarray:
    """Which rows the nested-key-null-strategy lets through (raises for ``error``)."""
    null_key = np.zeros(len(keep), dtype=bool)
    for c in key_cols:
        null_key |= ~valid_mask(c)
    null_key &= keep
    if opts.nested_key_null_strategy == "merge" or not null_key.any():
        return np.ones(len(keep), dtype=bool)
    if opts.nested_key_null_strategy == "ignore":
        return ~null_key
    raise InvalidDataError(
        f"Column {column!r}: Nested key contains null values. Primary key fields must not be null "
        f"('fields.{column}.nested-key-null-strategy' = 'error')"
    )


def _slot_order(slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Events in (slot, time) order: their positions, each run's first position, each one's run."""
    order = np.argsort(slots, kind="stable")
    first, run = runs_of(slots[order])
    return order, first, run


def _collect_survivors(slots: np.ndarray, retract: np.ndarray) -> np.ndarray:
    """Positions (into ``slots``) of the inserted elements a plain collect keeps.

    Per value, each retracted element removes the oldest present equal element: the number
    present is a running sum held at zero from below (a retraction of nothing does nothing),
    C - min(0, running min of C) for the plain running sum C, and the survivors are the newest
    that many inserts.
    """
    if len(slots) == 0:
        return slots
    order, first, run = _slot_order(slots)
    ins = ~retract[order]
    delta = np.where(ins, 1, -1).astype(np.int64)
    plain = grouped_cumsum(delta, first, run)
    present = plain - np.minimum(0, grouped_cummin(plain, run))
    last = np.r_[first[1:] - 1, len(order) - 1]
    inserts_seen = grouped_cumsum(ins.astype(np.int64), first, run)
    newer_inserts = inserts_seen[last][run] - inserts_seen
    survive = ins & (newer_inserts < present[last][run])
    return np.sort(order[survive])


def _live(order: np.ndarray, first: np.ndarray, run: np.ndarray, retract: np.ndarray) -> np.ndarray:
    """Per event in slot order: an insert after its slot's last retraction."""
    pos = np.arange(len(order), dtype=np.int64)
    is_retract = retract[order]
    last_retract = np.maximum.reduceat(np.where(is_retract, pos, -1), first)
    live: np.ndarray = ~is_retract & (pos > last_retract[run])
    return live


def _keyed(
    idx: np.ndarray, slots: np.ndarray, e_gid: np.ndarray, retract: np.ndarray,
    rank: np.ndarray | None, limit: int,
) -> np.ndarray:
    """Elements kept when each slot (a value or key per group) holds one: the winning insert after
    the slot's last retraction (the newest, or the largest ``rank`` then newest), ordered by
    the first of those inserts."""
    if len(idx) == 0:
        return idx
    if limit < INT_MAX and retract.any():
        return _sequential_keyed(idx, slots, e_gid, retract, rank, limit)
    order, first, run = _slot_order(slots)
    live = _live(order, first, run, retract)
    pos = np.arange(len(order), dtype=np.int64)
    placed = np.minimum.reduceat(np.where(live, pos, len(order)), first)
    present = placed < len(order)
    if rank is None:
        winner = np.maximum.reduceat(np.where(live, pos, -1), first)
    else:
        # the largest rank, ties to the newest: lexsort's last live entry of each slot
        by = np.lexsort((pos, np.where(live, rank[order], -1), run))
        winner = by[np.r_[first[1:] - 1, len(order) - 1]]
    winner, placed = winner[present], order[placed[present]]
    winner = order[winner]
    # output order: group, then where the key was placed
    out_order = np.lexsort((idx[placed], e_gid[idx[placed]]))
    kept = idx[winner[out_order]]
    if limit < INT_MAX:
        groups = e_gid[kept]
        g_first, g_run = runs_of(groups)
        kept = kept[np.arange(len(kept)) - g_first[g_run] < max(limit, 0)]
    return kept


def _nested_rows(
    idx: np.ndarray, slots: np.ndarray, e_gid: np.ndarray, retract: np.ndarray, limit: int
) -> np.ndarray:
    """nested_update without a nested key: the inserted rows after the last retraction of an equal
    row (a retraction removes every equal row), in order; at most ``limit`` per group."""
    if len(idx) == 0:
        return idx
    if limit < INT_MAX and retract.any():
        return _sequential_rows(idx, slots, e_gid, retract, limit)
    order, first, run = _slot_order(slots)
    live = _live(order, first, run, retract)
    kept: np.ndarray = idx[np.sort(order[live])]
    if limit < INT_MAX:
        g_first, g_run = runs_of(e_gid[kept])
        kept = kept[np.arange(len(kept)) - g_first[g_run] < max(limit, 0)]
    return kept


def _nested_partial(
    dtype: pa.DataType, values: pa.Array, idx: np.ndarray, slots: np.ndarray, e_gid: np.ndarray,
    n_groups: int, result_valid: np.ndarray,
) -> pa.Array:
    """nested_partial_update: one row per slot, each field its newest non-null value."""
    if len(idx) == 0:
        return build_like(dtype, np.zeros(n_groups, np.int64), values.slice(0, 0), result_valid)
    order, first, _ = _slot_order(slots)
    placed = order[first]
    out_order = np.lexsort((idx[placed], e_gid[idx[placed]]))
    n_slots = len(first)
    children = []
    for child in values.flatten():
        ok = valid_mask(child)[idx[order]]
        pos = np.arange(len(order), dtype=np.int64)
        newest = np.maximum.reduceat(np.where(ok, pos, -1), first)
        pick = np.where(newest >= 0, idx[order[np.maximum(newest, 0)]], -1)[out_order]
        children.append(child.take(pa.array(pick, type=pa.int64(), mask=pick < 0)))
    rows = pa.StructArray.from_arrays(children, fields=list(dtype.value_type))
    counts = np.bincount(e_gid[idx[placed]], minlength=n_groups) if n_slots else np.zeros(n_groups, np.int64)
    return build_like(dtype, counts, rows, result_valid)


# ------------------------------------------------- sequential fallback (count-limit with retractions)


def _retract_groups(idx: np.ndarray, e_gid: np.ndarray, retract: np.ndarray) -> tuple[np.ndarray, list[range]]:
    """(mask of the elements in groups without a retraction, the element ranges of the other groups);
    ``e_gid[idx]`` is non-decreasing."""
    groups = e_gid[idx]
    first, run = runs_of(groups)
    has_retract = np.zeros(len(first), dtype=bool)
    has_retract[run[retract]] = True
    ends = np.r_[first[1:], len(groups)]
    return ~has_retract[run], [range(first[r], ends[r]) for r in np.flatnonzero(has_retract)]


def _sequential_keyed(
    idx: np.ndarray, slots: np.ndarray, e_gid: np.ndarray, retract: np.ndarray,
    rank: np.ndarray | None, limit: int,
) -> np.ndarray:
    """Java's keyed nested_update with a count limit, applied element by element in the groups
    holding a retraction (dict insertion order stands in for Java's HashMap order)."""
    simple, sequential = _retract_groups(idx, e_gid, retract)
    out = []
    if simple.any():
        out.append(_keyed(idx[simple], slots[simple], e_gid, retract[simple],
                          None if rank is None else rank[simple], limit))
    slot_list, idx_list, retract_list = slots.tolist(), idx.tolist(), retract.tolist()
    rank_list = None if rank is None else rank.tolist()
    for elements_of_group in sequential:
        held: dict[int, tuple[int, int]] = {}  # slot -> (element, rank)
        for j in elements_of_group:
            s = slot_list[j]
            r = 0 if rank_list is None else rank_list[j]
            if retract_list[j]:
                held.pop(s, None)
            elif s in held:
                if r >= held[s][1]:
                    held[s] = (idx_list[j], r)
            elif len(held) < limit:
                held[s] = (idx_list[j], r)
        out.append(np.array([e for e, _ in held.values()], dtype=np.int64))
    return np.concatenate(out) if out else idx[:0]


def _sequential_rows(
    idx: np.ndarray, slots: np.ndarray, e_gid: np.ndarray, retract: np.ndarray, limit: int
) -> np.ndarray:
    """Java's nested_update without a nested key and with a count limit, element by element, in
    the groups holding a retraction."""
    simple, sequential = _retract_groups(idx, e_gid, retract)
    out = [_nested_rows(idx[simple], slots[simple], e_gid, retract[simple], limit)] if simple.any() else []
    slot_list, idx_list, retract_list = slots.tolist(), idx.tolist(), retract.tolist()
    for elements_of_group in sequential:
        held: list[tuple[int, int]] = []  # (slot, element)
        for j in elements_of_group:
            s = slot_list[j]
            if retract_list[j]:
                held = [h for h in held if h[0] != s]
            elif len(held) < limit:
                held.append((s, idx_list[j]))
        out.append(np.array([e for _, e in held], dtype=np.int64))
    return np.concatenate(out) if out else idx[:0]
