"""DECIMAL ``product`` of the aggregation engine, as Paimon's Java ``FieldProductAgg`` folds it.

Java folds a key's records one by one from the first (``agg(null, v) = v``, a retraction on
nothing is ``v``): an insert multiplies, a retraction divides exactly (``BigDecimal.divide``,
which fails on a non-terminating quotient), each step rounded half-up (ties away from zero) to
the scale and null past the precision (``Decimal.fromBigDecimal``); after a null the next record
starts again from its own value. A retracted zero fails (division by zero).

Two vectorized forms, a pass per position of the longest group (``segment_reduce``'s runs):

- Arrow's decimal256 for products of precision <= 37 without a retraction after the first
  record: the exact product of two such values fits decimal256 (Arrow's type rule, p1 + p2 + 1
  <= 76 digits), rounded by ``pc.round`` half-up.
- Python ints in numpy object arrays for the others (precision 38, retractions): each value its
  unscaled integer, a step ``round_half_up(acc * x / 10**s)`` or ``round_half_up(acc * 10**s / x)``
  in exact integer arithmetic (Arrow's decimal divide truncates at a fixed scale, so it can neither
  find the non-terminating quotients Java fails on nor round an exact quotient half-up). A
  quotient terminates when ``acc * 10**127`` is a multiple of ``x``: an unscaled DECIMAL(38)
  divisor has at most 126 factors 2 and 54 factors 5. Once fewer than `FEW_RUNS` groups go
  on, the longest ones finish with the same integer step one record at a time.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError

FEW_RUNS = 32
"""Below this many groups still going, the integer fold finishes each alone (no pass per record)."""
_TERMINATES = 10**127  # acc * this is a multiple of x when acc / x has a finite decimal form
_MASK64 = (1 << 64) - 1
_WIDE = decimal.Context(prec=100)


def zero_divisor(col: str) -> InvalidDataError:
    """The error of a retracted zero factor (Java's ArithmeticException)."""
    return InvalidDataError(f"Aggregate function 'product' of column {col!r} retracted a zero (division by zero)")


def fitted(col: str, func: str, arr: pa.Array, dtype: pa.DataType) -> pa.Array:
    """``arr`` cast to the column's type; a value it cannot hold is `InvalidDataError`."""
    try:
        return pc.cast(arr, dtype)
    except pa.ArrowInvalid as e:
        raise InvalidDataError(f"Aggregate function {func!r} of column {col!r} does not fit {dtype}: {e}") from e


def decimal_product(col: str, values: pa.Array, retract: np.ndarray, first: np.ndarray,
                    sizes: np.ndarray) -> pa.Array:
    """Each run's product (runs ``first``/``sizes`` of ``values``, no nulls) as Java folds it;
    null where the last step left the precision."""
    dtype = values.type
    later = retract.copy()
    later[first] = False  # a leading retraction starts the product
    if dtype.precision <= 37 and not later.any():  # an exact product of two fits decimal256
        return fitted(col, "product", _arrow_passes(values, first, sizes), dtype)
    return _integer_fold(col, values, later, first, sizes)


def _arrow_passes(values: pa.Array, first: np.ndarray, sizes: np.ndarray) -> pa.Array:
    """Products of runs without later retractions: a pass per position, each step rounded
    half-up to the scale and null past the precision, a null restarting from the next value."""
    dtype = values.type
    work = pa.decimal256(dtype.precision, dtype.scale)
    # typed as an exact product (scale 2s), so comparing needs no wider type than it
    bound = pa.scalar(Decimal(10) ** (dtype.precision - dtype.scale),
                      type=pa.decimal256(dtype.precision + dtype.scale + 1, 2 * dtype.scale))

    def times(a: pa.Array, x: pa.Array) -> tuple[pa.Array, pa.Array]:
        rounded = pc.round(pc.multiply(a, x), dtype.scale, round_mode="half_up")
        return rounded, pc.less(pc.abs(rounded), bound)

    return fold_runs(values.cast(work), first, sizes, times)


def fold_runs(vals: pa.Array, first: np.ndarray, sizes: np.ndarray,
              step: Callable[[pa.Array, pa.Array], tuple[pa.Array, pa.Array]]) -> pa.Array:
    """Each run's fold (runs ``first``/``sizes`` of ``vals``, in ``vals``' decimal type) record by
    record as Java's aggregators step, a pass per position over the runs still going: ``step``
    gives the exact result of accumulator and value and whether it fits; a step that does not fit
    is null, and a null accumulator restarts from the next value."""
    work = vals.type
    zero = pa.scalar(Decimal(0), type=work)
    acc = vals.take(pa.array(first))
    live = np.flatnonzero(sizes > 1)
    k = 1
    while live.size:
        a, x = acc.take(pa.array(live)), vals.take(pa.array(first[live] + k))
        exact, fits = step(a, x)
        kept = pc.if_else(fits, pc.if_else(fits, exact, zero).cast(work), pa.scalar(None, type=work))
        mask = np.zeros(len(acc), dtype=bool)
        mask[live] = True
        acc = pc.replace_with_mask(acc, pa.array(mask), pc.if_else(a.is_null(), x, kept))
        k += 1
        live = live[sizes[live] > k]
    return acc


def _unscaled(values: pa.Array) -> np.ndarray:
    """The unscaled integers of a DECIMAL(p <= 38) array without nulls (an object array)."""
    arr = values.cast(pa.decimal128(38, values.type.scale))
    words = np.frombuffer(arr.buffers()[1], dtype=np.uint64)[2 * arr.offset:2 * (arr.offset + len(arr))]
    low, high = words[0::2].view(np.int64), words[1::2].view(np.int64)
    if (high == (low >> 63)).all():  # every value fits a long (up to 18 digits): no 128-bit sums
        small: np.ndarray = low.astype(object)
        return small
    out: np.ndarray = high.astype(object) * (1 << 64) + words[0::2].astype(object)
    return out


def _from_unscaled(unscaled: np.ndarray, valid: np.ndarray, dtype: pa.DataType) -> pa.Array:
    """A DECIMAL(p <= 38) array of unscaled integers (each of at most p digits where ``valid``)."""
    u = np.where(valid, unscaled, 0)
    words = np.empty(2 * len(u), dtype=np.uint64)
    words[0::2] = (u & _MASK64).astype(np.uint64)
    words[1::2] = (u >> 64).astype(np.int64).view(np.uint64)
    arr = pa.Array.from_buffers(pa.decimal128(dtype.precision, dtype.scale), len(u), [None, pa.py_buffer(words)])
    return pc.if_else(pa.array(valid), arr, pa.scalar(None, type=arr.type))


def _half_up(n: Any, d: Any) -> Any:
    """``n / d`` rounded half-up (ties away from zero), for Python ints or object arrays of them."""
    q = (2 * abs(n) + abs(d)) // (2 * abs(d))
    return q * (1 - 2 * ((n < 0) != (d < 0)))


def _decimal(unscaled: Any, scale: int) -> Decimal:
    """The decimal value of an unscaled integer (all its digits: the default context keeps 28)."""
    return Decimal(int(unscaled)).scaleb(-scale, context=_WIDE)


def _check_quotients(col: str, acc: Any, x: Any, scale: int) -> None:
    """Java's BigDecimal.divide: a zero divisor, or a quotient without a finite decimal form, fails."""
    if np.any(x == 0):
        raise zero_divisor(col)
    bad = np.flatnonzero(np.atleast_1d((acc * _TERMINATES) % x != 0))
    if bad.size:
        i = int(bad[0])
        a, v = (np.atleast_1d(acc)[i], np.atleast_1d(x)[i])
        raise InvalidDataError(
            f"Aggregate function 'product' of column {col!r} retracted {_decimal(v, scale)} from "
            f"{_decimal(a, scale)}: the quotient has no exact decimal form (Paimon's "
            "BigDecimal.divide fails on it too)")


def _integer_fold(col: str, values: pa.Array, later: np.ndarray, first: np.ndarray,
                  sizes: np.ndarray) -> pa.Array:
    """Each run's product in unscaled Python integers (see the module docstring)."""
    dtype = values.type
    scale_factor, limit = 10**dtype.scale, 10**dtype.precision
    u = _unscaled(values)
    acc = u[first].copy()
    valid = np.ones(len(first), dtype=bool)
    live = np.flatnonzero(sizes > 1)
    k = 1
    while live.size >= FEW_RUNS:
        pos = first[live] + k
        a, x, minus = acc[live], u[pos], later[pos]
        nulls = ~valid[live]
        steps = np.empty(len(live), dtype=object)
        mul, div = ~minus & ~nulls, minus & ~nulls
        steps[mul] = _half_up(a[mul] * x[mul], scale_factor)
        if div.any():
            _check_quotients(col, a[div], x[div], dtype.scale)
            steps[div] = _half_up(a[div] * scale_factor, x[div])
        fits = nulls | (np.abs(np.where(nulls, 0, steps)) < limit).astype(bool)
        acc[live] = np.where(nulls, x, steps)  # after a null the record starts again
        valid[live] = fits
        k += 1
        live = live[sizes[live] > k]
    for r in live.tolist():  # the few longest runs: the same step, record after record
        a_r, ok = acc[r], bool(valid[r])
        rest = slice(first[r] + k, first[r] + sizes[r])
        for x_i, minus in zip(u[rest].tolist(), later[rest].tolist(), strict=True):
            if not ok:
                a_r, ok = x_i, True
                continue
            if minus:
                if x_i == 0 or (a_r * _TERMINATES) % x_i:
                    _check_quotients(col, a_r, x_i, dtype.scale)  # raises, saying which
                a_r = _half_up(a_r * scale_factor, x_i)
            else:
                a_r = _half_up(a_r * x_i, scale_factor)
            ok = abs(a_r) < limit
        acc[r], valid[r] = a_r, ok
    return _from_unscaled(acc, valid, dtype)
