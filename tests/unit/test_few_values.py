"""`few_value_codes` (the partition grouping of a batch holding a few partitions) numbers rows as
Arrow's `dictionary_encode` does, on every column shape it takes, and declines the others."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.ops.few_values import FEW_VALUES, few_value_codes
from lake_assets.ops.route import partition_groups


def _expected(column: pa.Array | pa.ChunkedArray) -> tuple[list[int], list[int]]:
    """Arrow's codes and, per code, the first row holding it."""
    enc = pc.dictionary_encode(column, null_encoding="encode")
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    codes = enc.indices.to_pylist()
    return codes, [codes.index(c) for c in range(len(enc.dictionary))]


def _check(column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether the column was coded (True) or declined (False); coded means Arrow's answer."""
    got = few_value_codes(column)
    if got is None:
        return False
    codes, firsts = got
    assert codes.dtype == np.int64
    assert (codes.tolist(), firsts) == _expected(column)
    return True


STRING_VALUES = st.text(alphabet="ab-0é", min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(pool=st.lists(STRING_VALUES, min_size=1, max_size=12, unique=True),
       picks=st.lists(st.integers(0, 11), min_size=1, max_size=80), skip=st.integers(0, 3),
       binary=st.booleans())
def test_strings_code_as_arrow_does(pool: list[str], picks: list[int], skip: int, binary: bool) -> None:
    values = [pool[p % len(pool)] for p in picks]
    arr = pa.array(values, pa.binary() if binary else pa.string())
    _check(arr)
    _check(pa.chunked_array([arr.slice(min(skip, len(arr) - 1))]))  # a slice: offsets not from 0
    _check(pa.chunked_array([arr.slice(0, skip), pa.array([], arr.type), arr.slice(skip)]))  # chunks
    same_width = [v.encode()[:1].ljust(1, b"x") * (3 + len(pool[0])) for v in values]
    assert _check(pa.array(same_width, pa.binary())) == (len(set(same_width)) <= FEW_VALUES)
    cut = len(same_width) // 2
    chunked = pa.chunked_array([pa.array(same_width[:cut], pa.binary()), pa.array(same_width[cut:], pa.binary())])
    assert _check(chunked) == (len(set(same_width)) <= FEW_VALUES)


@pytest.mark.parametrize("width", [1, 2, 3, 5, 7, 8, 9, 10, 13, 16, 17, 24, 31, 32])
def test_strings_of_every_width_up_to_32_bytes_are_coded(width: int) -> None:
    rng = np.random.default_rng(width)
    # values that differ in a single byte at every position, first and last included
    base = "d" * width
    positions = list(dict.fromkeys([0, width - 1, *range(1, width - 1)]))[:FEW_VALUES - 1]
    pool = [base, *(base[:i] + "e" + base[i + 1:] for i in positions)]
    values = [pool[i] for i in rng.integers(0, len(pool), 5000)]
    chunks = pa.chunked_array([pa.array(values[:1234]), pa.array(values[1234:]).slice(3)])
    for arr in (pa.array(values), pa.array(values).slice(7), pa.chunked_array([pa.array(values)]), chunks):
        assert _check(arr)


@pytest.mark.parametrize("arr", [
    pa.array(["2024-01-01", None, "2024-01-01"]),               # nulls: the hash kernel encodes them
    pa.array(["2024-01-01", "2024-1-2", "2024-01-01"]),          # several lengths
    pa.array(["x" * 33, "y" * 33]),                              # longer than four words
    pa.array(["", ""]),                                          # empty strings: no bytes to compare
    pa.chunked_array([pa.array(["ab", "cd"]), pa.array(["abc"])]),  # another length in another chunk
    pa.chunked_array([pa.array([1, 2]), pa.array([1, None])]),  # a null in another chunk
    pa.array([1.5, 2.5, 1.5]),                                   # floats: -0.0 and NaN differ by bits
    pa.array([True, False]),
    pa.array([str(i % (FEW_VALUES + 1)) for i in range(1000)]),  # more values than FEW_VALUES
    pa.array(np.arange(100_000) % 500),                          # many values: the probe sees them
    pa.array(["a", "b"], pa.large_string()),
    pa.array([], pa.string()),
])
def test_other_columns_are_left_to_the_hash_kernel(arr: pa.Array | pa.ChunkedArray) -> None:
    assert few_value_codes(arr) is None


@pytest.mark.parametrize("arr", [
    pa.array(np.array([3, -1, 3, 3, 7, -1], np.int8)), pa.array(np.array([3, 1, 3], np.uint16)),
    pa.array([5, 6, 5], pa.int32()), pa.array([2**62, -(2**62), 2**62], pa.int64()),
    pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 1)]),
    pa.array([dt.datetime(2024, 1, 1, 3), dt.datetime(2024, 1, 1, 3)], pa.timestamp("us")),
    pa.array([dt.datetime(2024, 1, 1, 3), dt.datetime(2025, 1, 1)], pa.timestamp("ms", tz="UTC")),
    pa.array([dt.time(1, 2), dt.time(1, 3), dt.time(1, 2)], pa.time32("ms")),
    pa.array([10**9, 10**9 + 1] * 3, pa.time64("us")),
    pa.chunked_array([pa.array([4, 5], pa.int16()), pa.array([], pa.int16()), pa.array([6, 4], pa.int16())]),
    # the one value of a batch after FEW_VALUES - 1 others, seen last
    pa.array(list(range(FEW_VALUES - 1)) * 100 + [99], pa.int64()),
])
def test_numbers_dates_and_times_code_as_arrow_does(arr: pa.Array | pa.ChunkedArray) -> None:
    assert _check(arr)


def test_partition_groups_of_a_few_string_partitions_match_the_hash_path() -> None:
    rng = np.random.default_rng(1)
    days = np.array(["2024-01-01", "2024-01-02", "2024-01-03"], dtype=object)
    data = pa.table({"dt": pa.array(days[rng.integers(0, 3, 10_000)]), "h": rng.integers(0, 2, 10_000)})
    ids, values = partition_groups(data, ["dt"])
    codes, firsts = _expected(data.column("dt"))
    assert ids.tolist() == codes
    assert values == [(data.column("dt")[f].as_py(),) for f in firsts]
    two_ids, two_values = partition_groups(data, ["dt", "h"])
    pairs = list(zip(data.column("dt").to_pylist(), data.column("h").to_pylist(), strict=True))
    assert two_values == list(dict.fromkeys(pairs))
    assert [two_values[i] for i in two_ids] == pairs
