"""Vectorized BinaryRow encoding (docs/format.md §5): every row of a set of Arrow columns at once,
with numpy, byte for byte what `lake_assets.spec.binary_row.encode_row` gives one row at a time.

Bucket hashing and dynamic-bucket key hashing encode a whole batch's keys through `encode_rows`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import SchemaError, UnsupportedFeatureError
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.binary_row_layout import (
    BINARY_TYPES,
    DECIMAL_AREA,
    INLINE_FLAG,
    MASK64,
    MAX_INLINE,
    NESTED_TYPES,
    STRING_TYPES,
    TIMESTAMP_AREA,
    TIMESTAMP_TYPES,
    header_size,
)
from lake_assets.spec.data_types import (
    MAX_COMPACT_DECIMAL_PRECISION,
    MAX_COMPACT_TIMESTAMP_PRECISION,
    BigIntType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    SmallIntType,
    TimeType,
    TinyIntType,
)

_WORD = np.dtype("<u8")
# _LOW_BYTES[n] keeps the n lowest bytes of a little-endian word.
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [MASK64], dtype=np.uint64)


def _unaligned_words(buf: np.ndarray) -> np.ndarray:
    """View of every 8-byte little-endian word starting at each byte of ``buf`` (which is 8-byte padded)."""
    count = max(len(buf) - 7, 0)
    return np.ndarray(shape=(count,), dtype=_WORD, buffer=buf, offset=0, strides=(1,))


class _Column:
    """One prepared column: fixed slots, plus optional variable-part bytes written after layout."""

    def __init__(self, nulls: np.ndarray | None) -> None:
        self.nulls = nulls

    def var_sizes(self) -> np.ndarray | int:
        return 0

    def slots(self, rel_off: np.ndarray | int) -> np.ndarray:
        raise NotImplementedError

    def write_var(self, words: np.ndarray, abs_off: np.ndarray) -> None:
        """Write the variable bytes; ``abs_off`` is each row's byte position of this column's area."""


class _FixedColumn(_Column):
    def __init__(self, nulls: np.ndarray | None, slots: np.ndarray) -> None:
        super().__init__(nulls)
        if nulls is not None:
            slots[nulls] = 0
        self._slots = slots

    def slots(self, rel_off: np.ndarray | int) -> np.ndarray:
        return self._slots


class _TimestampColumn(_Column):
    """TIMESTAMP p > 3: 8 var bytes of millis (reserved for nulls too); slot = off << 32 | nanos."""

    def __init__(self, nulls: np.ndarray | None, millis: np.ndarray, nanos: np.ndarray) -> None:
        super().__init__(nulls)
        if nulls is not None:
            millis[nulls] = 0
            nanos[nulls] = 0
        self._millis = millis
        self._nanos = nanos.astype(np.uint64)

    def var_sizes(self) -> int:
        return TIMESTAMP_AREA

    def slots(self, rel_off: np.ndarray | int) -> np.ndarray:
        return (np.asarray(rel_off, dtype=np.uint64) << np.uint64(32)) | self._nanos

    def write_var(self, words: np.ndarray, abs_off: np.ndarray) -> None:
        words[abs_off // 8] = self._millis.view(np.uint64)


class _DecimalColumn(_Column):
    """DECIMAL p > 18: 16 reserved var bytes with the minimal big-endian value first."""

    def __init__(self, nulls: np.ndarray | None, little_endian: np.ndarray) -> None:
        super().__init__(nulls)
        n = little_endian.shape[0]
        be = little_endian[:, ::-1]
        negative = be[:, 0] >= 0x80
        # For negatives Java measures ~x, so strip redundant 0xFF bytes exactly like redundant 0x00 ones.
        magnitude = be ^ np.where(negative, 0xFF, 0).astype(np.uint8)[:, None]
        nonzero = magnitude != 0
        first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), DECIMAL_AREA)
        lead = magnitude[np.arange(n), np.minimum(first, DECIMAL_AREA - 1)]
        # A sign bit is needed on top of the magnitude when its top byte uses bit 7.
        length = np.where(first == DECIMAL_AREA, 1, DECIMAL_AREA - first + (lead >= 0x80))
        if nulls is not None:
            length[nulls] = 0
        col = np.arange(DECIMAL_AREA)[None, :]
        src = np.minimum(DECIMAL_AREA - length[:, None] + col, DECIMAL_AREA - 1)
        packed = np.take_along_axis(be, src, axis=1)
        packed[col >= length[:, None]] = 0
        self._length = length.astype(np.uint64)
        self._packed = np.ascontiguousarray(packed).view(_WORD)  # (n, 2) words in memory order

    def var_sizes(self) -> int:
        return DECIMAL_AREA

    def slots(self, rel_off: np.ndarray | int) -> np.ndarray:
        return (np.asarray(rel_off, dtype=np.uint64) << np.uint64(32)) | self._length

    def write_var(self, words: np.ndarray, abs_off: np.ndarray) -> None:
        at = abs_off // 8
        words[at] = self._packed[:, 0]
        words[at + 1] = self._packed[:, 1]


class _BytesColumn(_Column):
    """Strings and binaries: inline up to 7 bytes, else padded var bytes (§5.2)."""

    def __init__(
        self, nulls: np.ndarray | None, starts: np.ndarray, lengths: np.ndarray, buf: np.ndarray
    ) -> None:
        super().__init__(nulls)
        if nulls is not None:
            lengths = np.where(nulls, 0, lengths)
        self._starts = starts
        self._lengths = lengths
        self._long = lengths > MAX_INLINE
        self._any_long = bool(self._long.any())
        self._src = _unaligned_words(np.concatenate([buf, np.zeros(8, dtype=np.uint8)]))
        lens_u = lengths.astype(np.uint64)
        short_len = np.minimum(lens_u, MAX_INLINE)
        inline = self._src[starts] & _LOW_BYTES[short_len]
        inline |= (np.uint64(INLINE_FLAG) | short_len) << np.uint64(56)
        if nulls is not None:
            inline[nulls] = 0
        self._inline: np.ndarray = inline

    def var_sizes(self) -> np.ndarray | int:
        if not self._any_long:
            return 0
        sizes: np.ndarray = np.where(self._long, (self._lengths + 7) & ~7, 0)
        return sizes

    def slots(self, rel_off: np.ndarray | int) -> np.ndarray:
        if not self._any_long:
            return self._inline
        far = (np.asarray(rel_off, dtype=np.uint64) << np.uint64(32)) | self._lengths.astype(np.uint64)
        out: np.ndarray = np.where(self._long, far, self._inline)
        return out

    def write_var(self, words: np.ndarray, abs_off: np.ndarray) -> None:
        if not self._any_long:
            return
        sel = np.flatnonzero(self._long)
        lengths = self._lengths[sel]
        src_start = self._starts[sel]
        dst_word = np.broadcast_to(abs_off, self._long.shape)[sel] // 8
        counts = (lengths + 7) // 8
        ends = np.cumsum(counts)
        before = ends - counts
        step = np.arange(int(ends[-1]), dtype=np.int64)
        # Word j of a value comes from the (unaligned) 8 bytes at src_start + 8j.
        src_pos = np.repeat(src_start - 8 * before, counts) + 8 * step
        values = self._src[src_pos]
        values[ends - 1] &= _LOW_BYTES[lengths - 8 * (counts - 1)]
        words[np.repeat(dst_word - before, counts) + step] = values


def _to_array(col: Any, t: DataType) -> pa.Array:
    if not isinstance(col, pa.Array | pa.ChunkedArray):
        return pa.array(col, type=to_arrow(t))
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return col


def _cast(arr: pa.Array, target: pa.DataType, i: int, t: DataType) -> pa.Array:
    if arr.type == target:
        return arr
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaError(f"Column {i} ({t}): cannot use Arrow {arr.type} values: {e}") from None


def _null_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    mask: np.ndarray = arr.is_null().to_numpy(zero_copy_only=False)
    return mask


def _filled(arr: pa.Array, storage: pa.DataType) -> np.ndarray:
    """Values as numpy, nulls replaced by zero, read through a same-width storage type."""
    view = arr.view(storage)
    if view.null_count:
        view = pc.fill_null(view, pa.scalar(0, storage))
    values: np.ndarray = view.to_numpy(zero_copy_only=False)
    return values


_FIXED_STORAGE: dict[type[DataType], tuple[pa.DataType, type[np.unsignedinteger]]] = {
    TinyIntType: (pa.int8(), np.uint8),
    SmallIntType: (pa.int16(), np.uint16),
    IntType: (pa.int32(), np.uint32),
    BigIntType: (pa.int64(), np.uint64),
    FloatType: (pa.int32(), np.uint32),
    DoubleType: (pa.int64(), np.uint64),
    DateType: (pa.int32(), np.uint32),
}

_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_TIME_TO_MILLIS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


def _prepare(col: Any, t: DataType, i: int) -> _Column:
    arr = _to_array(col, t)
    target = to_arrow(t)
    if isinstance(t, BooleanType):
        arr = _cast(arr, target, i, t)
        values = arr.fill_null(False).to_numpy(zero_copy_only=False)
        return _FixedColumn(_null_mask(arr), values.astype(np.uint64))
    fixed = _FIXED_STORAGE.get(type(t))
    if fixed is not None:
        storage, unsigned = fixed
        arr = _cast(arr, target, i, t)
        # Reinterpreting as unsigned of the same width keeps the upper slot bytes zero (§5.2).
        values = _filled(arr, storage).view(unsigned).astype(np.uint64)
        return _FixedColumn(_null_mask(arr), values)
    if isinstance(t, TimeType):
        if not pa.types.is_time(arr.type):
            arr = _cast(arr, target, i, t)
        storage = pa.int32() if pa.types.is_time32(arr.type) else pa.int64()
        raw = _filled(arr, storage).astype(np.int64)
        # Paimon keeps millis of day whatever the declared precision.
        mul, div = _TIME_TO_MILLIS[arr.type.unit]
        millis = raw * mul // div
        return _FixedColumn(_null_mask(arr), millis.astype(np.uint32).astype(np.uint64))
    if isinstance(t, TIMESTAMP_TYPES):
        if not pa.types.is_timestamp(arr.type):
            arr = _cast(arr, target, i, t)
        raw = _filled(arr, pa.int64())
        unit = _UNIT_NANOS[arr.type.unit]
        if unit >= 1_000_000:
            millis, nanos = raw * (unit // 1_000_000), np.zeros(len(raw), dtype=np.int64)
        else:
            per_milli = 1_000_000 // unit
            millis, rest = np.divmod(raw, per_milli)
            nanos = rest * unit
        nulls = _null_mask(arr)
        if t.precision <= MAX_COMPACT_TIMESTAMP_PRECISION:
            return _FixedColumn(nulls, millis.view(np.uint64))
        return _TimestampColumn(nulls, millis, nanos)
    if isinstance(t, DecimalType):
        arr = _cast(arr, target, i, t)
        nulls = _null_mask(arr)
        data_buf = arr.buffers()[1]
        le = np.frombuffer(data_buf, dtype=np.uint8, count=(arr.offset + len(arr)) * 16)
        le = le.reshape(-1, 16)[arr.offset :]
        if t.precision <= MAX_COMPACT_DECIMAL_PRECISION:
            # Values below 10^18 fit in the low 8 bytes of the 128-bit two's complement.
            return _FixedColumn(nulls, np.ascontiguousarray(le[:, :8]).view(_WORD).ravel().copy())
        return _DecimalColumn(nulls, le)
    if isinstance(t, STRING_TYPES + BINARY_TYPES):
        typ = arr.type
        if pa.types.is_string_view(typ) or pa.types.is_binary_view(typ):
            arr = arr.cast(pa.large_string() if pa.types.is_string_view(typ) else pa.large_binary())
        elif not (
            pa.types.is_string(typ)
            or pa.types.is_large_string(typ)
            or pa.types.is_binary(typ)
            or pa.types.is_large_binary(typ)
        ):
            # Casting numbers or dates to text would silently change the key bytes; refuse instead.
            raise SchemaError(f"Column {i} ({t}): expected Arrow strings or binaries, got {typ}")
        wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
        _, off_buf, val_buf = arr.buffers()
        n = len(arr)
        offsets = np.frombuffer(off_buf, dtype=np.int64 if wide else np.int32, count=arr.offset + n + 1)
        offsets = offsets[arr.offset :].astype(np.int64)
        buf = np.frombuffer(val_buf, dtype=np.uint8) if val_buf is not None else np.zeros(0, np.uint8)
        return _BytesColumn(_null_mask(arr), offsets[:-1], np.diff(offsets), buf)
    if isinstance(t, NESTED_TYPES):
        raise UnsupportedFeatureError(f"Column {i} ({t}): nested values in BinaryRow are not supported")
    raise SchemaError(f"Column {i}: unknown type {t!r}")


def encode_rows(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
    num_rows: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """BinaryRow bytes of every row at once: (uint8 data, int64 offsets of length n + 1).

    Row r is ``data[offsets[r]:offsets[r + 1]]``, identical to ``encode_row`` of that row. All types
    that ``encode_row`` supports are vectorized, DECIMAL p > 18 included; there is no per-row fallback.
    ``num_rows`` is only needed for arity 0, where there is no column to count.
    """
    if len(columns) != len(types):
        raise SchemaError(f"Got {len(columns)} columns for {len(types)} types")
    lengths = {len(c) for c in columns}
    if len(lengths) > 1:
        raise SchemaError(f"Columns have different lengths: {sorted(lengths)}")
    prepared = [_prepare(c, t, i) for i, (c, t) in enumerate(zip(columns, types, strict=True))]
    n = lengths.pop() if lengths else (num_rows or 0)
    arity = len(types)
    w = header_size(arity)
    fixed = w + 8 * arity

    var_sizes = [c.var_sizes() for c in prepared]
    total_var = sum(var_sizes, start=np.int64(0))
    uniform = np.ndim(total_var) == 0
    row_len = np.broadcast_to(np.asarray(fixed + total_var, dtype=np.int64), (n,))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_len, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), dtype=np.uint8)
    words = data.view(_WORD)
    if n == 0:
        return data, offsets

    if uniform:
        # Equal row lengths: a 2-D view writes whole slot columns without index arithmetic.
        grid = words.reshape(n, (fixed + int(total_var)) // 8)

        def put(word: int, values: np.ndarray) -> None:
            grid[:, word] = values
    else:
        row_word = offsets[:-1] // 8

        def put(word: int, values: np.ndarray) -> None:
            words[row_word + word] = values

    headers = [np.zeros(n, dtype=np.uint64) for _ in range(w // 8)]
    for i, c in enumerate(prepared):
        if c.nulls is not None:
            bit = i + 8
            headers[bit // 64] |= c.nulls.astype(np.uint64) << np.uint64(bit % 64)
    for h, header in enumerate(headers):
        if header.any():
            put(h, header)

    rel_off: np.ndarray | int = fixed
    for i, c in enumerate(prepared):
        put(w // 8 + i, c.slots(rel_off))
        size = var_sizes[i]
        if np.ndim(size) or size:
            c.write_var(words, offsets[:-1] + rel_off)
            rel_off = rel_off + size
    return data, offsets
