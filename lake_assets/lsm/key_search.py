"""Where one key value's rows lie in a key-sorted column, found without decoding rows to Python.

The k-way merge's frontier (`lsm.merge_reader.count_at_most`) asks, column by column, for the
rows of a sorted key column that are equal to one value. `equal_range` answers with a binary
search over the column's own buffers, in Paimon's key order as `lsm.key_compare.compare_keys`
defines it (nulls first, floats as Java's ``Double.compare``, strings and bytes by unsigned
bytes), so the answer is the one the scalar search of decoded keys gives:

- integers, and dates/times/timestamps/durations by their physical integer: ``np.searchsorted``
  on the zero-copy buffer;
- floats: ``np.searchsorted`` on the zero-copy buffer (a column in Java's order is also in
  numpy's, which only merges -0.0 with 0.0 and keeps NaNs last), then the zero block is split
  at its sign (-0.0 before 0.0); every NaN is one key in both orders;
- strings and binaries: Arrow's ``search_sorted`` kernel (bytewise; pyarrow 22+);
- decimals: a binary search of their two's-complement integers read straight from the buffer
  (numpy has no 128-bit integers and Arrow no decimal search), one integer per probe.

Any other type, a value of another Python type than the column decodes to, or a value the type
cannot hold exactly gives None: the caller then takes the scalar search of decoded keys.
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["equal_range"]

Range = tuple[int, int]

_SEARCH_SORTED: Any = getattr(pc, "search_sorted", None)  # Arrow 22+; older: scalar fallback
_NO_VALUE = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
             OverflowError)


def equal_range(column: pa.Array | pa.ChunkedArray, value: object, lo: int = 0, hi: int | None = None) -> Range | None:
    """``(left, right)``: the number of rows of ``column[lo:hi]`` ordered before ``value`` and the
    number ordered before or equal to it, for a column sorted in Paimon's key order with nulls
    first; or None when this column type or value has no vectorised search.

    A sorted column cut into chunks is sorted within each chunk, and a count of rows below a
    value is the sum of the chunks' counts, so chunks are searched one by one without combining.
    The common column (one chunk, no nulls) is searched in place, without slicing it in Arrow.
    """
    end = len(column) if hi is None else hi
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks != 1:
            return _chunks_range(column.slice(lo, end - lo).chunks, value)
        column = column.chunk(0)
    if column.null_count:
        return _chunks_range([column.slice(lo, end - lo)], value)
    if value is None:
        return 0, 0  # nulls first: no row of a column without nulls is ordered before a null
    return _search(column, lo, end, value)


def _chunks_range(chunks: list[pa.Array], value: object) -> Range | None:
    left = right = 0
    for chunk in chunks:
        nulls = chunk.null_count  # sorted nulls first: the chunk's nulls are its first rows
        if value is None:
            found: Range | None = (0, nulls)
        else:
            rest = chunk.slice(nulls) if nulls else chunk
            found = _search(rest, 0, len(rest), value)
            found = None if found is None else (nulls + found[0], nulls + found[1])
        if found is None:
            return None
        left += found[0]
        right += found[1]
    return left, right


def _search(values: pa.Array, lo: int, hi: int, value: object) -> Range | None:
    """`equal_range` of ``values[lo:hi]``, a window without nulls, by the column's type."""
    typ = values.type
    if lo >= hi:
        return 0, 0
    if pa.types.is_integer(typ):
        return _integer_range(values.to_numpy(zero_copy_only=True)[lo:hi], value)
    if pa.types.is_floating(typ) and typ.bit_width > 16:
        return _float_range(values.to_numpy(zero_copy_only=True)[lo:hi], value)
    physical = _physical_integer(typ, value)
    if physical is not None:
        try:
            code = pa.array([value], typ).view(physical)[0].as_py()
        except _NO_VALUE:
            return None
        return _integer_range(values.view(physical).to_numpy(zero_copy_only=True)[lo:hi], code)
    if pa.types.is_decimal128(typ) or pa.types.is_decimal256(typ):
        return _decimal_range(values, lo, hi, value)
    if _SEARCH_SORTED is not None and _is_bytes_like(typ, value):
        try:
            needle = pa.scalar(value, typ)
        except _NO_VALUE:
            return None
        window = values.slice(lo, hi - lo)
        left = _SEARCH_SORTED(window, needle, side="left").as_py()
        right = _SEARCH_SORTED(window, needle, side="right").as_py()
        return int(left), int(right)
    return None


_LIMITS: dict[np.dtype[Any], tuple[int, int]] = {}


def _integer_range(values: np.ndarray, value: object) -> Range | None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None  # a bool or a float against integers: the scalar search decides
    limits = _LIMITS.get(values.dtype)
    if limits is None:
        info = np.iinfo(values.dtype)
        limits = _LIMITS[values.dtype] = (int(info.min), int(info.max))
    needle = int(value)
    if needle < limits[0]:
        return 0, 0
    if needle > limits[1]:
        return len(values), len(values)
    # a Python int in the dtype's range compares exactly, without a mixed-type promotion copy
    return int(values.searchsorted(needle, "left")), int(values.searchsorted(needle, "right"))


def _float_range(values: np.ndarray, value: object) -> Range | None:
    if not isinstance(value, float):
        return None  # compare_keys orders an int against a float by value, not Double.compare
    if values.dtype == np.float32 and not np.isnan(value) and float(np.float32(value)) != value:
        values = values.astype(np.float64)  # a double between two floats: compare as doubles
    # a Python float against float32 converts exactly (checked above) or is NaN; NaN: numpy's
    # sort puts every NaN last and searchsorted finds them as one block, as Java does
    left = int(values.searchsorted(value, "left"))
    right = int(values.searchsorted(value, "right"))
    if value == 0.0 and right > left:
        # numpy's block holds -0.0 and 0.0; Java orders -0.0 first and apart
        negative = int(np.count_nonzero(np.signbit(values[left:right])))
        return (left, left + negative) if math.copysign(1.0, value) < 0 else (left + negative, right)
    return left, right


def _physical_integer(typ: pa.DataType, value: object) -> pa.DataType | None:
    """The integer type a temporal column is stored as, when ``value`` is what the column decodes
    to and converting it back is exact (nanosecond times decode to microseconds: excluded)."""
    if pa.types.is_date32(typ) or pa.types.is_date64(typ):
        exact = type(value) is datetime.date
    elif pa.types.is_timestamp(typ):
        exact = isinstance(value, datetime.datetime) and (typ.tz is None) == (value.tzinfo is None)
    elif pa.types.is_time32(typ) or (pa.types.is_time64(typ) and typ.unit == "us"):
        exact = isinstance(value, datetime.time)
    elif pa.types.is_duration(typ):
        exact = isinstance(value, datetime.timedelta)
    else:
        return None
    if not exact:
        return None
    return pa.int32() if typ.bit_width == 32 else pa.int64()


def _decimal_range(values: pa.Array, lo: int, hi: int, value: object) -> Range | None:
    if not isinstance(value, decimal.Decimal) or not value.is_finite():
        return None
    typ = values.type
    try:
        needle_array = pa.array([value], typ)  # raises rather than round to the column's scale
    except _NO_VALUE:
        return None
    width = typ.byte_width
    needle = int.from_bytes(needle_array.buffers()[1].to_pybytes()[:width], "little", signed=True)
    buffer = memoryview(values.buffers()[1]).cast("B")
    start = values.offset * width

    def unscaled(row: int) -> int:
        at = start + row * width
        return int.from_bytes(buffer[at:at + width], "little", signed=True)

    def first(after_equal: bool) -> int:
        a, b = lo, hi
        while a < b:
            mid = (a + b) // 2
            probe = unscaled(mid)
            if probe < needle or (after_equal and probe == needle):
                a = mid + 1
            else:
                b = mid
        return a - lo

    return first(False), first(True)


def _is_bytes_like(typ: pa.DataType, value: object) -> bool:
    """Strings against str, binaries against bytes: the value types the scalar search compares."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        return isinstance(value, str)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_binary_view(typ):
        return isinstance(value, bytes)
    return False
