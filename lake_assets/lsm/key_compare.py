"""Ordering of decoded keys, as Paimon's key comparator orders them."""

from __future__ import annotations

from collections.abc import Sequence

from lake_assets.spec.types import DataType


def _cmp(a: object, b: object) -> int:
    if isinstance(a, str) and isinstance(b, str):
        # Unsigned byte order of UTF-8 equals code point order, which Python's str compare uses.
        return (a > b) - (a < b)
    return (a > b) - (a < b)  # type: ignore[operator]


def compare_keys(a: Sequence[object], b: Sequence[object], types: Sequence[DataType] = ()) -> int:
    """Three-way compare of two keys field by field (nulls first; keys are never null in practice)."""
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            if x is None and y is None:
                continue
            return -1 if x is None else 1
        c = _cmp(x, y)
        if c:
            return c
    return 0
