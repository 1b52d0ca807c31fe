"""`decimal_product`'s vectorized folds equal Java's DECIMAL ``product`` spelled record by record
with Python's ``decimal`` (the form lake_assets used before; `FieldProductAgg`'s semantics,
pinned against Java 0.9 by tests/differential/test_decimal_product_java.py), on random groups:
retractions, ties, signs, zeros, values past the precision, runs long enough for the
record-by-record finish and many enough for the passes."""

from __future__ import annotations

import decimal
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.aggregate_arithmetic import product_fold
from lake_assets.lsm.merge_engine.decimal_product import FEW_RUNS

_EXACT = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP, traps=[decimal.InvalidOperation])


def _java(values: list[Decimal], retract: list[bool], precision: int, scale: int) -> Decimal | None:
    """One group's product as FieldProductAgg folds it (agg(null, v) = v; half-up; null past p)."""
    acc: Decimal | None = None
    for x, minus in zip(values, retract, strict=True):
        if acc is None:
            acc = x
            continue
        exact = _EXACT.divide(acc, x) if minus else _EXACT.multiply(acc, x)
        if minus:
            assert _EXACT.multiply(exact, x) == acc  # the cases below divide exactly
        rounded = exact.quantize(Decimal(1).scaleb(-scale), context=_EXACT)
        acc = rounded if _EXACT.abs(rounded) < _EXACT.power(10, precision - scale) else None
    return acc


@pytest.mark.parametrize(("precision", "scale"), [(38, 4), (38, 0), (20, 2), (10, 3)])
def test_vectorized_folds_equal_the_record_by_record_fold(precision: int, scale: int) -> None:
    rng = np.random.default_rng(precision * 10 + scale)
    factors = [Decimal(x) for x in ("0.5", "-0.5", "0.125", "2.5", "-1.25", "4", "0.8", "1.6", "0", "-3", "7", "0.001")]
    divisors = [Decimal(x) for x in ("0.5", "2.5", "-1.25", "4", "0.8", "1.6", "2", "-0.5", "0.125")]
    quantum = Decimal(1).scaleb(-scale)
    factors, divisors = ([x for x in pool if x == x.quantize(quantum, context=_EXACT)] for pool in (factors, divisors))
    top = Decimal(10**precision - 1).scaleb(-scale, context=_EXACT)
    third = _EXACT.divide(top, 3).quantize(quantum, rounding=decimal.ROUND_DOWN, context=_EXACT)
    factors += [top, top.copy_negate(), third]
    sizes = np.concatenate([rng.integers(1, 9, FEW_RUNS * 3), [200, 150, 1]])  # passes, then a finish
    values: list[Decimal] = []
    retract: list[bool] = []
    for size in sizes:
        for i in range(size):
            minus = bool(i > 0 and rng.random() < 0.3) or bool(i == 0 and rng.random() < 0.1)
            pool = divisors if minus and i > 0 else factors
            values.append(pool[rng.integers(len(pool))])
            retract.append(minus)
    gid = np.repeat(np.arange(len(sizes)), sizes)
    arr = pa.array(values, type=pa.decimal128(precision, scale))
    got = product_fold("c", arr, np.array(retract), gid, len(sizes) + 1).to_pylist()
    at = np.concatenate([[0], np.cumsum(sizes)])
    quantized = arr.to_pylist()
    want = [_java(quantized[at[g]:at[g + 1]], retract[at[g]:at[g + 1]], precision, scale) for g in range(len(sizes))]
    assert got[:-1] == want and got[-1] is None  # the last group has no entries
    assert None in want and any(w not in (None, 0) for w in want)


@pytest.mark.parametrize("long_run", [False, True])
def test_a_retraction_without_a_finite_quotient_or_of_zero_fails(long_run: bool) -> None:
    sizes = [2] * (1 if long_run else FEW_RUNS + 1)  # one run finishes alone; many take the passes
    for divisor, match in ((Decimal(3), r"retracted 3\.00 from 1\.00: the quotient has no exact decimal form"),
                           (Decimal(0), "retracted a zero")):
        values = [v for _ in sizes for v in (Decimal(1), divisor)]
        retract = np.array([r for _ in sizes for r in (False, True)])
        with pytest.raises(InvalidDataError, match=match):
            product_fold("c", pa.array(values, type=pa.decimal128(38, 2)), retract,
                         np.repeat(np.arange(len(sizes)), sizes), len(sizes))
