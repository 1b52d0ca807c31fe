"""A stable order of non-negative integers by least-significant-digit radix sort.

numpy sorts 64-bit integers by comparison on this project's machines (about 30 ns a value at
25K values: ~0.75 ms for one bucket of an upsert round), but it sorts 16-bit and 8-bit integers
stably by radix, in linear time (about 4 ns a value). Keys whose range spans at most
`RADIX_MAX_BITS` bits are therefore ordered by a few stable passes over their 16-bit digits,
least significant first: 0.2-0.5 ms instead of 0.8 ms for 25K keys, a quarter of the time at
200K. Small inputs and wide ranges keep the comparison sort (measured crossovers below).
"""

from __future__ import annotations

import numpy as np

# Fewest values a radix order is worth its passes for: below, each pass's fixed cost of a few
# numpy calls outweighs the comparison sort (1,024 values of 40 bits: 24 µs against 19-22 µs;
# 4,096: 62 against 89-115 µs).
RADIX_MIN_ROWS = 4096
# Widest range ordered by radix: three 16-bit passes. Four passes (64 bits) cost about what the
# comparison sort does at 25K values (0.83 against 0.80 ms).
RADIX_MAX_BITS = 48
_DIGIT_BITS = 16


def radix_applies(n: int, bits: int) -> bool:
    """Whether `radix_order` beats numpy's comparison sort for ``n`` values spanning ``bits`` bits."""
    return n >= RADIX_MIN_ROWS and bits <= RADIX_MAX_BITS


def radix_order(values: np.ndarray, bits: int) -> np.ndarray:
    """The stable ascending order (int64 positions) of ``values``, non-negative integers below
    ``2 ** bits`` (uint64, or any integer dtype whose values are non-negative): equal values keep
    their input order.

    Each pass orders the positions so far by one digit with numpy's stable sort, which is a
    counting radix sort for 8- and 16-bit integers; a stable pass over a more significant digit
    keeps the order of the less significant ones among its ties (LSD radix sort)."""
    n = len(values)
    order = np.arange(n, dtype=np.int64)
    if n <= 1 or bits <= 0:
        return order
    current = values.astype(np.uint64, copy=False)
    shift = 0
    first = True
    while shift < bits:
        width = min(_DIGIT_BITS, bits - shift)
        digit = (current >> np.uint64(shift)).astype(np.uint16 if width > 8 else np.uint8)
        step = np.argsort(digit, kind="stable")
        order = step if first else order[step]
        first = False
        shift += _DIGIT_BITS
        if shift < bits:
            current = current[step]  # the values in the order so far, for the next digit
    return order.astype(np.int64, copy=False)
