"""Column statistics for manifests (SimpleStats), computed with pyarrow kernels.

Stats must never exclude a real value: strings are truncated to a prefix for the minimum and
to a prefix with its last character incremented for the maximum, as Paimon's truncate(N) mode.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import SimpleStats
from lake_assets.spec.types import (
    ArrayType,
    BinaryType,
    CharType,
    DataType,
    DoubleType,
    FloatType,
    MapType,
    MultisetType,
    RowType,
    VarBinaryType,
    VarCharType,
)

DEFAULT_TRUNCATE = 16
_NESTED = (ArrayType, MapType, MultisetType, RowType)


def _truncate_min(v: object, n: int) -> object:
    if isinstance(v, (str, bytes)) and len(v) > n:
        return v[:n]
    return v


def _truncate_max(v: object, n: int) -> object:
    if isinstance(v, str) and len(v) > n:
        prefix = v[:n]
        last = ord(prefix[-1])
        if last >= 0x10FFFF:
            return None
        nxt = last + 1
        if 0xD800 <= nxt <= 0xDFFF:  # skip surrogates: not encodable in UTF-8
            nxt = 0xE000
        return prefix[:-1] + chr(nxt)
    if isinstance(v, bytes) and len(v) > n:
        prefix = bytearray(v[:n])
        while prefix and prefix[-1] == 0xFF:
            prefix.pop()
        if not prefix:
            return None
        prefix[-1] += 1
        return bytes(prefix)
    return v


def column_stats(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], truncate: int = DEFAULT_TRUNCATE
) -> SimpleStats:
    """SimpleStats over ``columns`` (one per type), vectorized per column."""
    if not types:
        return SimpleStats.EMPTY
    mins: list[object] = []
    maxs: list[object] = []
    nulls: list[int | None] = []
    for col, dtype in zip(columns, types, strict=True):
        nulls.append(int(col.null_count))
        if isinstance(dtype, _NESTED) or len(col) == col.null_count:
            mins.append(None)
            maxs.append(None)
            continue
        if isinstance(dtype, (FloatType, DoubleType)) and pc.any(pc.is_nan(col)).as_py():
            # NaN has no place in a min/max range; unknown is always safe.
            mins.append(None)
            maxs.append(None)
            continue
        mm = pc.min_max(col)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if isinstance(dtype, (FloatType, DoubleType)) and (
            (lo is not None and math.isinf(lo)) or (hi is not None and math.isinf(hi))
        ):
            pass  # infinities order correctly; keep them
        if isinstance(dtype, (CharType, VarCharType, BinaryType, VarBinaryType)):
            lo = _truncate_min(lo, truncate)
            hi = _truncate_max(hi, truncate)
            if hi is None:
                lo = None
        mins.append(lo)
        maxs.append(hi)
    return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(nulls))
