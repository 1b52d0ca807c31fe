"""The int32 path of `bucket_of_hashes` (a uint32 remainder, a mask for powers of two) gives Java's
``Math.abs(hash % n)`` as the int64 ``fmod`` it replaced does, for every hash and bucket count."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.lsm.bucket import bucket_of_hashes

INT32 = st.integers(-(2**31), 2**31 - 1)


def _java(hashes: list[int], n: int) -> list[int]:
    """Math.abs(h % n) with Java's truncating remainder, in Python integers."""
    return [abs(abs(h) % n) for h in hashes]


@settings(max_examples=300, deadline=None)
@given(hashes=st.lists(INT32, min_size=1, max_size=50),
       n=st.one_of(st.integers(1, 64), st.sampled_from([2**k for k in range(31)]), st.integers(1, 2**31 - 1)))
def test_int32_hashes_bucket_as_java_does(hashes: list[int], n: int) -> None:
    edges = [*hashes, -(2**31), 2**31 - 1, -1, 0, 1]
    got = bucket_of_hashes(np.array(edges, dtype=np.int32), n)
    assert got.dtype == np.int32
    assert got.tolist() == _java(edges, n)
    # the generic path (any other integer dtype) agrees
    assert bucket_of_hashes(np.array(edges, dtype=np.int64), n).tolist() == got.tolist()
