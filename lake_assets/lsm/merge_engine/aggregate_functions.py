"""The aggregate functions of the aggregation engine (and of partial-update's sequence groups).

Paimon's FieldAggregator per column, vectorized: `fold` folds the records of every key group of a
column at once, with numpy/Arrow group-wise work.

- Implemented: sum, product, min, max, last_value, last_non_null_value, first_value,
  first_non_null_value (alias first_not_null_value), listagg (``fields.<c>.list-agg-delimiter``,
  default ","), bool_and, bool_or; collect, merge_map, nested_update, nested_partial_update,
  merge_map_with_keytime in `aggregate_collections`; the sketch / bitmap functions rbm32, rbm64,
  hll_sketch, theta_sketch over VARBINARY columns in `aggregate_sketches`. Retract support: sum
  subtracts, product divides, last_value becomes null, last_non_null_value becomes null when the
  retracted value is non-null; the others
  raise ``InvalidDataError`` unless ``fields.<c>.ignore-retract = true``.
- ``count`` is not a Paimon function (Paimon has no count aggregate): it raises
  ``UnsupportedFeatureError``; count rows with ``sum`` over a column that always holds 1.
  Unknown function names raise the same error, always when the engine is built, never mid-merge.
- Nulls never contribute (sum/product/min/max/listagg/bool_* of only nulls is null).
- sum is exact, then cast back to the column type: integer or decimal overflow raises
  ``InvalidDataError`` naming the column (Paimon's Java wraps ints silently; decimals keep their
  precision and scale). product: the first non-null value starts the product whatever its kind (as
  Paimon: a retract on an empty accumulator yields the value), later inserts multiply, later
  retracts divide. The division happens once at the end (integers truncate toward zero, so results
  differ from Java's step-by-step division only when a retracted factor does not divide the
  product); integer overflow of either product raises; decimal products round half-up to the
  column scale at each multiplication.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError, OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge_engine.aggregate_collections import (
    COLLECTION_FUNCTIONS,
    NO_COLLECTION_OPTIONS,
    RETRACTABLE_COLLECTIONS,
    CollectionOptions,
    check_collection_type,
    fold_collection,
)
from lake_assets.lsm.merge_engine.aggregate_sketches import SKETCH_FUNCTIONS, check_sketch_column, fold_sketches
from lake_assets.lsm.merge_engine.grouping import (
    hash_aggregate,
    scatter,
    segment_bounds,
    take_or_null,
    valid_mask,
)
from lake_assets.lsm.merge_engine.segment_reduce import SEGMENT_FUNCTIONS, runs_of, segment_reduce, segment_sum

SUPPORTED_FUNCTIONS = frozenset({
    "sum", "product", "min", "max", "last_value", "last_non_null_value", "first_value",
    "first_non_null_value", "listagg", "bool_and", "bool_or",
}) | COLLECTION_FUNCTIONS
_ALIASES = {"first_not_null_value": "first_non_null_value"}
_RETRACTABLE = frozenset({"sum", "product", "last_value", "last_non_null_value"}) | RETRACTABLE_COLLECTIONS


@dataclass(frozen=True)
class FieldFunction:
    """How one column folds: the aggregate function and its per-field options."""

    column: str
    function: str
    ignore_retract: bool = False
    delimiter: str = ","
    collection: CollectionOptions = NO_COLLECTION_OPTIONS


def _is_numeric(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype))


def _is_string(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype))


def _is_nested(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_nested(dtype) or pa.types.is_dictionary(dtype))


def resolve_function(column: str, dtype: pa.DataType, name: str) -> str:
    """The canonical function name, after checking it exists and suits the column type."""
    func = name.strip().lower()
    func = _ALIASES.get(func, func)
    if func == "count":
        raise UnsupportedFeatureError(
            f"Column {column!r}: Paimon has no 'count' aggregate function; to count rows, add a "
            "column that always holds 1 and aggregate it with 'sum'"
        )
    if func in SKETCH_FUNCTIONS:
        check_sketch_column(column, dtype, func)
        return func
    if func not in SUPPORTED_FUNCTIONS:
        raise UnsupportedFeatureError(f"Column {column!r}: unknown aggregate function {name!r}")
    if func in ("sum", "product") and not _is_numeric(dtype):
        raise OptionError(f"Aggregate function {func!r} of column {column!r} needs a numeric type, not {dtype}")
    if func == "listagg" and not _is_string(dtype):
        raise OptionError(f"Aggregate function 'listagg' of column {column!r} needs a string type, not {dtype}")
    if func in ("bool_and", "bool_or") and not pa.types.is_boolean(dtype):
        raise OptionError(f"Aggregate function {func!r} of column {column!r} needs a boolean type, not {dtype}")
    if func in COLLECTION_FUNCTIONS:
        check_collection_type(column, dtype, func)
    if func in ("min", "max") and _is_nested(dtype):
        raise OptionError(f"Aggregate function {func!r} of column {column!r} cannot order type {dtype}")
    return func


# ---------------------------------------------------------------- fold kernels


def _overflowed_int64(wrapped: np.ndarray, approx: np.ndarray) -> np.ndarray:
    """True where an exact integer product left int64, from its wrapped and float64 values.

    The float product's relative error is far below 1e-6, so outside a thin band around 2**63 the
    float decides; inside it a wrapped result has the opposite sign of the true one.
    """
    limit = 2.0**63
    mag = np.abs(approx)
    big = mag > limit * (1 + 1e-6)
    band = (mag >= limit * (1 - 1e-6)) & ~big
    overflowed: np.ndarray = big | (band & (np.sign(wrapped) != np.sign(approx)))
    return overflowed


def _int_product(col: str, v: np.ndarray, first: np.ndarray, n_seg: int) -> np.ndarray:
    if len(v) == 0:
        return np.zeros(n_seg, dtype=np.int64)
    with np.errstate(all="ignore"):
        wrapped = np.multiply.reduceat(v, first)
        approx = np.multiply.reduceat(v.astype(np.float64), first)
    has_zero = np.logical_or.reduceat(v == 0, first)
    bad = _overflowed_int64(wrapped, approx) & ~has_zero
    if bad.any():
        raise InvalidDataError(f"Aggregate function 'product' overflowed column {col!r}")
    return np.where(has_zero, 0, wrapped)


def _tree_reduce(
    values: pa.Array, seg: np.ndarray, combine: Callable[[pa.Array, pa.Array], pa.Array]
) -> tuple[pa.Array, np.ndarray]:
    """Fold each run of equal ``seg`` ids with ``combine``, in order, by pairwise halving passes."""
    while len(seg) > 1:
        m = len(seg)
        positions = np.arange(m, dtype=np.int64)
        run_start = np.maximum.accumulate(np.where(np.r_[True, seg[1:] != seg[:-1]], positions, 0))
        left = ((positions - run_start) % 2 == 0) & np.r_[seg[1:] == seg[:-1], False]
        if not left.any():
            break
        li = np.flatnonzero(left)
        merged = combine(values.take(pa.array(li)), values.take(pa.array(li + 1)))
        keep = np.flatnonzero(~np.r_[False, left[:-1]])
        slot = np.cumsum(left) - 1
        src = np.where(left[keep], m + slot[keep], keep)
        values = pa.concat_arrays([values, merged.cast(values.type)]).take(pa.array(src))
        seg = seg[keep]
    return values, seg


def _decimal_product(col: str, vals: pa.Array, num_mask: np.ndarray, seg: np.ndarray, n_groups: int) -> pa.Array:
    dtype = vals.type
    work = pa.decimal256(dtype.precision, dtype.scale)

    def times(a: pa.Array, b: pa.Array) -> pa.Array:
        exact = pc.multiply(a, b)
        return _decimal_to(col, pc.round(exact, dtype.scale, round_mode="half_up"), work)

    def product_of(mask: np.ndarray) -> pa.Array:
        idx = np.flatnonzero(mask)
        if len(idx) == 0:
            return pa.nulls(n_groups, type=work)
        folded, seg_ids = _tree_reduce(vals.take(pa.array(idx)).cast(work), seg[idx], times)
        return scatter(folded, seg_ids, n_groups)

    num = product_of(num_mask)
    den = product_of(~num_mask)
    if den.null_count < len(den):
        if pc.any(pc.equal(den, pa.scalar(Decimal(0), type=work))).as_py():
            raise _zero_divisor(col)
        quotient = pc.round(pc.divide(num, den), dtype.scale, round_mode="half_up")
        num = pc.if_else(den.is_valid(), _decimal_to(col, quotient, work), num)
    return _decimal_to(col, num, dtype)


def _zero_divisor(col: str) -> InvalidDataError:
    return InvalidDataError(f"Aggregate function 'product' of column {col!r} retracted a zero (division by zero)")


def _decimal_to(col: str, arr: pa.Array, dtype: pa.DataType) -> pa.Array:
    try:
        return pc.cast(arr, dtype)
    except pa.ArrowInvalid as e:
        raise InvalidDataError(f"Aggregate result of column {col!r} does not fit {dtype}: {e}") from e


def _product(col: str, values: pa.Array, retract: np.ndarray, gid: np.ndarray, n_groups: int) -> pa.Array:
    dtype = values.type
    first, _ = segment_bounds(gid)
    # As in Paimon, the first value starts the product even when it is a retraction.
    is_den = retract.copy()
    is_den[first] = False
    seg_gid = gid[first]
    if pa.types.is_decimal(dtype):
        try:
            return _decimal_product(col, values, ~is_den, gid, n_groups)
        except pa.ArrowInvalid as e:
            raise InvalidDataError(f"Aggregate function 'product' failed on column {col!r} ({dtype}): {e}") from e
    if pa.types.is_floating(dtype):
        v = values.to_numpy(zero_copy_only=False).astype(np.float64)
        with np.errstate(all="ignore"):
            num = np.multiply.reduceat(np.where(is_den, 1.0, v), first) if len(v) else v
            den = np.multiply.reduceat(np.where(is_den, v, 1.0), first) if len(v) else v
            out = num / den
        return scatter(pa.array(out).cast(dtype), seg_gid, n_groups)
    v = values.to_numpy(zero_copy_only=False).astype(np.int64)
    num = _int_product(col, np.where(is_den, 1, v), first, len(first))
    den = _int_product(col, np.where(is_den, v, 1), first, len(first))
    if (den == 0).any():
        raise _zero_divisor(col)
    # Java integer division truncates toward zero.
    quot = num // den
    quot += ((num % den) != 0) & ((num < 0) != (den < 0))
    try:
        out = pc.cast(pa.array(quot, type=pa.int64()), dtype)
    except pa.ArrowInvalid as e:
        raise InvalidDataError(f"Aggregate function 'product' overflowed column {col!r} ({dtype}): {e}") from e
    return scatter(out, seg_gid, n_groups)


def _sum(col: str, values: pa.Array, retract: np.ndarray, gid: np.ndarray, n_groups: int) -> pa.Array:
    dtype = values.type
    # Sum in a type that cannot overflow, then cast back: overflow becomes an error, not a wrap.
    if pa.types.is_integer(dtype):
        wide = pa.decimal128(38, 0) if dtype.bit_width == 64 else pa.int64()
    elif pa.types.is_decimal(dtype):
        wide = pa.decimal128(38, dtype.scale) if dtype.precision <= 38 else pa.decimal256(76, dtype.scale)
    else:
        wide = pa.float64()
    vals = values.cast(wide)
    if retract.any():
        vals = pc.if_else(pa.array(retract), pc.negate(vals), vals)
    summed = hash_aggregate(vals, gid, n_groups, "sum")
    if pa.types.is_floating(dtype):
        summed = _keep_negative_zero(vals, gid, n_groups, summed)
    try:
        return pc.cast(summed, dtype)
    except pa.ArrowInvalid as e:
        raise InvalidDataError(f"Aggregate function 'sum' overflowed column {col!r} ({dtype}): {e}") from e


def _keep_negative_zero(vals: pa.Array, gid: np.ndarray, n_groups: int, summed: pa.Array) -> pa.Array:
    # Java adds from the first value (FieldSumAgg.agg(null, x) = x), so a group whose every term
    # is -0.0 sums to -0.0; Arrow's sum starts from +0.0 and gives 0.0. Under round-to-nearest a
    # sum is -0.0 exactly when all its terms are, so that is the only case to mend.
    v = vals.to_numpy(zero_copy_only=False)
    other = (v != 0) | ~np.signbit(v)
    if not len(v) or other.all():
        return summed
    all_negative_zero = (np.bincount(gid, minlength=n_groups) > 0) & (
        np.bincount(gid, weights=other, minlength=n_groups) == 0)
    return pc.if_else(pa.array(all_negative_zero), pa.scalar(-0.0, summed.type), summed)


def check_retractable(fn: FieldFunction, retract: np.ndarray) -> None:
    """Raise when ``fn`` meets a retraction (``retract`` flags) it can neither apply nor ignore."""
    if retract.any() and fn.function not in _RETRACTABLE and not fn.ignore_retract:
        raise InvalidDataError(
            f"Aggregate function {fn.function!r} of column {fn.column!r} cannot retract a -U/-D record; "
            f"set 'fields.{fn.column}.ignore-retract' = 'true' to ignore retractions"
            + (" (Paimon's FieldAggregator refuses it too)" if fn.function in SKETCH_FUNCTIONS else "")
        )


def fold(
    fn: FieldFunction,
    col: pa.Array,
    rows: np.ndarray,
    retract: np.ndarray,
    gid: np.ndarray,
    n_groups: int,
) -> pa.Array:
    """Fold ``col[rows]`` per group in entry order; one result per group (null when no entries).

    ``rows`` are row positions grouped by the non-decreasing ``gid`` (a row may be two entries:
    partial-update's leading retraction is its image, then its own retraction); ``retract`` flags
    retract entries.
    """
    func = fn.function
    if retract.any():
        check_retractable(fn, retract)
        if fn.ignore_retract or func not in _RETRACTABLE:
            keep = ~retract
            rows, gid, retract = rows[keep], gid[keep], retract[keep]
    if func in COLLECTION_FUNCTIONS:
        return fold_collection(func, fn.collection, fn.column, col, rows, retract, gid, n_groups)
    valid = valid_mask(col)[rows]
    if func in ("last_value", "first_value"):
        sel_rows, sel_gid, sel_retract = rows, gid, retract
    else:
        sel_rows, sel_gid, sel_retract = rows[valid], gid[valid], retract[valid]
    if func in ("last_value", "last_non_null_value", "first_value", "first_non_null_value"):
        first, last = segment_bounds(sel_gid)
        pick = last if func.startswith("last") else first
        idx = np.full(n_groups, -1, dtype=np.int64)
        idx[sel_gid[pick]] = np.where(sel_retract[pick], -1, sel_rows[pick])
        return take_or_null(col, idx)
    if func in SKETCH_FUNCTIONS:
        return fold_sketches(func, fn.column, col, rows, gid, n_groups)
    values = col.take(pa.array(sel_rows, type=pa.int64()))
    if func in SEGMENT_FUNCTIONS:  # numpy over each group's run of entries, where it applies
        first, sizes = runs_of(sel_gid)
        fast = (segment_sum(fn.column, values, sel_retract, first, sizes) if func == "sum"
                else segment_reduce(func, values, first))
        if fast is not None:  # one value per group with entries: every group, or scattered
            return fast if first.size == n_groups else scatter(fast, sel_gid[first], n_groups)
    if func == "sum":
        return _sum(fn.column, values, sel_retract, sel_gid, n_groups)
    if func == "product":
        if len(sel_rows) == 0:
            return pa.nulls(n_groups, type=col.type)
        return _product(fn.column, values, sel_retract, sel_gid, n_groups)
    if func == "listagg":
        lists = hash_aggregate(values, sel_gid, n_groups, "list")
        return pc.binary_join(lists, fn.delimiter).cast(col.type)
    agg = {"min": "min", "max": "max", "bool_and": "all", "bool_or": "any"}[func]
    return hash_aggregate(values, sel_gid, n_groups, agg).cast(col.type)

