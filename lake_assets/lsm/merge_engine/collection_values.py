"""Vectorized element work over ARRAY and MAP columns, for the collection aggregate functions.

`elements` lays the elements of a list (or map) array out flat with the entry each came from;
`value_ids` gives every value a dense integer id so that equal values share an id (nested types
included, nulls equal to nulls, NaN to NaN, -0.0 apart from 0.0: Java's ``Double.equals``);
`grouped_*` are segment-wise scans over runs of equal ids; `build_like` assembles one list (or
map) per group from chosen elements. All numpy/Arrow work, no Python loop over rows or elements.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.lsm.merge_engine.grouping import valid_mask


def is_list(dtype: pa.DataType) -> bool:
    """An Arrow list type Paimon's ARRAY maps to (list or large_list; not map)."""
    return bool((pa.types.is_list(dtype) or pa.types.is_large_list(dtype)) and not pa.types.is_map(dtype))


def entry_lengths(arr: pa.Array) -> np.ndarray:
    """The number of elements of each entry of a list or map array (0 for a null entry)."""
    # from the offsets: Arrow's list_value_length has no kernel for maps
    lengths = np.diff(np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64))
    out: np.ndarray = np.where(valid_mask(arr), lengths, 0)
    return out


def as_is(entries: pa.Array, retract: np.ndarray, gid: np.ndarray, n_groups: int, folded: pa.Array) -> pa.Array:
    """``folded`` with each group whose only non-null insert no non-empty retraction follows given
    that entry as it is: Java's ``agg(null, v)`` (and ``agg(v, null)``, ``retract(v, {})``) return
    ``v`` untouched, where the element fold would drop a map's duplicate keys."""
    inserts = valid_mask(entries) & ~retract
    count = np.bincount(gid[inserts], minlength=n_groups)
    pos = np.full(n_groups, -1, dtype=np.int64)
    pos[gid[inserts]] = np.flatnonzero(inserts)
    emptying = np.flatnonzero(retract & (entry_lengths(entries) > 0))
    last_retract = np.full(n_groups, -1, dtype=np.int64)
    np.maximum.at(last_retract, gid[emptying], emptying)
    taken = (count == 1) & (last_retract < pos)
    if not taken.any():
        return folded
    slots = np.where(taken, n_groups + pos, np.arange(n_groups, dtype=np.int64))
    return pa.concat_arrays([folded, entries.cast(folded.type)]).take(pa.array(slots, type=pa.int64()))


def elements(arr: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Every element of the non-null entries of a list or map array (a map's as its key/value
    struct entries), entry by entry in order, and the entry index of each element."""
    lengths = entry_lengths(arr)
    parent = np.repeat(np.arange(len(arr), dtype=np.int64), lengths)
    # offsets index arr.values even when arr is a slice; a null entry's range is skipped
    starts = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)[:-1]
    before = np.cumsum(lengths) - lengths
    idx = starts[parent] + np.arange(len(parent), dtype=np.int64) - before[parent]
    return arr.values.take(pa.array(idx, type=pa.int64())), parent


def combine_ids(columns: Sequence[np.ndarray]) -> np.ndarray:
    """Dense ids of the tuples of several id columns (equal tuples, equal ids)."""
    out = np.asarray(columns[0], dtype=np.int64)
    for col in columns[1:]:
        col = np.asarray(col, dtype=np.int64)
        if len(out) == 0:
            return out
        out = np.unique(out * (int(col.max()) + 1) + col, return_inverse=True)[1].astype(np.int64).reshape(-1)
    return out


def value_ids(arr: pa.Array) -> np.ndarray:
    """A dense id per value of ``arr``: equal values (and nulls) share an id."""
    dtype = arr.type
    if pa.types.is_dictionary(dtype):
        return value_ids(arr.dictionary_decode())
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    if pa.types.is_struct(dtype):
        # a null row differs from a row of nulls: its validity is part of the value
        children = [value_ids(child) for child in arr.flatten()]
        return combine_ids([*children, valid_mask(arr).astype(np.int64)])
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_map(dtype):
        values, _ = elements(arr)
        child = value_ids(values).astype("<i8")
        # each entry as the bytes of its elements' ids: equal sequences, equal byte strings
        offsets = np.concatenate(([0], np.cumsum(entry_lengths(arr)) * 8)).astype(np.int64)
        as_bytes = pa.Array.from_buffers(
            pa.large_binary(), len(arr), [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(child.tobytes())]
        )
        return combine_ids([_encoded(as_bytes), valid_mask(arr).astype(np.int64)])
    return _encoded(arr)


def _encoded(arr: pa.Array) -> np.ndarray:
    # Arrow's hash encoding: NaN equals NaN and -0.0 differs from 0.0, as Java's Double.equals
    indices = pc.dictionary_encode(arr, null_encoding="encode").indices
    return np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def runs_of(sorted_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first position of each run of equal values, run number of each position) of a sorted array."""
    if len(sorted_ids) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]
    return np.flatnonzero(change), np.cumsum(change, dtype=np.int64) - 1


def grouped_cumsum(values: np.ndarray, first: np.ndarray, run: np.ndarray) -> np.ndarray:
    """Inclusive running sum of ``values`` restarting at every run."""
    total = np.cumsum(values, dtype=np.int64)
    before = total[first] - values[first]
    out: np.ndarray = total - before[run]
    return out


def grouped_cummin(values: np.ndarray, run: np.ndarray) -> np.ndarray:
    """Running minimum of ``values`` restarting at every run (runs in order)."""
    if len(values) == 0:
        return values
    # shift each later run below every earlier value, so the scan never carries across runs
    span = int(values.max()) - int(values.min()) + 1
    shift = run * span
    out: np.ndarray = np.minimum.accumulate(values - shift) + shift
    return out


def build_like(dtype: pa.DataType, counts: np.ndarray, values: pa.Array, valid: np.ndarray) -> pa.Array:
    """A list (or map) array of type ``dtype``: entry i holds the next ``counts[i]`` of ``values``
    (a map's key/value struct entries), null where ``valid`` is False."""
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    mask = None if valid.all() else pa.array(~valid)
    if pa.types.is_map(dtype):
        if len(values) == 0:
            values = pa.array([], type=pa.struct([dtype.key_field, dtype.item_field]))
        return pa.MapArray.from_arrays(
            pa.array(offsets, type=pa.int32()), values.field(0), values.field(1), type=dtype, mask=mask
        )
    if pa.types.is_large_list(dtype):
        return pa.LargeListArray.from_arrays(pa.array(offsets, type=pa.int64()), values, type=dtype, mask=mask)
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), values, type=dtype, mask=mask)
