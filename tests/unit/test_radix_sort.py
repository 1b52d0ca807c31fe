"""The radix order of integer keys equals numpy's stable sort, and the write path's key sort uses it
for a bucket's worth of keys (issue 17 §1: 0.2-0.5 ms instead of ~0.8 ms a 25K-row bucket)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.formats.data_file import SEQUENCE_NUMBER
from lake_assets.lsm import merge
from lake_assets.lsm.merge import sort_order
from lake_assets.lsm.radix_sort import RADIX_MAX_BITS, RADIX_MIN_ROWS, radix_applies, radix_order


@settings(max_examples=200, deadline=None)
@given(bits=st.integers(0, 64), n=st.integers(0, 300), seed=st.integers(0, 2**32 - 1),
       few=st.booleans())
def test_radix_order_is_numpys_stable_order(bits: int, n: int, seed: int, few: bool) -> None:
    rng = np.random.default_rng(seed)
    top = (1 << bits) - 1
    if few:  # many ties: stability shows
        pool = rng.integers(0, top, size=5, dtype=np.uint64, endpoint=True)
        values = pool[rng.integers(0, 5, size=n)]
    else:
        values = rng.integers(0, top, size=n, dtype=np.uint64, endpoint=True)
    got = radix_order(values, bits)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.argsort(values, kind="stable"))


@pytest.mark.parametrize("span_bits", [1, 15, 16, 17, 25, 40, RADIX_MAX_BITS])
@pytest.mark.parametrize("duplicates", [False, True])
def test_a_bucket_of_keys_orders_as_the_general_sort(span_bits: int, duplicates: bool) -> None:
    """Past `RADIX_MIN_ROWS` rows the single-integer-key path orders by radix, unique keys and
    (key, sequence) pairs alike; the order is the general multi-column sort's, ties included."""
    rng = np.random.default_rng(span_bits)
    n = 3 * RADIX_MIN_ROWS
    lo = -(1 << 40)
    if duplicates:
        keys = lo + rng.integers(0, min(1 << span_bits, 300), n)
        seq = rng.integers(0, 50, n)  # equal (key, sequence) pairs: input order decides
    else:
        keys = lo + rng.choice(1 << span_bits, size=n, replace=False) if span_bits > 14 else lo + rng.permutation(n)
        seq = np.arange(n)
    table = pa.table({"k": pa.array(keys, pa.int64()), SEQUENCE_NUMBER: pa.array(seq, pa.int64())})
    general = pc.sort_indices(table, sort_keys=[("k", "ascending"), (SEQUENCE_NUMBER, "ascending")]).to_numpy()
    assert np.array_equal(sort_order(table, ["k"]), general)


def test_the_key_sort_takes_the_radix_order_for_a_bucket_of_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decision itself: 25K random keys of a 25-bit range (an upsert round's bucket) are
    ordered by radix, 1,000 keys (below the crossover) and a 64-bit range by the comparison sort."""
    calls: list[int] = []
    real = merge.radix_order

    def counting(values: np.ndarray, bits: int) -> np.ndarray:
        calls.append(len(values))
        return real(values, bits)

    monkeypatch.setattr(merge, "radix_order", counting)
    rng = np.random.default_rng(7)
    keys = rng.choice(6_000_000, size=25_000, replace=False).astype(np.int64) * 3 + 1_000_001
    order, ordered = merge._int_key_sort(keys)
    assert calls == [25_000]
    assert np.array_equal(ordered, np.sort(keys)) and np.array_equal(keys[order], ordered)
    calls.clear()
    merge._int_key_sort(keys[:1000])
    merge._int_key_sort(np.array([-(2**63), 2**63 - 1] * 3000, dtype=np.int64))
    assert calls == []
    assert radix_applies(RADIX_MIN_ROWS, RADIX_MAX_BITS) and not radix_applies(RADIX_MIN_ROWS - 1, 8)
