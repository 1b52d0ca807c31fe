"""Float and double column stats take numpy's min/max when they can; the stats bytes stay those of
Arrow's NaN check plus min_max (the former path) on every input: nulls, NaN, infinities, several
chunks, float32. Signed zeros: a zero min is -0.0 and a zero max +0.0 (Parquet's rule), whatever
the chunking (Arrow's min_max reports either zero depending on the chunks it meets)."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.formats.stats import StatsAccumulator
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import SimpleStats
from lake_assets.spec.types import DoubleType, FloatType


def reference_stats(chunks: list[list[float | None]], arrow_type: pa.DataType, t: Any) -> SimpleStats:
    """The former per-chunk rule: NaN anywhere -> no range; else Arrow's min_max folded."""
    lo = hi = None
    unknown = False
    nulls = 0
    for values in chunks:
        col = pa.chunked_array([pa.array(values, arrow_type)], arrow_type)
        nulls += col.null_count
        if unknown or len(col) == col.null_count:
            continue
        if pc.any(pc.is_nan(col)).as_py():
            unknown = True
            continue
        mm = pc.min_max(col)
        c_lo, c_hi = mm["min"].as_py(), mm["max"].as_py()
        lo = c_lo if lo is None or c_lo < lo else lo
        hi = c_hi if hi is None or c_hi > hi else hi
    if unknown:
        lo = hi = None
    if lo == 0:
        lo = -0.0
    if hi == 0:
        hi = 0.0
    return SimpleStats(serialize_row([lo], [t]), serialize_row([hi], [t]), (nulls,))


def ours(chunks: list[list[float | None]], arrow_type: pa.DataType, t: Any, split: int) -> SimpleStats:
    acc = StatsAccumulator([t])
    for values in chunks:
        # the same rows as one chunk or as an Arrow column of several chunks
        arrays = [pa.array(values[:split], arrow_type), pa.array(values[split:], arrow_type)]
        acc.update([pa.chunked_array(arrays, arrow_type)])
    return acc.result()


_FLOATS = st.one_of(
    st.none(), st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 1.5, -1.5]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_FLOATS, max_size=12), min_size=1, max_size=3), st.integers(0, 12))
def test_float_stats_equal_arrows_nan_check_and_min_max(chunks: list[list[float | None]], split: int) -> None:
    for arrow_type, t in ((pa.float64(), DoubleType()), (pa.float32(), FloatType())):
        got = ours(chunks, arrow_type, t, split)
        assert got == reference_stats(chunks, arrow_type, t)


def test_signed_zeros_and_nan_cases() -> None:
    cases: list[list[float | None]] = [
        [0.0, -0.0], [-0.0, 0.0], [-0.0, 1.0], [1.0, 0.0, -0.0], [-2.0, 0.0], [math.nan],
        [1.0, math.nan, 2.0], [math.inf, -math.inf], [None, -0.0, None], [None, math.nan], [3.0],
    ]
    for values in cases:
        for split in range(len(values) + 1):
            assert ours([values], pa.float64(), DoubleType(), split) == reference_stats(
                [values], pa.float64(), DoubleType())


def test_zero_bounds_are_written_as_parquet_writes_them() -> None:
    """A zero min is -0.0 and a zero max +0.0 for every chunking, as Parquet's statistics (and so
    Paimon Java's stats read from them) say, whichever zero the column holds."""
    for values in ([0.0, 0.0], [-0.0, -0.0], [None, 0.0, -0.0], [-0.0, 0.0]):
        for split in range(len(values) + 1):
            got = ours([values], pa.float64(), DoubleType(), split)
            assert got.min_values == serialize_row([-0.0], [DoubleType()])
            assert got.max_values == serialize_row([0.0], [DoubleType()])
