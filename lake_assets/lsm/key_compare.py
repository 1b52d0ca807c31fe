"""Ordering of keys, as Paimon's key comparator orders them.

Paimon's generated record comparator compares FLOAT and DOUBLE fields with Java's
``Float.compare`` / ``Double.compare``: every NaN equals every other NaN and sorts above +inf, and
-0.0 sorts below (so is a different key from) 0.0. Arrow's comparisons follow IEEE instead (NaN
differs from itself, -0.0 equals 0.0), so every place that sorts, groups or matches keys goes
through this module: `key_view` turns float key columns into unsigned integers whose natural
order and equality are Java's, and `compare_keys` does the same for decoded keys.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lake_assets.spec.data_types import DataType

_SIGN64 = np.uint64(1 << 63)
_NAN64 = np.uint64(0x7FF8000000000000)  # Double.doubleToLongBits collapses every NaN to this


def float_order_codes(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """uint64 codes of a float array ordered and equal as Java's ``Double.compare`` (nulls kept).

    A float32 widens to float64 exactly (NaN stays NaN, -0.0 stays -0.0), so one code serves both.
    """
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([float_order_codes(c) for c in arr.chunks], type=pa.uint64())
    values = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)
    bits = values.view(np.uint64).copy()
    bits[np.isnan(values)] = _NAN64
    negative = (bits & _SIGN64) != 0
    # Negative floats order by their inverted bits, positive ones above all negative ones.
    codes = np.where(negative, ~bits, bits | _SIGN64)
    mask = None if arr.null_count == 0 else np.asarray(arr.is_null().to_numpy(zero_copy_only=False))
    return pa.array(codes, type=pa.uint64(), mask=mask)


def key_view(table: pa.Table, key_names: Sequence[str]) -> pa.Table:
    """``table`` with its float key columns replaced by `float_order_codes` (same names), for
    sorting, grouping and matching keys; ``table`` itself when no key column is a float."""
    for name in key_names:
        i = table.schema.get_field_index(name)
        typ = table.schema.field(i).type
        if pa.types.is_floating(typ):
            table = table.set_column(i, pa.field(name, pa.uint64()), float_order_codes(table.column(i)))
    return table


def float_code(value: float) -> int:
    """The `float_order_codes` code of one Python float."""
    bits = int(_NAN64) if math.isnan(value) else struct.unpack("<Q", struct.pack("<d", value))[0]
    return (~bits & 0xFFFFFFFFFFFFFFFF) if bits >> 63 else bits | (1 << 63)


def values_equal(a: object, b: object) -> bool:
    """Equality as Paimon's comparators and predicates decide it: floats by ``Double.compare``
    (NaN equals NaN, -0.0 differs from 0.0), everything else by ``==``."""
    if isinstance(a, float) and isinstance(b, float):
        return float_code(a) == float_code(b)
    return a == b


def _cmp(a: object, b: object) -> int:
    if isinstance(a, float) and isinstance(b, float):
        a, b = float_code(a), float_code(b)
    # Unsigned byte order of UTF-8 equals code point order, which Python's str compare uses.
    x: Any = a  # two values of one key column: Python orders them as Paimon does
    y: Any = b
    return int(x > y) - int(x < y)


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
