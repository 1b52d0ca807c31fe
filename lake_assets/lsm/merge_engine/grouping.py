"""Vectorized key-group helpers shared by the partial-update and aggregation engines.

A merge input is a table sorted by key and then by sequence; these helpers find its key groups and
gather one result row per group with numpy/Arrow work, never a Python loop over rows or keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.key_compare import float_order_codes
from lake_assets.lsm.merge import key_change_mask
from lake_assets.spec.row_kind import RowKind


@dataclass(frozen=True)
class Grouping:
    """Key groups of a key-sorted table: group id per row and each group's first/last row."""

    gid: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @property
    def count(self) -> int:
        """The number of key groups."""
        return len(self.starts)


def group_keys(table: pa.Table, key_names: Sequence[str]) -> Grouping:
    """The key groups of a key-sorted table."""
    change = key_change_mask(table, key_names)
    starts = np.flatnonzero(change)
    ends = np.empty_like(starts)
    if len(starts):
        ends[:-1] = starts[1:] - 1
        ends[-1] = table.num_rows - 1
    return Grouping(np.cumsum(change, dtype=np.int64) - 1, starts, ends)


def np_bool(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow array as a numpy bool array (nulls must have been filled)."""
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)


def valid_mask(col: pa.Array) -> np.ndarray:
    """True where ``col`` is not null."""
    if col.null_count == 0:
        return np.ones(len(col), dtype=bool)
    return np_bool(col.is_valid())


def take_or_null(col: pa.Array, idx: np.ndarray) -> pa.Array:
    """``col[idx]`` with -1 meaning null."""
    missing = idx < 0
    if missing.any():
        return col.take(pa.array(idx, type=pa.int64(), mask=missing))
    return col.take(pa.array(idx, type=pa.int64()))


def last_true(mask: np.ndarray, ends: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """Per group, the last row index in [lower, end] where mask holds, else -1 (forward fill)."""
    if len(mask) == 0:
        return np.full(len(ends), -1, dtype=np.int64)
    filled = np.maximum.accumulate(np.where(mask, np.arange(len(mask), dtype=np.int64), -1))
    cand = filled[ends]
    return np.where(cand >= lower, cand, -1)


def segment_bounds(gid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last entry position of each run of equal values in a non-decreasing gid array."""
    if len(gid) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    breaks = np.flatnonzero(gid[1:] != gid[:-1]) + 1
    first = np.concatenate(([0], breaks))
    last = np.concatenate((breaks - 1, [len(gid) - 1]))
    return first, last


def scatter(values: pa.Array, seg_gid: np.ndarray, n_groups: int) -> pa.Array:
    """Place one value per present group into an array of all groups (absent groups null)."""
    idx = np.full(n_groups, -1, dtype=np.int64)
    idx[seg_gid] = np.arange(len(seg_gid), dtype=np.int64)
    return take_or_null(values, idx)


def hash_aggregate(values: pa.Array, gid: np.ndarray, n_groups: int, agg: str) -> pa.Array:
    """Arrow's hash aggregate ``agg`` of ``values`` per group id; one value per group (null when absent)."""
    # use_threads=False keeps first-appearance order, which hash_list relies on for row order.
    grouped = pa.table({"g": pa.array(gid, type=pa.int64()), "v": values}).group_by(
        "g", use_threads=False
    ).aggregate([("v", agg)])
    out = grouped.column(f"v_{agg}").combine_chunks()
    return scatter(out, grouped.column("g").to_numpy(), n_groups)


def sequence_rank(cols: Sequence[pa.Array]) -> np.ndarray:
    """Dense rank of each row's sequence tuple, nulls smallest, compared field by field (floats by
    Java's Double.compare, as Paimon's sequence comparator: NaN ties NaN and is the newest, -0.0
    is older than 0.0)."""
    cols = [float_order_codes(c) if pa.types.is_floating(c.type) else c for c in cols]
    n = len(cols[0])
    t = pa.table({f"s{i}": c for i, c in enumerate(cols)})
    order = pc.sort_indices(
        t, sort_keys=[(f"s{i}", "ascending", "at_start") for i in range(len(cols))]
    ).to_numpy()
    step = np.zeros(n, dtype=bool)
    if n > 1:
        for c in cols:
            s = c.take(pa.array(order))
            nulls = ~valid_mask(s)
            ne = np_bool(pc.not_equal(s.slice(1), s.slice(0, n - 1)).fill_null(False))
            step[1:] |= ne | (nulls[1:] != nulls[:-1])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.cumsum(step)
    return rank


def fill_required(arr: pa.Array, field: pa.Field, fallback: Callable[[], pa.Array]) -> pa.Array:
    """``arr`` with its nulls taken from ``fallback()`` when ``field`` is NOT NULL."""
    # A -D result has no values, but a NOT NULL column must still hold one: use the record's.
    if field.nullable or arr.null_count == 0:
        return arr
    return pc.if_else(arr.is_valid(), arr, fallback())


def group_seq_max(seq: np.ndarray, starts: np.ndarray) -> pa.Array:
    """The largest ``_SEQUENCE_NUMBER`` of each key group."""
    if len(starts) == 0:
        return pa.array([], type=pa.int64())
    return pa.array(np.maximum.reduceat(seq, starts), type=pa.int64())


def columns_of(table: pa.Table) -> dict[str, pa.Array]:
    """Every column of ``table`` as one contiguous array."""
    return {name: table.column(name).combine_chunks() for name in table.column_names}


def all_single(grouping: Grouping, n_rows: int) -> bool:
    """Whether every key has exactly one record."""
    return grouping.count == n_rows


def keep_singles(table: pa.Table, grouping: Grouping, merged: pa.Table) -> pa.Table:
    """``merged`` (one row per key group) with each group of a single record replaced by that
    record, unchanged.

    Paimon wraps every merge function in ReducerMergeFunctionWrapper, which emits a key's only
    record as it is: a lone -U/-D stays a retraction (kind included) in the level-0 file a write
    buffer flushes, in compaction output and in reads, where it is then dropped or, merged later
    with older records, retracts from them. Folding it alone would turn it into an insert.
    """
    single = grouping.starts == grouping.ends
    if not single.any():
        return merged
    n_groups = grouping.count
    # rows of ``merged`` come first, then the input's: single groups take their input row
    idx = np.where(single, n_groups + grouping.starts, np.arange(n_groups, dtype=np.int64))
    return pa.concat_tables([merged, table]).take(pa.array(idx, type=pa.int64()))


def one_row_per_group(
    table: pa.Table,
    keys: set[str],
    starts: np.ndarray,
    ends: np.ndarray,
    deleted: np.ndarray,
    merged: Callable[[str, pa.Array], pa.Array | None],
) -> pa.Table:
    """One row per key group: its key, its highest sequence number, -D where ``deleted`` else +I,
    and per value column what ``merged`` computes (None: the group's last value)."""
    cols = columns_of(table)
    out = []
    for field in table.schema:
        name, col = field.name, cols[field.name]
        if name in keys:
            arr = col.take(pa.array(starts))
        elif name == SEQUENCE_NUMBER:
            arr = group_seq_max(col.to_numpy(), starts)
        elif name == VALUE_KIND:
            arr = pa.array(np.where(deleted, RowKind.DELETE, RowKind.INSERT).astype(np.int8), type=pa.int8())
        else:
            folded = merged(name, col)
            arr = col.take(pa.array(ends)) if folded is None else folded
        out.append(fill_required(arr, field, partial(_take_rows, col, ends)))
    return pa.Table.from_arrays(out, schema=table.schema)


def _take_rows(col: pa.Array, rows: np.ndarray) -> pa.Array:
    return col.take(pa.array(rows))
