"""DECIMAL ``sum`` runs that may leave their precision, folded in Arrow passes
(`aggregate_arithmetic._decimal_sum_passes`), against a record-by-record model of Java's
FieldSumAgg with DecimalUtils.add/subtract (written from Paimon 0.9-HEAD, identical there; the
differential test_aggregate_arithmetic_java.py checks DECIMAL(20, 2) against Java 0.9 itself)."""

from __future__ import annotations

import random
from decimal import Context, Decimal

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.aggregate_arithmetic import sum_fold

LONG = 2**63
EXACT = Context(prec=100)


def java_sum(precision: int, scale: int, run: list[tuple[Decimal, bool]]) -> Decimal | str | None:
    """One run as Java: unscaled longs added unchecked for p <= 18 (null when the long overflows),
    else null past the precision; a null restarts from the next value. "refused": a p <= 18 sum
    with more than p digits (lake_assets does not write it)."""
    acc: int | None = None
    for value, minus in run:
        u = int(value.scaleb(scale, EXACT)) * (-1 if minus else 1)
        if acc is None:
            acc = u
            continue
        total = acc + u
        if precision <= 18:
            acc = total if -LONG <= total < LONG else None
        else:
            acc = total if len(str(abs(total))) <= precision else None
    if acc is not None and len(str(abs(acc))) > precision:
        return "refused"
    return None if acc is None else Decimal(acc).scaleb(-scale, EXACT)


@pytest.mark.parametrize(("precision", "scale"), [(5, 2), (18, 0), (18, 4), (20, 2), (38, 10), (38, 0)])
def test_sums_that_may_leave_the_precision_match_java_record_by_record(precision: int, scale: int) -> None:
    rng = random.Random(precision * 100 + scale)
    dtype = pa.decimal128(precision, scale)
    top = 10**precision - 1
    runs: list[list[tuple[Decimal, bool]]] = []
    for _ in range(120):
        size = rng.choice([1, 2, 3, 5, 9, 17])
        big = rng.random() < 0.7  # most runs near the edge: past the precision or the long
        runs.append([(Decimal(rng.randint(-top, top) if big else rng.randint(-99, 99)).scaleb(-scale, EXACT),
                      rng.random() < 0.3) for _ in range(size)])
    expected = [java_sum(precision, scale, run) for run in runs]
    ok = [i for i, e in enumerate(expected) if e != "refused"]
    # the cases at hand occur: past the precision (null, p > 18) or kept unchecked and refused (p <= 18)
    assert len(ok) > 20 and (any(expected[i] is None for i in ok) if precision > 18 else len(ok) < len(runs))

    def fold(chosen: list[int]) -> list[Decimal | None]:
        flat = [e for i in chosen for e in runs[i]]
        gid = np.repeat(np.arange(len(chosen)), [len(runs[i]) for i in chosen])
        values = pa.array([v for v, _ in flat], type=dtype)
        out: list[Decimal | None] = sum_fold("d", values, np.array([m for _, m in flat]), gid, len(chosen)).to_pylist()
        return out

    assert fold(ok) == [expected[i] for i in ok]
    for i in [i for i, e in enumerate(expected) if e == "refused"][:3]:
        with pytest.raises(InvalidDataError, match="more digits than"):
            fold([i])
