"""Per-group sums, minimums and maximums with numpy (`lsm.merge_engine.segment_reduce`) against
Arrow's hash aggregate they stand in for, on seeded random groups; and the aggregation engine's
results through them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.aggregate_functions import FieldFunction, fold
from lake_assets.lsm.merge_engine.grouping import hash_aggregate
from lake_assets.lsm.merge_engine.segment_reduce import MAX_RUN, runs_of, segment_reduce, segment_sum


def _groups(rng: np.random.Generator, n_groups: int, longest: int) -> np.ndarray:
    return np.repeat(np.arange(n_groups), rng.integers(1, longest + 1, n_groups))


@pytest.mark.parametrize("dtype", [pa.float64(), pa.float32(), pa.int32(), pa.int16(), pa.int8()])
@pytest.mark.parametrize("seed", range(4))
def test_sums_are_arrows_to_the_last_bit_but_negative_zero_and_float32(dtype: pa.DataType, seed: int) -> None:
    rng = np.random.default_rng(seed)
    gid = _groups(rng, 3_000, MAX_RUN)
    if pa.types.is_floating(dtype):
        raw = rng.standard_normal(gid.size) * 10.0 ** rng.integers(-6, 7, gid.size)
        raw[rng.random(gid.size) < 0.02] = -0.0
    else:
        raw = rng.integers(-7, 8, gid.size)  # a run of 16 fits int8
    values = pa.array(raw).cast(dtype)
    retract = rng.random(gid.size) < 0.3
    first, sizes = runs_of(gid)
    got = segment_sum("c", values, retract, first, sizes)
    wide = pa.float64() if pa.types.is_floating(dtype) else pa.int64()
    signed = pa.array(np.where(retract, -1, 1)).cast(wide)
    expected = hash_aggregate(pa.compute.multiply(values.cast(wide), signed), gid, first.size, "sum").cast(dtype)
    if dtype == pa.float32():  # Java adds a FLOAT in float32 at every step (FieldSumAgg), not in float64
        terms = np.where(retract, -values.to_numpy(), values.to_numpy())
        acc = terms[first].copy()
        for k in range(1, int(sizes.max())):
            more = sizes > k
            acc[more] += terms[first[more] + k]
        expected = pa.array(acc)
    assert got is not None and got.type == dtype
    assert got.equals(expected)
    # and to the sign of a zero, but where a run is all -0.0: Java's -0.0, where Arrow gives 0.0
    g, e = got.to_numpy(zero_copy_only=False), expected.to_numpy(zero_copy_only=False)
    if pa.types.is_floating(dtype):
        signed_raw = np.where(retract, -values.to_numpy(zero_copy_only=False), values.to_numpy(zero_copy_only=False))
        all_negative_zero = np.bincount(gid, weights=~((signed_raw == 0) & np.signbit(signed_raw))) == 0
        assert np.array_equal(np.signbit(g), np.signbit(e) | all_negative_zero)


def test_a_sum_that_leaves_the_type_raises_and_long_runs_or_wide_types_are_left_to_the_hash() -> None:
    gid = np.array([0, 0, 1])
    first, sizes = runs_of(gid)
    with pytest.raises(InvalidDataError, match="overflowed column 'c'"):
        segment_sum("c", pa.array([100, 100, 1], pa.int8()), np.zeros(3, bool), first, sizes)
    long = np.zeros(MAX_RUN + 1, dtype=np.int64)
    assert segment_sum("c", pa.array(np.ones(long.size)), np.zeros(long.size, bool), *runs_of(long)) is None
    assert segment_sum("c", pa.array([1, 2, 3], pa.int64()), np.zeros(3, bool), first, sizes) is None
    assert segment_sum("c", pa.array([1.0, None, 3.0]), np.zeros(3, bool), first, sizes) is None


@pytest.mark.parametrize("function, agg, dtype", [
    ("min", "min", pa.int32()), ("max", "max", pa.int64()), ("max", "max", pa.int8()),
    ("bool_and", "all", pa.bool_()), ("bool_or", "any", pa.bool_()),
])
def test_order_free_reductions_are_arrows(function: str, agg: str, dtype: pa.DataType) -> None:
    rng = np.random.default_rng(7)
    gid = _groups(rng, 2_000, 40)
    raw = rng.random(gid.size) < 0.5 if pa.types.is_boolean(dtype) else rng.integers(-100, 100, gid.size)
    values = pa.array(raw).cast(dtype)
    first, _ = runs_of(gid)
    got = segment_reduce(function, values, first)
    assert got is not None and got.equals(hash_aggregate(values, gid, first.size, agg).cast(dtype))
    assert segment_reduce("max", pa.array([1.0, 2.0]), np.array([0])) is None  # floats: Arrow's NaN rules


def test_fold_through_the_segments_gives_the_hash_results_with_nulls_and_empty_groups() -> None:
    rng = np.random.default_rng(3)
    gid = _groups(rng, 500, 4)
    raw = rng.integers(0, 50, gid.size)
    col = pa.array(raw, pa.int32(), mask=rng.random(gid.size) < 0.4)  # some groups hold only nulls
    rows = np.arange(gid.size, dtype=np.int64)
    retract = rng.random(gid.size) < 0.2
    for name in ("sum", "max", "min"):
        got = fold(FieldFunction("c", name), col, rows, retract if name == "sum" else np.zeros(gid.size, bool),
                   gid, 500)
        valid = ~np.asarray(col.is_null())
        sign = np.where(retract, -1, 1) if name == "sum" else np.ones(gid.size, dtype=np.int64)
        expected = hash_aggregate(pa.array((raw * sign)[valid], pa.int64()), gid[valid], 500, name).cast(pa.int32())
        assert got.null_count > 0 and got.equals(expected), name


@pytest.mark.parametrize("dtype", [pa.float64(), pa.float32()])
@pytest.mark.parametrize("run", [1, MAX_RUN + 1])  # numpy runs, then Arrow's hash aggregate
def test_sums_keep_java_negative_zero(dtype: pa.DataType, run: int) -> None:
    # FieldSumAgg adds from the first value (agg(null, x) = x) and retracts by subtracting:
    # -0.0 alone and -0.0 + -0.0 stay -0.0, a retracted +0.0 on nothing is -0.0, anything
    # else with a zero in it is +0.0 (IEEE round-to-nearest); Arrow's sum from +0.0 gave 0.0.
    groups = [  # (values, retract flags, Java's sum)
        ([-0.0], [False], -0.0), ([-0.0, -0.0], [False, False], -0.0), ([0.0], [True], -0.0),
        ([-0.0, 0.0], [False, False], 0.0), ([0.0, -0.0], [False, False], 0.0),
        ([-0.0, -0.0], [False, True], 0.0), ([1.5, -1.5], [False, False], 0.0), ([2.0, -0.0], [False, False], 2.0),
    ]
    raw: list[float] = []
    flags: list[bool] = []
    gid: list[int] = []
    for g, (vals, retracts, _) in enumerate(groups):
        # padding a group to the run length with -0.0 keeps its sum when the sum is -0.0 or nonzero;
        # +0.0-summing groups are padded with what keeps them +0.0
        pad = -0.0 if groups[g][2] != 0.0 or np.signbit(groups[g][2]) else 0.0
        extra = max(0, run - len(vals))
        raw += vals + [pad] * extra
        flags += retracts + [False] * extra
        gid += [g] * (len(vals) + extra)
    fn = FieldFunction("c", "sum", False)
    n = len(raw)
    got = fold(fn, pa.array(raw, dtype), np.arange(n), np.array(flags), np.array(gid), len(groups))
    sums = got.to_numpy(zero_copy_only=False)
    expected = np.array([java for _, _, java in groups])
    assert np.array_equal(sums, expected) and np.array_equal(np.signbit(sums), np.signbit(expected)), sums
