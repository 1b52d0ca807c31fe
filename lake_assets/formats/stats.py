"""Column statistics for manifests (SimpleStats), computed with pyarrow kernels.

Stats must never exclude a real value: strings are truncated to a prefix for the minimum and
to a prefix with its last character incremented for the maximum, as Paimon's truncate(N) mode.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.spec.binary_row_encoder import row_encoder
from lake_assets.spec.data_types import (
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
from lake_assets.spec.manifest import SimpleStats

DEFAULT_TRUNCATE = 16
_NESTED = (ArrayType, MapType, MultisetType, RowType)
# Paimon Java (0.9 and 1.x: ParquetSimpleStatsExtractor has no BINARY/VARBINARY case) writes NULL
# min/max for binary columns, only their null count. Java readers then keep such files; with real
# bounds in our files they prune them (its byte order is not ours), so we write NULL too.
_NO_MIN_MAX = (*_NESTED, BinaryType, VarBinaryType)


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
        raw = bytearray(v[:n])
        while raw and raw[-1] == 0xFF:
            raw.pop()
        if not raw:
            return None
        raw[-1] += 1
        return bytes(raw)
    return v


def column_stats(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], truncate: int = DEFAULT_TRUNCATE
) -> SimpleStats:
    """SimpleStats over ``columns`` (one per type), vectorized per column."""
    acc = StatsAccumulator(types, truncate)
    acc.update(columns)
    return acc.result()


class StatsAccumulator:
    """Column stats gathered chunk by chunk (a rolling file sees its rows in several pieces)."""

    def __init__(self, types: Sequence[DataType], truncate: int = DEFAULT_TRUNCATE) -> None:
        self.types = list(types)
        self.truncate = truncate
        n = len(self.types)
        self.mins: list[object] = [None] * n
        self.maxs: list[object] = [None] * n
        self.nulls = [0] * n
        self.unknown = [isinstance(t, _NO_MIN_MAX) for t in self.types]  # no min/max for these

    def update(self, columns: Sequence[pa.Array | pa.ChunkedArray], defer: Container[int] = ()) -> None:
        """Count nulls and fold in the min/max of every column, except those in ``defer`` whose
        range the caller folds later (`fold`, from the file format's footer statistics)."""
        for i, (col, dtype) in enumerate(zip(columns, self.types, strict=True)):
            self.nulls[i] += int(col.null_count)
            if self.unknown[i] or len(col) == col.null_count or i in defer:
                continue
            lo: Any
            hi: Any
            if isinstance(dtype, (FloatType, DoubleType)):
                found = _float_range(col)
                if found is None:
                    self.unknown[i] = True  # NaN has no place in a min/max range
                    continue
                lo, hi = found
            else:
                mm = pc.min_max(col)
                lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if self.mins[i] is None or lo < self.mins[i]:
                self.mins[i] = lo
            if self.maxs[i] is None or hi > self.maxs[i]:
                self.maxs[i] = hi

    def fold(self, i: int, lo: Any, hi: Any) -> None:
        """Widen column ``i``'s range to cover ``lo``..``hi``; None for either: the range of some
        values is not known, so the column gets no min/max at all (never a range that excludes
        a value)."""
        if lo is None or hi is None:
            self.unknown[i] = True
            return
        if self.mins[i] is None or lo < self.mins[i]:
            self.mins[i] = lo
        if self.maxs[i] is None or hi > self.maxs[i]:
            self.maxs[i] = hi

    def result(self) -> SimpleStats:
        if not self.types:
            return SimpleStats.EMPTY
        mins: list[object] = []
        maxs: list[object] = []
        for i, dtype in enumerate(self.types):
            lo, hi = (None, None) if self.unknown[i] else (self.mins[i], self.maxs[i])
            if isinstance(dtype, (CharType, VarCharType, BinaryType, VarBinaryType)) and lo is not None:
                lo = _truncate_min(lo, self.truncate)
                hi = _truncate_max(hi, self.truncate)
                if hi is None:
                    lo = None
            mins.append(lo)
            maxs.append(hi)
        encoder = row_encoder(self.types)
        return SimpleStats(encoder.serialize(mins), encoder.serialize(maxs), tuple(self.nulls))


def _float_range(col: pa.Array | pa.ChunkedArray) -> tuple[float, float] | None:
    """(min, max) of a float column with values, or None when it holds a NaN.

    Without nulls, numpy's vectorised min and max find both (a NaN anywhere makes them NaN) in
    a fraction of the time of Arrow's NaN check plus min_max, whose float path is branchy. A zero
    bound is written as Parquet's statistics write it (parquet-mr, PARQUET-1222, which Paimon Java
    reads its stats from): a zero min as -0.0 and a zero max as +0.0, so the bytes do not depend on
    which signed zero a kernel happens to meet first in which chunk."""
    found: tuple[Any, Any] | None = None
    if col.null_count == 0:
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        lo = hi = None
        for chunk in chunks:
            if not len(chunk):
                continue
            values = chunk.to_numpy(zero_copy_only=True)
            c_lo, c_hi = values.min(), values.max()
            if np.isnan(c_lo) or np.isnan(c_hi):
                return None
            lo = c_lo if lo is None else min(lo, c_lo)
            hi = c_hi if hi is None else max(hi, c_hi)
        if lo is not None and hi is not None:
            found = (float(lo), float(hi))
    if found is None:
        if pc.any(pc.is_nan(col)).as_py():
            return None
        mm = pc.min_max(col)
        found = (mm["min"].as_py(), mm["max"].as_py())
    lo, hi = found
    return (-0.0 if lo == 0 else lo), (0.0 if hi == 0 else hi)
