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
- Nulls never contribute (sum/product/min/max/listagg/bool_* of only nulls is null); nor do blank
  strings to listagg (Paimon 2.0+, `aggregate_listagg`). FLOAT/DOUBLE min/max order as Java's
  ``Double.compare`` (NaN above +Infinity, -0.0 below 0.0: `aggregate_float_order`).
- sum and product compute in the column's own type, record by record, as Java's FieldSumAgg /
  FieldProductAgg (a FLOAT in float32, an integer step that overflows fails as in Paimon 2.0+,
  decimals with Java's precision rule): `aggregate_arithmetic`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lake_assets.errors import InvalidDataError, OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge_engine.aggregate_arithmetic import product_fold, sum_fold
from lake_assets.lsm.merge_engine.aggregate_collection_options import (
    COLLECTION_FUNCTIONS,
    NO_COLLECTION_OPTIONS,
    RETRACTABLE_COLLECTIONS,
    CollectionOptions,
    check_collection_type,
)
from lake_assets.lsm.merge_engine.aggregate_collections import fold_collection
from lake_assets.lsm.merge_engine.aggregate_float_order import float_extreme
from lake_assets.lsm.merge_engine.aggregate_listagg import fold_listagg, non_blank
from lake_assets.lsm.merge_engine.aggregate_sketches import SKETCH_FUNCTIONS, check_sketch_column, fold_sketches
from lake_assets.lsm.merge_engine.grouping import (
    hash_aggregate,
    scatter,
    segment_bounds,
    take_or_null,
    valid_mask,
)
from lake_assets.lsm.merge_engine.segment_reduce import SEGMENT_FUNCTIONS, runs_of, segment_reduce, segment_sum
from lake_assets.refusal_actions import ACTION_MARK

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
        known = ", ".join(sorted(SUPPORTED_FUNCTIONS | SKETCH_FUNCTIONS))
        raise UnsupportedFeatureError(
            f"Column {column!r}: unknown aggregate function {name!r}. {ACTION_MARK}name one of {known}; a table "
            "that carries a newer Paimon's (or a plug-in's) function is merged by that Paimon only: use it")
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
    valid = (non_blank(col) if func == "listagg" else valid_mask(col))[rows]
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
    if func in ("min", "max"):  # FLOAT / DOUBLE in Java's order (-0.0 < 0.0 < ... < NaN)
        first, sizes = runs_of(sel_gid)
        ordered = float_extreme(func, values, first, sizes)
        if ordered is not None:
            return ordered if first.size == n_groups else scatter(ordered, sel_gid[first], n_groups)
    if func == "sum":
        return sum_fold(fn.column, values, sel_retract, sel_gid, n_groups)
    if func == "product":
        return product_fold(fn.column, values, sel_retract, sel_gid, n_groups)
    if func == "listagg":
        return fold_listagg(values, sel_gid, n_groups, fn.delimiter, col.type)
    agg = {"min": "min", "max": "max", "bool_and": "all", "bool_or": "any"}[func]
    return hash_aggregate(values, sel_gid, n_groups, agg).cast(col.type)

