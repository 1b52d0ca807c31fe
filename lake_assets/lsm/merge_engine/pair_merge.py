"""A key's older row and its one new record, merged column by column (lookup compaction's usual step).

A deletion-vector compaction of a partial-update or aggregation table merges each key of a
level-0 file with the key's live row from a level above (`ops.dv_old_values`). In the usual unit
every key has one record and at most one old row, neither a retraction: the key's merge is
``f(old, new)`` per column. Gathering the old and new rows into one interleaved table, finding the
key groups and folding each column over them (the general merge) cost about as much again as the
arithmetic. Here the records stay as they are, the old rows give only the columns the merge reads
(``PairInput.old``, aligned with ``at``: the record position of each old row), and each merged
column is the record's column with the pairs' results put in: a column the merge takes from the
newest record is the record column itself, not a copy.

Every function here equals the engines' general fold over the entries ``[old, new]`` (and over
``[new]`` for a key with no old row); tests/unit/test_pair_merge.py checks them against it on
seeded random data (nulls, -0.0, NaN, overflow).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError
from lake_assets.formats.data_file import VALUE_KIND
from lake_assets.lsm.merge_engine.grouping import fill_required, np_bool
from lake_assets.spec.row_kind import RowKind


@dataclass(frozen=True)
class PairInput:
    """One merge step of keys with one record each: ``records`` (key order, none a retraction),
    ``at`` (per old row, its key's record position, ascending or not) and ``old`` (per column the
    merge reads, the old rows' values, aligned with ``at``)."""

    records: pa.Table
    at: np.ndarray
    old: Mapping[str, pa.Array]


class PairMerging(Protocol):
    """A merge function that merges pairs (the aggregation and partial-update engines)."""

    def pair_columns(self, records: pa.Table) -> list[str] | None:
        """The columns whose old values `merge_pairs` reads for ``records``; None: use `merge`."""
        ...

    def merge_pairs(self, pairs: PairInput) -> pa.Table:
        """What `merge` gives for each key's old row (if any) followed by its one record."""
        ...


def old_by_record(at: np.ndarray, records: int) -> tuple[np.ndarray, bool] | None:
    """Where each of the ``records`` records has an old row (an upsert of existing keys; ``at``
    then lists every record once): per record, the position of its old row, and whether that is
    every row in place (``at`` in record order). The pairs' results are then whole columns, with
    no gather of the records' values or scatter of the results. None where some record has none."""
    if len(at) != records:
        return None
    if np.array_equal(at, np.arange(records)):
        return at, True
    order = np.empty(records, dtype=np.int64)
    order[at] = np.arange(records)
    return order, False


def _by_record(old: pa.Array, order: tuple[np.ndarray, bool]) -> pa.Array:
    """``old`` (aligned with ``at``) in record order (`old_by_record`)."""
    return old if order[1] else old.take(pa.array(order[0]))


def newest_non_null(new: pa.Array, old: pa.Array, at: np.ndarray) -> pa.Array:
    """Per record, its value when not null, else its old row's (partial-update's plain column,
    ``last_non_null_value``)."""
    if not new.null_count:
        return new
    order = old_by_record(at, len(new))
    if order is not None:
        old = _by_record(old, order).cast(new.type)
        return old if new.null_count == len(new) else pc.if_else(new.is_valid(), new, old)
    missing = ~np_bool(new.is_valid())[at]
    if not missing.any():
        return new
    index = np.arange(len(new), dtype=np.int64)
    index[at[missing]] = len(new) + np.flatnonzero(missing)
    return pa.concat_arrays([new, old.cast(new.type)]).take(pa.array(index))


def oldest(new: pa.Array, old: pa.Array, at: np.ndarray, *, skip_nulls: bool) -> pa.Array:
    """Per record, its old row's value where it has one (``first_value``; with ``skip_nulls``, a
    non-null one: ``first_non_null_value``), else its own."""
    take_old = np.ones(len(at), dtype=bool) if not skip_nulls or not old.null_count else np_bool(old.is_valid())
    if not take_old.any():
        return new
    order = old_by_record(at, len(new))
    if order is not None:
        if take_old.all():
            return _by_record(old, order).cast(new.type)
        return pc.if_else(pa.array(take_old[order[0]]), _by_record(old, order).cast(new.type), new)
    index = np.arange(len(new), dtype=np.int64)
    index[at[take_old]] = len(new) + np.flatnonzero(take_old)
    return pa.concat_arrays([new, old.cast(new.type)]).take(pa.array(index))


def pair_sum_type(dtype: pa.DataType) -> type[np.generic] | None:
    """The numpy type a pair's ``sum`` adds in for column type ``dtype`` (the result is cast back,
    overflow an error), None for types left to the general fold (decimals). The one place that
    decides it. Floats add in float64: for two float32 operands the sum rounded back to float32 is
    the float32 addition Java's FieldSumAgg makes (53 >= 2 * 24 + 2 bits, so the double rounding is
    exact), where a run of many values needs `segment_reduce.sum_accumulator`'s float32 steps.
    64-bit integers add in their own type, an overflow found from the signs (`_overflowed`)."""
    if pa.types.is_floating(dtype):
        return np.float64
    if dtype == pa.uint64():
        return np.uint64
    if pa.types.is_integer(dtype):
        return np.int64
    return None


def _values(arr: pa.Array, wide: type[np.generic]) -> tuple[np.ndarray, np.ndarray | None]:
    """``arr`` as numpy in ``wide`` (nulls as 0) and its validity (None: no nulls)."""
    if arr.null_count:
        valid = np_bool(arr.is_valid())
        zero = pa.scalar(False if pa.types.is_boolean(arr.type) else 0, type=arr.type)
        return pc.fill_null(arr, zero).to_numpy(zero_copy_only=False).astype(wide, copy=False), valid
    return arr.to_numpy(zero_copy_only=False).astype(wide, copy=False), None


def _combine(
    column: str, new: pa.Array, old: pa.Array, at: np.ndarray, wide: type[np.generic],
    op: Callable[[np.ndarray, np.ndarray], np.ndarray], checked: bool = False,
) -> pa.Array:
    """Per record, ``op(old, new)`` where both are non-null, else the non-null one (null when
    neither): Java's FieldAggregator ``agg`` for sum, min, max and the bool functions. ``checked``:
    a result that does not fit the column's type raises, as the general fold's sum does."""
    v, v_valid = _values(new, wide)
    o, o_valid = _values(old, wide)
    order = old_by_record(at, len(v))
    every = order is not None
    if order is not None and not order[1]:
        # the old values put in record order: then ``at`` is every record in place
        o = o[order[0]]
        o_valid = None if o_valid is None else o_valid[order[0]]
        at = np.arange(len(v))
    both = v if every else v[at]
    result = op(o, both)
    pair = None
    if v_valid is not None or o_valid is not None:
        nv = np.ones(len(at), dtype=bool) if v_valid is None else v_valid if every else v_valid[at]
        ov = np.ones(len(at), dtype=bool) if o_valid is None else o_valid
        pair = nv & ov
        result = np.where(pair, result, np.where(nv, both, o))
    if checked:
        bad = _overflowed(new.type, o, both, result)
        if pair is not None:
            bad &= pair
        if bad.any():  # the general fold's error (`aggregate_functions._sum`, `segment_reduce.segment_sum`)
            i = int(np.flatnonzero(bad)[0])
            raise InvalidDataError(f"Aggregate function 'sum' overflowed column {column!r} ({new.type}): "
                                   f"{int(o[i]) + int(both[i])} does not fit")
    if every:
        out = result
    else:
        out = v.copy()
        out[at] = result
    valid = v_valid
    if valid is not None and o_valid is not None:
        valid = valid.copy()
        valid[at] |= o_valid
    elif valid is not None:
        valid = valid.copy()
        valid[at] = True
    dtype = new.type
    return pa.array(out.astype(dtype.to_pandas_dtype(), copy=False), type=dtype,
                    mask=None if valid is None else ~valid)


def _overflowed(dtype: pa.DataType, a: np.ndarray, b: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Where the integer sum ``total`` of ``a`` and ``b`` (in `pair_sum_type`'s type) is not
    their exact sum as ``dtype``: out of its range, or wrapped around the 64 bits."""
    if dtype == pa.uint64():
        wrapped: np.ndarray = total < a
        return wrapped
    if dtype.bit_width == 64:
        flipped: np.ndarray = ((a ^ total) & (b ^ total)) < 0  # both operands' sign lost
        return flipped
    info = np.iinfo(dtype.to_pandas_dtype())
    outside: np.ndarray = (total < info.min) | (total > info.max)
    return outside


_EXTREMES = {"min": np.minimum, "max": np.maximum, "bool_and": np.logical_and, "bool_or": np.logical_or}


def pair_function(function: str, dtype: pa.DataType) -> bool:
    """Whether `fold_pair` folds aggregate ``function`` of a ``dtype`` column (no retraction)."""
    if function in ("last_value", "last_non_null_value", "first_value", "first_non_null_value"):
        return True
    if function == "sum":
        return pair_sum_type(dtype) is not None
    if function in ("min", "max"):  # floats: NaN ordering stays with the general fold
        return bool(pa.types.is_integer(dtype))
    if function in ("bool_and", "bool_or"):
        return bool(pa.types.is_boolean(dtype))
    return False


def reads_old(function: str, new: pa.Array) -> bool:
    """Whether `fold_pair` of ``function`` reads the old rows' values for records ``new``."""
    if function == "last_value":
        return False
    if function == "last_non_null_value":
        return bool(new.null_count)
    return True


def fold_pair(column: str, function: str, new: pa.Array, old: pa.Array | None, at: np.ndarray) -> pa.Array:
    """Aggregate ``function`` (`pair_function`) of each key's old value (where ``at`` gives one)
    then its record's, per record; ``old`` may be None where `reads_old` says it is not read."""
    if old is None or not len(at):
        return new
    if function == "last_non_null_value":
        return newest_non_null(new, old, at)
    if function in ("first_value", "first_non_null_value"):
        return oldest(new, old, at, skip_nulls=function == "first_non_null_value")
    if function == "sum":
        wide = pair_sum_type(new.type)
        assert wide is not None
        return _combine(column, new, old, at, wide, np.add, checked=wide is not np.float64)
    if function in _EXTREMES:
        # min, max and the bool functions pick one of their operands: computed in the column's
        # own type (no widening copy)
        return _combine(column, new, old.cast(new.type), at, new.type.to_pandas_dtype(), _EXTREMES[function])
    return new  # last_value: the record's


def merged_pairs(pairs: PairInput, merged: Mapping[str, pa.Array], singles_as_they_are: bool) -> pa.Table:
    """The step's output, one row per record: ``merged`` columns where given, else the record's
    (keys, ``_SEQUENCE_NUMBER``: a record is never older than its old row); +I, or with
    ``singles_as_they_are`` a key without an old row keeps its record's kind (Java's reducer
    wrapper emits a lone record as it is). A NOT NULL column left null takes the record's value,
    as `grouping.one_row_per_group` does."""
    records = pairs.records
    n = records.num_rows
    out = []
    for field in records.schema:
        name = field.name
        col = records.column(name).combine_chunks()
        if name == VALUE_KIND:
            if singles_as_they_are:
                kinds = col.to_numpy().copy()
                kinds[pairs.at] = RowKind.INSERT
            else:
                kinds = np.zeros(n, dtype=np.int8)
            out.append(pa.array(kinds.astype(np.int8), type=pa.int8()))
            continue
        arr = merged.get(name, col)
        out.append(fill_required(arr, field, _itself(col)))
    return pa.Table.from_arrays(out, schema=records.schema)


def _itself(arr: pa.Array) -> Callable[[], pa.Array]:
    return lambda: arr


__all__ = ["PairInput", "PairMerging", "fold_pair", "merged_pairs", "newest_non_null", "oldest", "pair_function",
           "pair_sum_type", "reads_old"]
