"""Per-group sums, minimums and maximums of primitive columns with numpy, for the aggregate
functions (`aggregate_functions.fold`).

A merge's entries come grouped: each key group's entries are one contiguous run, in merge order.
Arrow's hash aggregate (`grouping.hash_aggregate`) hashes the group ids through an Acero plan
first; for the short groups of a lookup compaction (a key's old row and its new record) that plan
was most of an aggregation merge (bench/RESULTS.md, "Partial-update and aggregation DV rounds
(session 16)"). Here a run's values are reduced in place:

- ``sum`` adds a run's values one after another, from its first value, in entry order: Java's
  ``FieldSumAgg`` (a run of only -0.0 sums to -0.0, where Arrow's grouped sum, starting from
  +0.0, gives 0.0), one numpy pass per position in the longest run. Runs longer than
  `MAX_RUN` entries, 64-bit integers and decimals are left to `aggregate_arithmetic`. Each sum
  adds in the type `sum_accumulator` gives (a FLOAT in float32, as Java).
- ``min`` and ``max`` of integers, ``bool_and`` / ``bool_or``: order-free, one ``reduceat``.
  Floating point min/max stay with Arrow (its NaN handling is its own).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lake_assets.errors import InvalidDataError

MAX_RUN = 16
"""The longest run `segment_sum` adds position by position (a pass each); longer ones hash."""

_SUMMED_INTEGERS = (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16())


def runs_of(gid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first entry, entry count) of each run of equal values in a non-decreasing ``gid``."""
    if gid.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    first = np.flatnonzero(np.concatenate(([True], gid[1:] != gid[:-1])))
    sizes = np.diff(np.append(first, gid.size))
    return first, sizes


def sum_accumulator(dtype: pa.DataType) -> np.dtype:
    """The numpy type a run's sum adds in: a float column's own (Java's FieldSumAgg adds a FLOAT
    in float32), int64 for the narrow integers (exact, checked against the column's range)."""
    return np.dtype(dtype.to_pandas_dtype()) if pa.types.is_floating(dtype) else np.dtype(np.int64)


def segment_sum(
    column: str, values: pa.Array, retract: np.ndarray, first: np.ndarray, sizes: np.ndarray
) -> pa.Array | None:
    """The sum of each run of ``values`` (no nulls; runs as `runs_of` gives them), retract
    entries subtracted, as the column's type; one value per run. None when this path does not
    apply (the caller folds otherwise). Raises `InvalidDataError` when a running integer sum
    leaves the column's type."""
    dtype = values.type
    if values.null_count or not (pa.types.is_floating(dtype) or dtype in _SUMMED_INTEGERS):
        return None
    if sizes.size and int(sizes.max()) > MAX_RUN:
        return None
    v = values.to_numpy(zero_copy_only=False).astype(sum_accumulator(dtype))
    if retract.any():
        v = np.where(retract, -v, v)
    acc = v[first].copy()  # from the first value, as FieldSumAgg.agg(null, x) = x keeps -0.0
    # Paimon 2.0+ fails when a step of an integer sum leaves the column's type (addExact, ...)
    info = None if pa.types.is_floating(dtype) else np.iinfo(dtype.to_pandas_dtype())
    outside = info is not None and bool(((acc < info.min) | (acc > info.max)).any())
    live = np.flatnonzero(sizes > 1)
    k = 1
    while live.size:
        acc[live] += v[first[live] + k]
        if info is not None:
            outside |= bool(((acc[live] < info.min) | (acc[live] > info.max)).any())
        k += 1
        live = live[sizes[live] > k]
    if outside:
        raise InvalidDataError(f"Aggregate function 'sum' overflowed column {column!r} ({dtype}) at one of its "
                               "steps (Paimon 2.0+ fails on it; Java before 2.0 wrapped around silently)")
    return pa.array(acc.astype(dtype.to_pandas_dtype(), copy=False), type=dtype)


SEGMENT_FUNCTIONS = frozenset({"sum", "min", "max", "bool_and", "bool_or"})
"""The functions this module may fold (the caller falls back where it returns None)."""

_ORDER_FREE = {"min": np.minimum, "max": np.maximum, "bool_and": np.logical_and, "bool_or": np.logical_or}


def segment_reduce(function: str, values: pa.Array, first: np.ndarray) -> pa.Array | None:
    """``min`` / ``max`` of integers, ``bool_and`` / ``bool_or`` of booleans, per run of
    ``values`` (no nulls; ``first``: each run's first entry); None when this path does not apply."""
    dtype = values.type
    ufunc = _ORDER_FREE.get(function)
    if ufunc is None or values.null_count or not values:
        return None
    if function in ("min", "max") and not pa.types.is_integer(dtype):
        return None
    if function in ("bool_and", "bool_or") and not pa.types.is_boolean(dtype):
        return None
    v = values.to_numpy(zero_copy_only=False)
    return pa.array(ufunc.reduceat(v, first), type=dtype)


__all__ = ["MAX_RUN", "SEGMENT_FUNCTIONS", "runs_of", "segment_reduce", "segment_sum", "sum_accumulator"]
