"""Partial-update and aggregation merge engines, vectorized over Arrow tables.

Both engines follow docs/format.md §10.1-§10.2 and Paimon's documented behaviour. Every merge is
group-wise numpy/Arrow work over a table sorted by key and sequence: no Python loop over rows or keys.

A key with a single record comes out as that record, unchanged - kind included - as Paimon's
ReducerMergeFunctionWrapper emits it: a commit whose only record of a key is a -U/-D keeps it as
a retraction, which later merges apply to the older records (the rules below are for keys with
several records). The record is still checked: one the engine could never apply is rejected.

Partial-update (``merge-engine = partial-update``):

- A newer record overwrites only its non-null fields. -U/-D records raise ``InvalidDataError``
  unless ``ignore-delete`` (alias ``partial-update.ignore-delete``) drops them,
  ``partial-update.remove-record-on-delete`` makes a -D delete the whole row, or sequence groups are
  configured. The two delete options conflict with each other, and remove-on-delete conflicts with
  sequence groups, as in Paimon (``OptionError``).
- remove-on-delete: a -D resets the row and the result is -D unless inserts follow it; those start a
  new row. A -U does nothing at all (Paimon lets a trailing -U flip the result back to an empty +I
  row; we keep the -D).
- ``fields.<s1>[,<s2>].sequence-group = <a>,<b>``: a record whose group sequence is all-null leaves
  the group alone. A record whose sequence tuple (nulls smallest) is not older than the group's
  current one wins the group: an insert sets every column of the group (nulls included), a retract
  nulls them. Retracts compare with ``>=`` like inserts (as Paimon's code does), so a -D carrying
  the current sequence deletes the group. The group's sequence columns keep the largest sequence.
- Aggregate functions are allowed on grouped columns only (Paimon rejects any other function than
  last_non_null_value outside a group). Inside a group they fold the group's records in
  group-sequence order, ties in arrival order. That equals Paimon for plain columns, last_value and
  the order-free functions (sum, product, min, max, bool_*), and for every function when group
  sequences arrive in non-decreasing order; Paimon releases disagree among themselves about
  out-of-order first_value/last_non_null_value/listagg, so we keep the plain definition.
- Result kind: +I when the key saw an insert; -D when it saw only retracts (Paimon: "no insert
  seen"). With sequence groups that -D row carries each group's largest sequence and the *retracted
  amounts* (e.g. the sum of retracted values), so merging it again later as a retract has the same
  effect as the original retracts: merge(merge(A) + B) == merge(A + B).

Aggregation (``merge-engine = aggregation``):

- Function per column: ``fields.<c>.aggregate-function``, else ``fields.default-aggregate-function``,
  else last_non_null_value. Key columns are kept; ``sequence.field`` columns use last_value.
- Implemented: sum, product, min, max, last_value, last_non_null_value, first_value,
  first_non_null_value (alias first_not_null_value), listagg (``fields.<c>.list-agg-delimiter``,
  default ","), bool_and, bool_or. Retract support: sum subtracts, product divides, last_value
  becomes null, last_non_null_value becomes null when the retracted value is non-null; the others
  raise ``InvalidDataError`` unless ``fields.<c>.ignore-retract = true``.
- ``count`` is not a Paimon function (Paimon has no count aggregate): it raises
  ``UnsupportedFeatureError``; count rows with ``sum`` over a column that always holds 1.
  Paimon functions we do not implement (collect, merge_map, sketches, ...) raise the same error,
  unknown names too, always when the engine is built, never mid-merge.
- ``aggregation.remove-record-on-delete``: a -D resets the key; the result is -D unless records
  follow it. ``ignore-delete`` drops retracts before merging.
- Nulls never contribute (sum/product/min/max/listagg/bool_* of only nulls is null).
- sum is exact, then cast back to the column type: integer or decimal overflow raises
  ``InvalidDataError`` naming the column (Paimon's Java wraps ints silently; decimals keep their
  precision and scale). product: the first non-null value starts the product whatever its kind (as
  Paimon: a retract on an empty accumulator yields the value), later inserts multiply, later
  retracts divide. The division happens once at the end (integers truncate toward zero, so results
  differ from Java's step-by-step division only when a retracted factor does not divide the
  product); integer overflow of either product raises; decimal products round half-up to the
  column scale at each multiplication.

Merged results are valid merge inputs (compaction may merge only the newest files of a bucket):
merge(X + merge(Y) + Z) == merge(X + Y + Z). This holds except where one output row cannot carry
the needed state (Paimon shares each case): a last_non_null_value retract that nulled the value, a
product retract on an empty accumulator, a first_value slice that held only ignored retractions
(its null looks like a first value), remove-on-delete when a -D is followed by more records of its
key inside the merged slice, and the order-dependent functions inside sequence groups whose
sequences arrive out of order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError, OptionError, UnsupportedFeatureError
from lake_assets.formats.data_file import DELETE, INSERT, SEQUENCE_NUMBER, UPDATE_BEFORE, VALUE_KIND
from lake_assets.lsm.key_compare import float_order_codes
from lake_assets.lsm.merge import MergeFunction, is_retract, key_change_mask, kinds_of

SchemaFields = Sequence[tuple[str, pa.DataType]]

SUPPORTED_FUNCTIONS = frozenset({
    "sum", "product", "min", "max", "last_value", "last_non_null_value", "first_value",
    "first_non_null_value", "listagg", "bool_and", "bool_or",
})
_ALIASES = {"first_not_null_value": "first_non_null_value"}
_RETRACTABLE = frozenset({"sum", "product", "last_value", "last_non_null_value"})
# Paimon has these; lake_assets does not implement them (yet).
_NOT_IMPLEMENTED = frozenset({
    "collect", "merge_map", "merge_map_with_keytime", "nested_update", "nested_partial_update",
    "hll_sketch", "theta_sketch", "rbm32", "rbm64",
})
_SEQUENCE_GROUP = re.compile(r"^fields\.(?P<seq>.+)\.sequence-group$")
_AGG_OPTION = re.compile(r"^fields\.(?P<col>[^.]+)\.aggregate-function$")


# ---------------------------------------------------------------- options


@dataclass(frozen=True)
class FieldFunction:
    """How one column folds: the aggregate function and its per-field options."""

    column: str
    function: str
    ignore_retract: bool = False
    delimiter: str = ","


@dataclass(frozen=True)
class SequenceGroup:
    """Columns that update together, ordered by their own sequence columns."""

    sequence_fields: tuple[str, ...]
    members: tuple[str, ...]


def _bool_option(options: Mapping[str, str], key: str) -> bool:
    raw = options.get(key)
    if raw is None:
        return False
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"Option {key!r} must be 'true' or 'false', not {raw!r}")
    return value == "true"


def _split(value: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in value.split(",") if s.strip())


def _is_numeric(dtype: pa.DataType) -> bool:
    return pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)


def _is_string(dtype: pa.DataType) -> bool:
    return pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype)


def _is_nested(dtype: pa.DataType) -> bool:
    return pa.types.is_nested(dtype) or pa.types.is_dictionary(dtype)


def resolve_function(column: str, dtype: pa.DataType, name: str) -> str:
    """The canonical function name, after checking it exists and suits the column type."""
    func = name.strip().lower()
    func = _ALIASES.get(func, func)
    if func == "count":
        raise UnsupportedFeatureError(
            f"Column {column!r}: Paimon has no 'count' aggregate function; to count rows, add a "
            "column that always holds 1 and aggregate it with 'sum'"
        )
    if func in _NOT_IMPLEMENTED:
        raise UnsupportedFeatureError(
            f"Column {column!r}: aggregate function {func!r} is not implemented by lake_assets"
        )
    if func not in SUPPORTED_FUNCTIONS:
        raise UnsupportedFeatureError(f"Column {column!r}: unknown aggregate function {name!r}")
    if func in ("sum", "product") and not _is_numeric(dtype):
        raise OptionError(f"Aggregate function {func!r} of column {column!r} needs a numeric type, not {dtype}")
    if func == "listagg" and not _is_string(dtype):
        raise OptionError(f"Aggregate function 'listagg' of column {column!r} needs a string type, not {dtype}")
    if func in ("bool_and", "bool_or") and not pa.types.is_boolean(dtype):
        raise OptionError(f"Aggregate function {func!r} of column {column!r} needs a boolean type, not {dtype}")
    if func in ("min", "max") and _is_nested(dtype):
        raise OptionError(f"Aggregate function {func!r} of column {column!r} cannot order type {dtype}")
    return func


def _field_function(options: Mapping[str, str], column: str, dtype: pa.DataType, name: str) -> FieldFunction:
    func = resolve_function(column, dtype, name)
    delimiter = options.get(f"fields.{column}.list-agg-delimiter")
    return FieldFunction(
        column=column,
        function=func,
        ignore_retract=_bool_option(options, f"fields.{column}.ignore-retract"),
        delimiter="," if delimiter is None else delimiter,
    )


def _check_agg_options(options: Mapping[str, str], names: set[str]) -> None:
    for key in options:
        m = _AGG_OPTION.match(key)
        if m and m.group("col") not in names:
            raise OptionError(f"Option {key!r} names column {m.group('col')!r}, which the table does not have")


def _sequence_fields_option(options: Mapping[str, str], names: set[str]) -> tuple[str, ...]:
    fields = _split(options.get("sequence.field") or "")
    for f in fields:
        if f not in names:
            raise OptionError(f"Option 'sequence.field' names column {f!r}, which the table does not have")
    return fields


def parse_sequence_groups(
    options: Mapping[str, str], names: Sequence[str], key_names: Sequence[str]
) -> list[SequenceGroup]:
    """The ``fields.<seq>.sequence-group`` options, validated against the schema."""
    known, keys = set(names), set(key_names)
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for key in sorted(options):
        m = _SEQUENCE_GROUP.match(key)
        if not m:
            continue
        seq = _split(m.group("seq"))
        members = _split(options[key])
        if not seq or not members:
            raise OptionError(f"Option {key!r} needs sequence fields and at least one column")
        for col in (*seq, *members):
            if col not in known:
                raise OptionError(f"Option {key!r} names column {col!r}, which the table does not have")
            if col in keys:
                raise OptionError(f"Option {key!r}: primary-key column {col!r} cannot be in a sequence group")
        members = tuple(m for m in members if m not in seq)
        for col in (*seq, *members):
            previous = owner.get(col)
            if previous is not None:
                raise OptionError(f"Column {col!r} is used by more than one sequence group ({previous!r}, {key!r})")
            owner[col] = key
        groups.append(SequenceGroup(seq, members))
    return groups


# ---------------------------------------------------------------- vectorized helpers


@dataclass(frozen=True)
class _Grouping:
    """Key groups of a key-sorted table: group id per row and each group's first/last row."""

    gid: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @property
    def count(self) -> int:
        return len(self.starts)


def _grouping(table: pa.Table, key_names: Sequence[str]) -> _Grouping:
    change = key_change_mask(table, key_names)
    starts = np.flatnonzero(change)
    ends = np.empty_like(starts)
    if len(starts):
        ends[:-1] = starts[1:] - 1
        ends[-1] = table.num_rows - 1
    return _Grouping(np.cumsum(change, dtype=np.int64) - 1, starts, ends)


def _np_bool(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)


def _valid(col: pa.Array) -> np.ndarray:
    if col.null_count == 0:
        return np.ones(len(col), dtype=bool)
    return _np_bool(col.is_valid())


def _take(col: pa.Array, idx: np.ndarray) -> pa.Array:
    """``col[idx]`` with -1 meaning null."""
    missing = idx < 0
    if missing.any():
        return col.take(pa.array(idx, type=pa.int64(), mask=missing))
    return col.take(pa.array(idx, type=pa.int64()))


def _last_true(mask: np.ndarray, ends: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """Per group, the last row index in [lower, end] where mask holds, else -1 (forward fill)."""
    if len(mask) == 0:
        return np.full(len(ends), -1, dtype=np.int64)
    filled = np.maximum.accumulate(np.where(mask, np.arange(len(mask), dtype=np.int64), -1))
    cand = filled[ends]
    return np.where(cand >= lower, cand, -1)


def _segment_bounds(gid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last entry position of each run of equal values in a non-decreasing gid array."""
    if len(gid) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    breaks = np.flatnonzero(gid[1:] != gid[:-1]) + 1
    first = np.concatenate(([0], breaks))
    last = np.concatenate((breaks - 1, [len(gid) - 1]))
    return first, last


def _scatter(values: pa.Array, seg_gid: np.ndarray, n_groups: int) -> pa.Array:
    """Place one value per present group into an array of all groups (absent groups null)."""
    idx = np.full(n_groups, -1, dtype=np.int64)
    idx[seg_gid] = np.arange(len(seg_gid), dtype=np.int64)
    return _take(values, idx)


def _hash_aggregate(values: pa.Array, gid: np.ndarray, n_groups: int, agg: str) -> pa.Array:
    # use_threads=False keeps first-appearance order, which hash_list relies on for row order.
    grouped = pa.table({"g": pa.array(gid, type=pa.int64()), "v": values}).group_by(
        "g", use_threads=False
    ).aggregate([("v", agg)])
    out = grouped.column(f"v_{agg}").combine_chunks()
    return _scatter(out, grouped.column("g").to_numpy(), n_groups)


def _seq_rank(cols: Sequence[pa.Array]) -> np.ndarray:
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
            nulls = ~_valid(s)
            ne = _np_bool(pc.not_equal(s.slice(1), s.slice(0, n - 1)).fill_null(False))
            step[1:] |= ne | (nulls[1:] != nulls[:-1])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.cumsum(step)
    return rank


def _fill_required(arr: pa.Array, field: pa.Field, fallback: Callable[[], pa.Array]) -> pa.Array:
    # A -D result has no values, but a NOT NULL column must still hold one: use the record's.
    if field.nullable or arr.null_count == 0:
        return arr
    return pc.if_else(arr.is_valid(), arr, fallback())


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
    return big | (band & (np.sign(wrapped) != np.sign(approx)))


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
        return _scatter(folded, seg_ids, n_groups)

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
    first, _ = _segment_bounds(gid)
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
        return _scatter(pa.array(out).cast(dtype), seg_gid, n_groups)
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
    return _scatter(out, seg_gid, n_groups)


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
    summed = _hash_aggregate(vals, gid, n_groups, "sum")
    try:
        return pc.cast(summed, dtype)
    except pa.ArrowInvalid as e:
        raise InvalidDataError(f"Aggregate function 'sum' overflowed column {col!r} ({dtype}): {e}") from e


def _check_retractable(fn: FieldFunction, retract: np.ndarray) -> None:
    if retract.any() and fn.function not in _RETRACTABLE and not fn.ignore_retract:
        raise InvalidDataError(
            f"Aggregate function {fn.function!r} of column {fn.column!r} cannot retract a -U/-D record; "
            f"set 'fields.{fn.column}.ignore-retract' = 'true' to ignore retractions"
        )


def _fold(
    fn: FieldFunction,
    col: pa.Array,
    rows: np.ndarray,
    retract: np.ndarray,
    gid: np.ndarray,
    n_groups: int,
    as_insert: np.ndarray | None = None,
) -> pa.Array:
    """Fold ``col[rows]`` per group in entry order; one result per group (null when no entries).

    ``rows`` are row positions grouped by the non-decreasing ``gid``; ``retract`` flags retract
    entries; ``as_insert`` marks retracts to fold like inserts (the retract image of a -D result).
    """
    func = fn.function
    if retract.any():
        _check_retractable(fn, retract)
        if fn.ignore_retract or func not in _RETRACTABLE:
            keep = ~retract
            rows, gid, retract = rows[keep], gid[keep], retract[keep]
        elif as_insert is not None:
            retract = retract & ~as_insert
    valid = _valid(col)[rows]
    if func in ("last_value", "first_value"):
        sel_rows, sel_gid, sel_retract = rows, gid, retract
    else:
        sel_rows, sel_gid, sel_retract = rows[valid], gid[valid], retract[valid]
    if func in ("last_value", "last_non_null_value", "first_value", "first_non_null_value"):
        first, last = _segment_bounds(sel_gid)
        pick = last if func.startswith("last") else first
        idx = np.full(n_groups, -1, dtype=np.int64)
        idx[sel_gid[pick]] = np.where(sel_retract[pick], -1, sel_rows[pick])
        return _take(col, idx)
    values = col.take(pa.array(sel_rows, type=pa.int64()))
    if func == "sum":
        return _sum(fn.column, values, sel_retract, sel_gid, n_groups)
    if func == "product":
        if len(sel_rows) == 0:
            return pa.nulls(n_groups, type=col.type)
        return _product(fn.column, values, sel_retract, sel_gid, n_groups)
    if func == "listagg":
        lists = _hash_aggregate(values, sel_gid, n_groups, "list")
        return pc.binary_join(lists, fn.delimiter).cast(col.type)
    agg = {"min": "min", "max": "max", "bool_and": "all", "bool_or": "any"}[func]
    return _hash_aggregate(values, sel_gid, n_groups, agg).cast(col.type)


def _group_seq_max(seq: np.ndarray, starts: np.ndarray) -> pa.Array:
    if len(starts) == 0:
        return pa.array([], type=pa.int64())
    return pa.array(np.maximum.reduceat(seq, starts), type=pa.int64())


def _columns(table: pa.Table) -> dict[str, pa.Array]:
    return {name: table.column(name).combine_chunks() for name in table.column_names}


def _all_single(grouping: _Grouping, n_rows: int) -> bool:
    return grouping.count == n_rows


def _keep_singles(table: pa.Table, grouping: _Grouping, merged: pa.Table) -> pa.Table:
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


# ---------------------------------------------------------------- partial-update


def _one_row_per_group(
    table: pa.Table,
    keys: set[str],
    starts: np.ndarray,
    ends: np.ndarray,
    deleted: np.ndarray,
    merged: Callable[[str, pa.Array], pa.Array | None],
) -> pa.Table:
    """One row per key group: its key, its highest sequence number, -D where ``deleted`` else +I,
    and per value column what ``merged`` computes (None: the group's last value)."""
    cols = _columns(table)
    out = []
    for field in table.schema:
        name, col = field.name, cols[field.name]
        if name in keys:
            arr = col.take(pa.array(starts))
        elif name == SEQUENCE_NUMBER:
            arr = _group_seq_max(col.to_numpy(), starts)
        elif name == VALUE_KIND:
            arr = pa.array(np.where(deleted, DELETE, INSERT).astype(np.int8), type=pa.int8())
        else:
            folded = merged(name, col)
            arr = col.take(pa.array(ends)) if folded is None else folded
        out.append(_fill_required(arr, field, lambda c=col: c.take(pa.array(ends))))
    return pa.Table.from_arrays(out, schema=table.schema)


class PartialUpdate:
    """The partial-update merge engine (see the module docstring for the exact semantics)."""

    def __init__(self, schema_fields: SchemaFields, key_names: Sequence[str], options: Mapping[str, str]) -> None:
        self.types = {name: dtype for name, dtype in schema_fields}
        self.key_names = tuple(key_names)
        names = [name for name, _ in schema_fields]
        for k in self.key_names:
            if k not in self.types:
                raise OptionError(f"Primary-key column {k!r} is not a table column")
        _check_agg_options(options, set(names))
        self.ignore_delete = _bool_option(options, "ignore-delete") or _bool_option(
            options, "partial-update.ignore-delete"
        )
        self.remove_on_delete = _bool_option(options, "partial-update.remove-record-on-delete")
        if options.get("partial-update.remove-record-on-sequence-group"):
            raise UnsupportedFeatureError(
                "Option 'partial-update.remove-record-on-sequence-group' is not implemented by lake_assets"
            )
        self.groups = parse_sequence_groups(options, names, self.key_names)
        if self.ignore_delete and self.remove_on_delete:
            raise OptionError(
                "Options 'ignore-delete' and 'partial-update.remove-record-on-delete' conflict; set only one"
            )
        if self.remove_on_delete and self.groups:
            raise OptionError(
                "Sequence groups and 'partial-update.remove-record-on-delete' conflict; set only one"
            )
        seq_fields = {f for g in self.groups for f in g.sequence_fields}
        seq_fields |= set(_sequence_fields_option(options, set(names)))
        grouped = {m for g in self.groups for m in g.members}
        default = options.get("fields.default-aggregate-function")
        self.functions: dict[str, FieldFunction] = {}
        for name, dtype in schema_fields:
            if name in self.key_names or name in seq_fields:
                continue  # Paimon aggregates neither keys nor sequence fields
            raw = options.get(f"fields.{name}.aggregate-function") or default
            if raw is None:
                if name in grouped:
                    self.functions[name] = FieldFunction(name, "last_value")
                continue
            fn = _field_function(options, name, dtype, raw)
            if name not in grouped:
                if fn.function != "last_non_null_value":
                    raise OptionError(
                        f"Aggregate function {fn.function!r} of column {name!r} needs a sequence group: "
                        "partial-update allows aggregation only on columns of a "
                        "'fields.<seq>.sequence-group' (except last_non_null_value)"
                    )
                continue  # last_non_null_value is what partial-update does anyway
            self.functions[name] = fn

    def merge(self, table: pa.Table, key_names: Sequence[str]) -> pa.Table:
        if table.num_rows == 0:
            return table
        kinds = kinds_of(table)
        retract = is_retract(kinds)
        if retract.any():
            if self.ignore_delete:
                table = table.filter(pa.array(~retract))
            elif self.remove_on_delete:
                # A -U has no effect under remove-record-on-delete; only -D resets the row.
                table = table.filter(pa.array(kinds != UPDATE_BEFORE))
            elif not self.groups:
                raise InvalidDataError(
                    "The partial-update merge engine got a -U/-D record, which it cannot apply by "
                    "default: set 'ignore-delete' = 'true' (or 'partial-update.ignore-delete') to drop "
                    "them, 'partial-update.remove-record-on-delete' = 'true' to delete the whole row on "
                    "-D, or configure 'fields.<seq>.sequence-group' to retract groups of columns"
                )
            if table.num_rows == 0:
                return table
            kinds = kinds_of(table)
            retract = is_retract(kinds)
        grouping = _grouping(table, key_names)
        if not self.groups and _all_single(grouping, table.num_rows):
            return table  # every key has one record: emitted as it is (see _keep_singles)
        if self.groups:
            # merged even when every key has one record: a retraction a grouped function cannot
            # take fails now rather than when it meets an older record
            merged = self._merge_groups(table, key_names, grouping, retract)
        else:
            merged = self._merge_plain(table, key_names, grouping, kinds)
        return _keep_singles(table, grouping, merged)

    def _merge_plain(
        self, table: pa.Table, key_names: Sequence[str], grouping: _Grouping, kinds: np.ndarray
    ) -> pa.Table:
        starts, ends = grouping.starts, grouping.ends
        last_delete = _last_true(kinds == DELETE, ends, starts)
        # Rows after a group's last -D are all inserts; they build the row from scratch.
        lower = np.maximum(starts, last_delete + 1)
        deleted = lower > ends

        def merged(name: str, col: pa.Array) -> pa.Array | None:
            # the last non-null value after the last reset
            return _take(col, _last_true(_valid(col), ends, lower)) if name in self.types else None

        return _one_row_per_group(table, set(key_names) | set(self.key_names), starts, ends, deleted, merged)

    def _merge_groups(
        self, table: pa.Table, key_names: Sequence[str], grouping: _Grouping, retract: np.ndarray
    ) -> pa.Table:
        starts, ends, gid, n_groups = grouping.starts, grouping.ends, grouping.gid, grouping.count
        cols = _columns(table)
        insert = ~retract
        has_insert = _last_true(insert, ends, starts) >= 0
        results: dict[str, pa.Array] = {}
        for group in self.groups:
            missing = [f for f in group.sequence_fields if f not in cols]
            present = [m for m in group.members if m in cols]
            if missing:
                if present:
                    raise InvalidDataError(
                        f"Columns {present} need their sequence fields {list(group.sequence_fields)} to merge"
                    )
                continue
            seq_cols = [cols[f] for f in group.sequence_fields]
            empty = np.ones(table.num_rows, dtype=bool)
            for c in seq_cols:
                empty &= ~_valid(c)
            entries = np.flatnonzero(~empty)
            # Group-sequence order, ties in arrival order (lexsort is stable).
            rank = _seq_rank(seq_cols)
            order = np.lexsort((rank[entries], gid[entries]))
            rows = entries[order]
            rows_gid, rows_retract = gid[rows], retract[rows]
            # Keys that saw only retracts give a -D whose row is the retract image.
            as_insert = ~has_insert[rows_gid]
            _, last = _segment_bounds(rows_gid)
            seq_idx = np.full(n_groups, -1, dtype=np.int64)
            seq_idx[rows_gid[last]] = rows[last]
            for f in group.sequence_fields:
                results[f] = _take(cols[f], seq_idx)
            for m in present:
                fn = self.functions.get(m) or FieldFunction(m, "last_value")
                results[m] = _fold(fn, cols[m], rows, rows_retract, rows_gid, n_groups, as_insert)

        def merged(name: str, col: pa.Array) -> pa.Array | None:
            if name in results:
                return results[name]
            if name in self.types:
                # Ungrouped columns: last non-null value of an insert; retracts never touch them.
                return _take(col, _last_true(_valid(col) & insert, ends, starts))
            return None

        keys = (set(key_names) | set(self.key_names)) - set(results)
        return _one_row_per_group(table, keys, starts, ends, ~has_insert, merged)


# ---------------------------------------------------------------- aggregation


class Aggregation:
    """The aggregation merge engine (see the module docstring for the exact semantics)."""

    def __init__(self, schema_fields: SchemaFields, key_names: Sequence[str], options: Mapping[str, str]) -> None:
        self.types = {name: dtype for name, dtype in schema_fields}
        self.key_names = tuple(key_names)
        names = set(self.types)
        for k in self.key_names:
            if k not in names:
                raise OptionError(f"Primary-key column {k!r} is not a table column")
        _check_agg_options(options, names)
        self.ignore_delete = _bool_option(options, "ignore-delete")
        self.remove_on_delete = _bool_option(options, "aggregation.remove-record-on-delete")
        sequence_fields = set(_sequence_fields_option(options, names))
        default = options.get("fields.default-aggregate-function") or "last_non_null_value"
        self.functions: dict[str, FieldFunction] = {}
        for name, dtype in schema_fields:
            if name in self.key_names:
                continue
            if name in sequence_fields:
                self.functions[name] = FieldFunction(
                    name, "last_value", _bool_option(options, f"fields.{name}.ignore-retract")
                )
                continue
            raw = options.get(f"fields.{name}.aggregate-function") or default
            self.functions[name] = _field_function(options, name, dtype, raw)

    def merge(self, table: pa.Table, key_names: Sequence[str]) -> pa.Table:
        if table.num_rows == 0:
            return table
        kinds = kinds_of(table)
        retract = is_retract(kinds)
        if self.ignore_delete and retract.any():
            table = table.filter(pa.array(~retract))
            if table.num_rows == 0:
                return table
            kinds = kinds_of(table)
            retract = is_retract(kinds)
        grouping = _grouping(table, key_names)
        if _all_single(grouping, table.num_rows):
            # every key has one record: emitted as it is (see _keep_singles); a retraction a
            # function cannot take still fails now rather than when it meets an older record
            if retract.any():
                for fn in self.functions.values():
                    _check_retractable(fn, retract & (kinds != DELETE) if self.remove_on_delete else retract)
            return table
        starts, ends, gid, n_groups = grouping.starts, grouping.ends, grouping.gid, grouping.count
        if self.remove_on_delete:
            # Records before a reset are dropped unfolded, yet a -U among them is still an error
            # for a function that cannot retract (Paimon applies records one by one).
            retract_events = retract & (kinds != DELETE)
            if retract_events.any():
                for fn in self.functions.values():
                    _check_retractable(fn, retract_events)
            # A -D resets the key: only the records after the group's last -D are folded.
            lower = np.maximum(starts, _last_true(kinds == DELETE, ends, starts) + 1)
            deleted = lower > ends
            rows = np.flatnonzero(np.arange(table.num_rows) >= lower[gid])
        else:
            deleted = np.zeros(n_groups, dtype=bool)
            rows = np.arange(table.num_rows, dtype=np.int64)
        rows_gid, rows_retract = gid[rows], retract[rows]

        def merged(name: str, col: pa.Array) -> pa.Array | None:
            fn = self.functions.get(name)
            return None if fn is None else _fold(fn, col, rows, rows_retract, rows_gid, n_groups)

        merged_rows = _one_row_per_group(table, set(key_names) | set(self.key_names), starts, ends, deleted, merged)
        return _keep_singles(table, grouping, merged_rows)


# ---------------------------------------------------------------- registry

_ENGINES: dict[str, Callable[[SchemaFields, Sequence[str], Mapping[str, str]], MergeFunction]] = {
    "partial-update": PartialUpdate,
    "aggregation": Aggregation,
}


def make_merge_function(
    engine: str, schema_fields: SchemaFields, key_names: Sequence[str], options: Mapping[str, str]
) -> MergeFunction:
    """The merge function of ``merge-engine = engine`` (partial-update or aggregation)."""
    factory = _ENGINES.get(engine.strip().lower())
    if factory is None:
        raise UnsupportedFeatureError(
            f"merge-engine {engine!r} is not provided here (supported: {', '.join(sorted(_ENGINES))})"
        )
    return factory(schema_fields, key_names, options)


def validate_engine_options(
    schema_fields: SchemaFields, key_names: Sequence[str], options: Mapping[str, str]
) -> None:
    """Raise the option errors of the table's merge engine before anything is written."""
    engine = (options.get("merge-engine") or "deduplicate").strip().lower()
    factory = _ENGINES.get(engine)
    if factory is not None:
        factory(schema_fields, key_names, options)
