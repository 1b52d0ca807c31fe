"""``sum`` and ``product`` of the aggregation engine, in the column's own type as Paimon's Java does.

Java's ``FieldSumAgg`` / ``FieldProductAgg`` fold a key's records one by one from the first
(``agg(null, v) = v``; a retraction on nothing is ``-v`` for sum, ``v`` for product), each step in
the column's type (0.9 to HEAD alike):

- FLOAT / DOUBLE: ``float + float`` (``double + double``): a FLOAT sum is rounded to float32 at
  every step, which a float64 sum rounded once at the end differs from in the last bit.
- TINYINT .. BIGINT: Paimon 2.0+ (#7992, #7906: "silent data corruption") fails with an
  ArithmeticException when a step leaves the type (``addExact``, ``multiplyExact``, ``negateExact``,
  ``MIN / -1``), as lake_assets does (`InvalidDataError`), also for an excursion a later record
  would bring back; Java 0.9 to 1.4 wrapped around. A retracted factor divides with Java's
  truncation toward zero at its step, and a zero divisor fails.
- DECIMAL(p, s) sum: exact while the running sum fits; past the precision Java's ``DecimalUtils``
  gives null for p > 18 (``Decimal.fromBigDecimal``), and the next record starts again from its own
  value. For p <= 18 it adds the unscaled longs unchecked, keeping a value of more than p digits
  that the column cannot hold (a long overflow goes the null way): lake_assets refuses to write
  that (`InvalidDataError`). DECIMAL product: each step is rounded half-up to the scale, null past
  the precision; a retraction divides exactly (Java's ``BigDecimal.divide``, which fails on a
  non-terminating quotient) and is rounded the same way.

Groups are folded in place, a numpy (Arrow for decimals) pass per position of the longest group
(``segment_reduce``'s runs); integer sums as running sums (``cumsum``).
Decimal sums that may leave their precision (an exact sum of absolute values tells) take a pass
per position in Arrow's decimal256 as the products do. Decimal products are `decimal_product`'s:
Arrow's decimal256 passes, or, with a retraction after their first record or of precision 38,
passes in unscaled Python integers over whole groups at once.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.decimal_product import decimal_product, fitted, fold_runs, zero_divisor
from lake_assets.lsm.merge_engine.grouping import hash_aggregate, scatter
from lake_assets.lsm.merge_engine.segment_reduce import runs_of

_COMPACT_PRECISION = 18  # Paimon's Decimal.MAX_COMPACT_PRECISION: an unscaled long
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

Step = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


_FEW_RUNS = 32
"""Below this many runs still going, `_float_sum` finishes each with one accumulate call."""


def _in_order(v: np.ndarray, retract: np.ndarray, first: np.ndarray, sizes: np.ndarray, step: Step,
              start: np.ndarray, *, stop_below: int = 0) -> tuple[np.ndarray, int]:
    """Fold each run of ``v`` from ``start`` (its first entry's value) with ``step(acc, value,
    retract)``, entry after entry: one numpy pass per position, over the runs that long. Stops
    early when fewer than ``stop_below`` runs go on: (accumulators, entries folded per run)."""
    acc = start.copy()
    live = np.flatnonzero(sizes > 1)
    k = 1
    while live.size and live.size >= stop_below:
        pos = first[live] + k
        acc[live] = step(acc[live], v[pos], retract[pos])
        k += 1
        live = live[sizes[live] > k]
    return acc, k


def _float_sum(v: np.ndarray, first: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each run's sum from its first value, added in order in ``v``'s own float type."""
    acc, k = _in_order(v, np.zeros(len(v), dtype=bool), first, sizes, lambda a, x, _r: a + x, v[first],
                       stop_below=_FEW_RUNS)
    # the few longest runs' rest: numpy's accumulate adds strictly in order (its reduce does not)
    for g in np.flatnonzero(sizes > k):
        tail = v[first[g] + k:first[g] + sizes[g]]
        acc[g] = np.add.accumulate(np.concatenate((acc[g:g + 1], tail)))[-1]
    return acc


def sum_fold(col: str, values: pa.Array, retract: np.ndarray, gid: np.ndarray, n_groups: int) -> pa.Array:
    """Java's ``sum`` of each group of ``values`` (no nulls; ``gid`` non-decreasing) in the column's
    type, retract entries subtracted; null for groups without entries."""
    dtype = values.type
    if len(values) == 0:
        return pa.nulls(n_groups, type=dtype)
    first, sizes = runs_of(gid)
    if pa.types.is_decimal(dtype):
        return scatter(_decimal_sum(col, values, retract, gid, first), gid[first], n_groups)
    if pa.types.is_floating(dtype):
        v = values.to_numpy(zero_copy_only=False)
        out = _float_sum(np.where(retract, -v, v), first, sizes)
    else:
        out = _int_sum(col, dtype, values.to_numpy(zero_copy_only=False).astype(np.int64), retract, first, sizes)
    return scatter(pa.array(out, type=dtype), gid[first], n_groups)


def _overflow(col: str, func: str, dtype: pa.DataType) -> InvalidDataError:
    return InvalidDataError(
        f"Aggregate function {func!r} overflowed column {col!r} ({dtype}) at one of its steps (Paimon 2.0+ "
        "fails on it with an ArithmeticException; Java before 2.0 wrapped around silently)")


def _int_sum(col: str, dtype: pa.DataType, v: np.ndarray, retract: np.ndarray, first: np.ndarray,
             sizes: np.ndarray) -> np.ndarray:
    """Each run's sum, failing where a running sum (Java's addExact / subtractExact /
    negateExact at each step, Paimon 2.0+) leaves the column's type."""
    info = np.iinfo(dtype.to_pandas_dtype())
    run = np.repeat(np.arange(len(first)), sizes)
    if dtype.bit_width < 64:  # running sums exact in int64
        signed = np.where(retract, -v, v)
        running = np.cumsum(signed)
        running -= (running[first] - signed[first])[run]
        if (running < info.min).any() or (running > info.max).any():
            raise _overflow(col, "sum", dtype)
        total: np.ndarray = running[first + sizes - 1].astype(dtype.to_pandas_dtype())
        return total
    with np.errstate(over="ignore"):
        signed = np.where(retract, -v, v)
        out = np.add.reduceat(signed, first)
    # no running sum of a run can leave int64 when its absolute values add up to less than 2**62
    magnitude = np.add.reduceat(np.abs(v.astype(np.float64)), first)
    odd = np.bincount(run, weights=retract & (v == info.min), minlength=len(first)) > 0
    for r in np.flatnonzero((magnitude >= 2.0**62) | odd):
        exact = 0
        for i in range(first[r], first[r] + sizes[r]):
            exact = exact - int(v[i]) if retract[i] else exact + int(v[i])
            if not info.min <= exact <= info.max:
                raise _overflow(col, "sum", dtype)
        out[r] = exact
    return out


def _decimal_sum(col: str, values: pa.Array, retract: np.ndarray, gid: np.ndarray, first: np.ndarray) -> pa.Array:
    dtype = values.type
    wide = pa.decimal128(38, dtype.scale) if dtype.precision <= 38 else pa.decimal256(76, dtype.scale)
    vals = values.cast(wide)
    signed = pc.if_else(pa.array(retract), pc.negate(vals), vals) if retract.any() else vals
    n_runs = len(first)
    seg = np.repeat(np.arange(n_runs), np.diff(np.append(first, len(gid))))
    exact = hash_aggregate(signed, seg, n_runs, "sum")
    # no running sum of a run leaves the precision when its absolute values' sum does not
    bound = pa.scalar(Decimal(10) ** (dtype.precision - dtype.scale), type=pa.decimal256(76, dtype.scale))
    magnitude = hash_aggregate(pc.abs(vals).cast(pa.decimal256(76, dtype.scale)), seg, n_runs, "sum")
    risky = np.flatnonzero(pc.greater_equal(magnitude, bound).to_numpy(zero_copy_only=False))
    if risky.size:
        sizes = np.diff(np.append(first, len(gid)))
        # the risky runs' entries, run after run
        rows = np.repeat(first[risky] - np.cumsum(sizes[risky]) + sizes[risky], sizes[risky])
        rows += np.arange(rows.size, dtype=np.int64)
        risky_first = np.cumsum(sizes[risky]) - sizes[risky]
        java = _decimal_sum_passes(col, dtype, signed.take(pa.array(rows, type=pa.int64())), risky_first,
                                   sizes[risky])
        patch = np.full(n_runs, -1, dtype=np.int64)
        patch[risky] = np.arange(risky.size)
        exact = pc.if_else(pa.array(patch >= 0), java.cast(wide).take(pa.array(np.maximum(patch, 0))), exact)
    return fitted(col, "sum", exact, dtype)


def _decimal_sum_passes(col: str, dtype: pa.DataType, signed: pa.Array, first: np.ndarray,
                        sizes: np.ndarray) -> pa.Array:
    """Each run's sum record by record as Java's FieldSumAgg and DecimalUtils.add/subtract, a pass
    per position in Arrow's decimal256 (``signed``: retractions negated): a step's exact sum is
    kept while it fits - for p <= 18 the unscaled long (Math.addExact, no precision check), else
    the precision (Decimal.fromBigDecimal) - and is null otherwise; a null restarts from the next
    value. A p <= 18 sum left with more digits than p is refused."""
    scale, precision = dtype.scale, dtype.precision
    work = pa.decimal256(max(precision, 19) + 2, scale)  # any kept sum plus one value, exactly
    vals = signed.cast(work)
    if precision <= _COMPACT_PRECISION:
        low = pa.scalar(Decimal(_LONG_MIN).scaleb(-scale), type=work)
        high = pa.scalar(Decimal(_LONG_MAX).scaleb(-scale), type=work)
    else:
        high = pa.scalar(Decimal(10) ** (precision - scale) - Decimal(1).scaleb(-scale), type=work)
        low = pa.scalar(-high.as_py(), type=work)

    def plus(a: pa.Array, x: pa.Array) -> tuple[pa.Array, pa.Array]:
        total = pc.add(a, x)
        return total, pc.and_(pc.greater_equal(total, low), pc.less_equal(total, high))

    acc = fold_runs(vals, first, sizes, plus)
    limit = pa.scalar(Decimal(10) ** (precision - scale), type=pa.decimal256(76, scale))
    wide = pc.fill_null(pc.greater_equal(pc.abs(acc).cast(pa.decimal256(76, scale)), limit), False)
    if pc.any(wide).as_py():
        value = acc.filter(wide)[0].as_py()
        raise InvalidDataError(
            f"Aggregate function 'sum' of column {col!r} gives {value}, more digits "
            f"than {dtype} holds (Paimon's Java keeps such a DECIMAL(p <= 18) sum unchecked, a value its "
            "readers misread; lake_assets does not write it)")
    return acc


def _int_step(col: str, dtype: pa.DataType) -> Step:
    """Java 2.0+'s multiplyExact / divideExact (truncating) at each step: an overflow fails."""
    info = np.iinfo(dtype.to_pandas_dtype())

    def step(acc: np.ndarray, x: np.ndarray, minus: np.ndarray) -> np.ndarray:
        if (minus & (x == 0)).any():
            raise zero_divisor(col)
        if (minus & (x == -1) & (acc == info.min)).any():
            raise _overflow(col, "product", dtype)
        a, b = acc.astype(np.int64), x.astype(np.int64)
        with np.errstate(over="ignore"):
            times = a * b
            if dtype.bit_width < 64:
                bad = (times < info.min) | (times > info.max)
            else:  # the float product tells, but near 2**63 where the wrapped sign does
                approx = a.astype(np.float64) * b
                big = np.abs(approx) >= 2.0**63 * (1 + 1e-9)
                band = (np.abs(approx) >= 2.0**63 * (1 - 1e-9)) & ~big
                bad = big | (band & (np.sign(times) != np.sign(approx)))
            d = np.where(minus & (b != 0), b, 1)
            q = np.where(d == -1, -a, a // d)
            q = q + (((a % d) != 0) & ((a < 0) != (d < 0))).astype(np.int64)  # toward zero
        if (bad & ~minus).any():
            raise _overflow(col, "product", dtype)
        return np.where(minus, q, times).astype(acc.dtype)
    return step


def _float_step(acc: np.ndarray, x: np.ndarray, minus: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out: np.ndarray = np.where(minus, acc / x, acc * x)
    return out


def product_fold(col: str, values: pa.Array, retract: np.ndarray, gid: np.ndarray, n_groups: int) -> pa.Array:
    """Java's ``product`` of each group of ``values`` (no nulls; ``gid`` non-decreasing) in the
    column's type: the first value starts it whatever its kind, later inserts multiply, later
    retractions divide, step by step; null for groups without entries."""
    dtype = values.type
    if len(values) == 0:
        return pa.nulls(n_groups, type=dtype)
    first, sizes = runs_of(gid)
    if pa.types.is_decimal(dtype):
        return scatter(decimal_product(col, values, retract, first, sizes), gid[first], n_groups)
    v = values.to_numpy(zero_copy_only=False)
    later = retract.copy()
    later[first] = False  # a leading retraction starts the product
    step = _float_step if pa.types.is_floating(dtype) else _int_step(col, dtype)
    out, _ = _in_order(v, later, first, sizes, step, v[first])
    return scatter(pa.array(out, type=dtype), gid[first], n_groups)


__all__ = ["product_fold", "sum_fold", "zero_divisor"]
