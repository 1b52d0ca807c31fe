"""Paimon 1.x's ``merge_map_with_keytime``: a MAP<K, ROW> whose values carry their own time.

FieldMergeMapWithKeyTimeAgg, vectorized over the key groups (see `aggregate_collections` for the
shared element layout). Java applies a key's maps one by one from a null accumulator:

- The first non-null map is taken as it is; each later one is merged entry by entry into the
  accumulated map: a NULL value removes its key; a value whose time field is NULL is skipped;
  otherwise it replaces the held value when the key is absent, its held value or that value's
  time is NULL, or its time is strictly larger (later equal times lose).
- The time field is ``fields.<c>.ts-field``, else the ROW's last field; Java compares it with
  ``getString(...).toString().compareTo``, so it must be a string (Java throws a
  ClassCastException on any other type; lake_assets refuses it when the engine is built). Arrow
  orders strings by code point, Java by UTF-16 unit: they differ only between characters above
  U+FFFF and those in U+E000-U+FFFF, which timestamps do not hold.
- No retraction (Java's default: it throws unless ``fields.<c>.ignore-retract``). Keys come out in
  first-appearance order (Java: HashMap order); duplicate keys inside one map keep the last one.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lake_assets.errors import OptionError
from lake_assets.lsm.merge_engine.collection_values import build_like, combine_ids, elements, runs_of, value_ids
from lake_assets.lsm.merge_engine.grouping import sequence_rank, valid_mask


def check_keytime_type(column: str, dtype: pa.DataType) -> None:
    """Java's checks of a merge_map_with_keytime column's type (MAP<K, ROW of 2+ fields>)."""
    what = f"Aggregate function 'merge_map_with_keytime' of column {column!r}"
    if not pa.types.is_map(dtype):
        raise OptionError(f"{what}: Data type for field '{column}' must be 'MAP' but was '{dtype}'")
    value = dtype.item_type
    if not pa.types.is_struct(value):
        raise OptionError(f"{what}: Value type of MAP for field '{column}' must be ROW but was '{value}'")
    names = [f.name for f in value]
    if len(names) < 2:
        raise OptionError(f"{what}: ROW type for field '{column}' must have at least 2 fields, but found {len(names)}")


def keytime_field(column: str, dtype: pa.DataType, ts_field: str | None) -> str:
    """The time field of a merge_map_with_keytime column, checked as Java checks it."""
    check_keytime_type(column, dtype)
    what = f"Aggregate function 'merge_map_with_keytime' of column {column!r}"
    names = [f.name for f in dtype.item_type]
    name = names[-1] if ts_field is None else ts_field
    if name not in names:
        raise OptionError(f"{what}: Timestamp field '{name}' not found in ROW type for field '{column}'. "
                          f"Available fields: {names}")
    ts_type = dtype.item_type.field(name).type
    if not (pa.types.is_string(ts_type) or pa.types.is_large_string(ts_type)):
        raise OptionError(f"{what}: its time field {name!r} must be a string (Java reads it with getString), "
                          f"not {ts_type}")
    return name


def fold_keytime(
    ts_field: str, col: pa.Array, rows: np.ndarray, gid: np.ndarray, n_groups: int
) -> pa.Array:
    """Fold the maps ``col[rows]`` (inserts only) per group in entry order (see the module docstring)."""
    entries = col.take(pa.array(rows, type=pa.int64()))
    valid = valid_mask(entries)
    result_valid = np.zeros(n_groups, dtype=bool)
    result_valid[gid[valid]] = True
    # the first non-null map of each group is taken as it is
    first_map = np.zeros(len(rows), dtype=bool)
    first_of_group = np.full(n_groups, len(rows), dtype=np.int64)
    np.minimum.at(first_of_group, gid[valid], np.flatnonzero(valid))
    first_map[first_of_group[first_of_group < len(rows)]] = True
    values, parent = elements(entries)
    if len(values) == 0:
        return build_like(col.type, np.zeros(n_groups, np.int64), values, result_valid)
    e_gid, initial = gid[parent], first_map[parent]
    row = values.field(1)
    row_ok = valid_mask(row)
    ts = row.flatten()[[f.name for f in row.type].index(ts_field)]
    ts_ok = row_ok & valid_mask(ts)
    ts_rank = sequence_rank([ts])
    slots = combine_ids([e_gid, value_ids(values.field(0))])
    order = np.argsort(slots, kind="stable")
    first, run = runs_of(slots[order])
    pos = np.arange(len(order), dtype=np.int64)
    init, later = initial[order], ~initial[order]
    # a later NULL value removes the key: only what follows the last removal counts
    removal = later & ~row_ok[order]
    last_removal = np.maximum.reduceat(np.where(removal, pos, -1), first)
    after = pos > last_removal[run]
    # the held initial value (the first map's last entry of the key), unless removed since
    init_pos = np.maximum.reduceat(np.where(init, pos, -1), first)
    # a NULL initial value or time is replaced by the first later candidate whatever its time
    init_timed = (init_pos >= 0) & np.where(init_pos >= 0, (row_ok & ts_ok)[order][np.maximum(init_pos, 0)], False)
    candidate = (later & row_ok[order] & ts_ok[order] & after) | (init & (pos == init_pos[run]) & init_timed[run]
                                                                 & after)
    # winner: the largest time, ties to the earliest (strictly larger times replace)
    by = np.lexsort((-pos, np.where(candidate, ts_rank[order], -1), run))
    last = np.r_[first[1:] - 1, len(order) - 1]
    winner = by[last]
    has_candidate = candidate[winner]
    # with no timed candidate, an untimed initial value stays (absent a removal)
    keep_init = ~has_candidate & (init_pos >= 0) & (init_pos > last_removal)
    chosen_pos = np.where(has_candidate, winner, np.where(keep_init, init_pos, -1))
    present = chosen_pos >= 0
    # where each key goes: its first appearance after the last removal
    placed = np.minimum.reduceat(np.where(after & (init | candidate), pos, len(order)), first)
    placed = np.where(keep_init, init_pos, placed)
    chosen = order[chosen_pos[present]]
    out = np.lexsort((order[placed[present]], e_gid[chosen]))
    chosen = chosen[out]
    counts = np.bincount(e_gid[chosen], minlength=n_groups)
    return build_like(col.type, counts, values.take(pa.array(chosen, type=pa.int64())), result_valid)
