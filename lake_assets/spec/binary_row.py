"""BinaryRow codec (docs/format.md §5): partitions, min/max keys, stats rows and bucket-hash input.

Layout: ``[header + null bits][8-byte slot per field][variable part]``, little-endian, 8-byte aligned.
Null high-precision values (DECIMAL p > 18, TIMESTAMP p > 3) use Java's codegen form (§5.4 item 1): the
variable area is still reserved and the slot points at it, so partitions and bucket keys hash like Java's.
"""

from __future__ import annotations

import datetime as dt
import operator
import struct
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Context, Decimal, localcontext
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import CorruptMetadataError, InvalidDataError, SchemaError, UnsupportedFeatureError
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import (
    MAX_COMPACT_DECIMAL_PRECISION,
    MAX_COMPACT_TIMESTAMP_PRECISION,
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_ORDINAL = _EPOCH_DATE.toordinal()
_MILLIS_PER_DAY = 86_400_000
_MAX_INLINE = 7
_INLINE_FLAG = 0x80
_MASK64 = (1 << 64) - 1
_DECIMAL_AREA = 16  # bytes always reserved for a non-compact decimal
_TIMESTAMP_AREA = 8  # bytes holding epoch millis of a non-compact timestamp
# Enough digits for any DECIMAL(38, s) arithmetic without the default 28-digit context rounding.
_DECIMAL_CONTEXT = Context(prec=100)

_INT_RANGES: dict[type[DataType], tuple[int, int, int]] = {
    TinyIntType: (8, -(2**7), 2**7 - 1),
    SmallIntType: (16, -(2**15), 2**15 - 1),
    IntType: (32, -(2**31), 2**31 - 1),
    BigIntType: (64, -(2**63), 2**63 - 1),
}

_STRING_TYPES = (CharType, VarCharType)
_BINARY_TYPES = (BinaryType, VarBinaryType)
_NESTED_TYPES = (ArrayType, MapType, MultisetType, RowType)
_TIMESTAMP_TYPES = (TimestampType, LocalZonedTimestampType)


def header_size(arity: int) -> int:
    """Bytes of header + null bitset for a row of ``arity`` fields (8 for arity 0..56)."""
    return ((arity + 63 + 8) // 64) * 8


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def _null_area(t: DataType) -> int:
    """Variable bytes Java's codegen writers reserve even for a null value of this type."""
    if isinstance(t, DecimalType) and t.precision > MAX_COMPACT_DECIMAL_PRECISION:
        return _DECIMAL_AREA
    if isinstance(t, _TIMESTAMP_TYPES) and t.precision > MAX_COMPACT_TIMESTAMP_PRECISION:
        return _TIMESTAMP_AREA
    return 0


def _bad(i: int, t: DataType, v: object, why: str) -> InvalidDataError:
    return InvalidDataError(f"Field {i} ({t}): cannot store {v!r}: {why}")


def _epoch_micros(v: dt.datetime) -> int:
    # Aware values are instants; naive values are wall clocks read as if UTC (§5.2).
    delta = v - (_EPOCH_UTC if v.utcoffset() is not None else _EPOCH_NAIVE)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _unscaled(i: int, t: DecimalType, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, Decimal | int):
        raise _bad(i, t, v, "expected decimal.Decimal or int")
    d = Decimal(v)
    if not d.is_finite():
        raise _bad(i, t, v, "not a finite number")
    with localcontext(_DECIMAL_CONTEXT):
        # Java rounds HALF_UP when a value has more fraction digits than the scale.
        q = d.quantize(Decimal(1).scaleb(-t.scale), rounding=ROUND_HALF_UP)
        unscaled = int(q.scaleb(t.scale))
    if abs(unscaled) >= 10**t.precision:
        raise _bad(i, t, v, f"does not fit precision {t.precision}")
    return unscaled


def _java_bigint_bytes(x: int) -> bytes:
    # Java BigInteger.toByteArray: bitLength() // 8 + 1 bytes; for negatives bitLength is that of ~x,
    # which gives one byte less than a naive (bit_length + 8) // 8 at negative powers of two (§5.4 item 2).
    bits = x.bit_length() if x >= 0 else (~x).bit_length()
    return x.to_bytes(bits // 8 + 1, "big", signed=True)


def _encode_value(i: int, t: DataType, v: object, var_off: int) -> tuple[int, bytes]:
    """Slot value (unsigned 64-bit) and padded variable bytes of one non-null value."""
    if isinstance(t, BooleanType):
        if not isinstance(v, bool | np.bool_):
            raise _bad(i, t, v, "expected bool")
        return int(bool(v)), b""
    rng = _INT_RANGES.get(type(t))
    if rng is not None:
        bits, lo, hi = rng
        if isinstance(v, bool):
            raise _bad(i, t, v, "expected int")
        try:
            iv = operator.index(v)  # type: ignore[arg-type]  # a non-integer raises TypeError, handled below
        except TypeError:
            raise _bad(i, t, v, "expected int") from None
        if not lo <= iv <= hi:
            raise _bad(i, t, v, "out of range")
        return iv & ((1 << bits) - 1), b""
    if isinstance(t, FloatType | DoubleType):
        if isinstance(v, bool) or not isinstance(v, float | int | np.floating | np.integer):
            raise _bad(i, t, v, "expected float")
        try:
            if isinstance(t, FloatType):
                return struct.unpack("<I", struct.pack("<f", float(v)))[0], b""
            return struct.unpack("<Q", struct.pack("<d", float(v)))[0], b""
        except OverflowError:
            raise _bad(i, t, v, "out of range") from None
    if isinstance(t, DateType):
        # datetime is a date subclass; refusing it avoids silently dropping the time of day.
        if isinstance(v, dt.datetime) or not isinstance(v, dt.date):
            raise _bad(i, t, v, "expected datetime.date")
        return (v.toordinal() - _EPOCH_ORDINAL) & 0xFFFFFFFF, b""
    if isinstance(t, TimeType):
        if not isinstance(v, dt.time):
            raise _bad(i, t, v, "expected datetime.time")
        millis = ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
        return millis, b""
    if isinstance(t, DecimalType):
        unscaled = _unscaled(i, t, v)
        if t.precision <= MAX_COMPACT_DECIMAL_PRECISION:
            return unscaled & _MASK64, b""
        raw = _java_bigint_bytes(unscaled)
        return (var_off << 32) | len(raw), raw.ljust(_DECIMAL_AREA, b"\0")
    if isinstance(t, _TIMESTAMP_TYPES):
        if not isinstance(v, dt.datetime):
            raise _bad(i, t, v, "expected datetime.datetime")
        millis, micros_of_milli = divmod(_epoch_micros(v), 1000)
        if t.precision <= MAX_COMPACT_TIMESTAMP_PRECISION:
            return millis & _MASK64, b""
        return (var_off << 32) | (micros_of_milli * 1000), struct.pack("<q", millis)
    if isinstance(t, _STRING_TYPES):
        if not isinstance(v, str):
            raise _bad(i, t, v, "expected str")
        try:
            raw = v.encode("utf-8")
        except UnicodeEncodeError:
            raise _bad(i, t, v, "not encodable as UTF-8") from None
        return _bytes_slot(raw, var_off)
    if isinstance(t, _BINARY_TYPES):
        if not isinstance(v, bytes | bytearray | memoryview):
            raise _bad(i, t, v, "expected bytes")
        return _bytes_slot(bytes(v), var_off)
    if isinstance(t, _NESTED_TYPES):
        raise UnsupportedFeatureError(f"Field {i} ({t}): nested values in BinaryRow are not supported")
    raise SchemaError(f"Field {i}: unknown type {t!r}")


def _bytes_slot(raw: bytes, var_off: int) -> tuple[int, bytes]:
    n = len(raw)
    if n <= _MAX_INLINE:
        return int.from_bytes(raw, "little") | ((_INLINE_FLAG | n) << 56), b""
    return (var_off << 32) | n, raw.ljust(_pad8(n), b"\0")


def encode_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """Encode one row as BinaryRow bytes (RowKind +I, no arity prefix).

    Naive datetimes are wall clocks read as if UTC, aware ones are converted to UTC (for both TIMESTAMP
    and TIMESTAMP_LTZ). Nullability is not enforced here; writers reject null keys themselves.
    """
    if len(values) != len(types):
        raise InvalidDataError(f"Row has {len(values)} values but {len(types)} types")
    arity = len(types)
    w = header_size(arity)
    buf = bytearray(w + 8 * arity)
    for i, (v, t) in enumerate(zip(values, types, strict=True)):
        slot_pos = w + 8 * i
        if v is None:
            buf[(i + 8) // 8] |= 1 << ((i + 8) % 8)
            area = _null_area(t)
            if area:
                struct.pack_into("<Q", buf, slot_pos, len(buf) << 32)
                buf.extend(bytes(area))
            continue
        slot, var = _encode_value(i, t, v, len(buf))
        struct.pack_into("<Q", buf, slot_pos, slot)
        buf.extend(var)
    return bytes(buf)


def serialize_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """BinaryRow with the 4-byte big-endian arity prefix, as stored in manifests."""
    return struct.pack(">i", len(types)) + encode_row(values, types)


EMPTY_ROW: bytes = serialize_row([], [])
"""The serialized arity-0 row (12 zero bytes) used for absent partitions, keys and stats."""


# ---------------------------------------------------------------------------------------------------------
# Decoding


def _corrupt(i: int, t: DataType, why: str) -> CorruptMetadataError:
    return CorruptMetadataError(f"BinaryRow field {i} ({t}): {why}")


def _var_bytes(data: bytes, i: int, t: DataType, slot: int, slot_pos: int) -> bytes:
    if slot >> 63:
        n = (slot >> 56) & 0x7F
        if n > _MAX_INLINE:
            raise _corrupt(i, t, f"inline length {n} > 7")
        return data[slot_pos : slot_pos + n]
    off, n = slot >> 32, slot & 0xFFFFFFFF
    if off + n > len(data):
        raise _corrupt(i, t, f"variable part [{off}, {off + n}) beyond row end {len(data)}")
    return data[off : off + n]


def _decode_value(data: bytes, i: int, t: DataType, slot_pos: int) -> object:
    slot = int.from_bytes(data[slot_pos : slot_pos + 8], "little")
    if isinstance(t, BooleanType):
        return data[slot_pos] != 0
    rng = _INT_RANGES.get(type(t))
    if rng is not None:
        nbytes = rng[0] // 8
        return int.from_bytes(data[slot_pos : slot_pos + nbytes], "little", signed=True)
    if isinstance(t, FloatType):
        return struct.unpack_from("<f", data, slot_pos)[0]
    if isinstance(t, DoubleType):
        return struct.unpack_from("<d", data, slot_pos)[0]
    if isinstance(t, DateType):
        days = struct.unpack_from("<i", data, slot_pos)[0]
        try:
            return dt.date.fromordinal(_EPOCH_ORDINAL + days)
        except (ValueError, OverflowError):
            raise _corrupt(i, t, f"day {days} outside the supported date range") from None
    if isinstance(t, TimeType):
        millis = struct.unpack_from("<i", data, slot_pos)[0]
        if not 0 <= millis < _MILLIS_PER_DAY:
            raise _corrupt(i, t, f"millis of day {millis} out of range")
        secs, ms = divmod(millis, 1000)
        return dt.time(secs // 3600, secs // 60 % 60, secs % 60, ms * 1000)
    if isinstance(t, DecimalType):
        if t.precision <= MAX_COMPACT_DECIMAL_PRECISION:
            unscaled = struct.unpack_from("<q", data, slot_pos)[0]
        else:
            raw = _var_bytes(data, i, t, slot, slot_pos)
            if not 1 <= len(raw) <= _DECIMAL_AREA:
                raise _corrupt(i, t, f"decimal byte length {len(raw)} not in 1..16")
            unscaled = int.from_bytes(raw, "big", signed=True)
        # The string constructor is exact, unlike arithmetic under the default 28-digit context.
        return Decimal(f"{unscaled}E-{t.scale}")
    if isinstance(t, _TIMESTAMP_TYPES):
        if t.precision <= MAX_COMPACT_TIMESTAMP_PRECISION:
            millis, nanos = struct.unpack_from("<q", data, slot_pos)[0], 0
        else:
            off, nanos = slot >> 32, slot & 0xFFFFFFFF
            if off + 8 > len(data) or nanos >= 1_000_000:
                raise _corrupt(i, t, f"bad timestamp slot {slot:#x}")
            millis = struct.unpack_from("<q", data, off)[0]
        epoch = _EPOCH_UTC if isinstance(t, LocalZonedTimestampType) else _EPOCH_NAIVE
        try:
            # Python datetimes stop at microseconds; sub-microsecond nanos are dropped.
            return epoch + dt.timedelta(milliseconds=millis, microseconds=nanos // 1000)
        except OverflowError:
            raise _corrupt(i, t, f"epoch millis {millis} outside Python's datetime range") from None
    if isinstance(t, _STRING_TYPES):
        raw = _var_bytes(data, i, t, slot, slot_pos)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _corrupt(i, t, "invalid UTF-8") from None
    if isinstance(t, _BINARY_TYPES):
        return _var_bytes(data, i, t, slot, slot_pos)
    if isinstance(t, _NESTED_TYPES):
        raise UnsupportedFeatureError(f"Field {i} ({t}): nested values in BinaryRow are not supported")
    raise SchemaError(f"Field {i}: unknown type {t!r}")


def decode_row(data: bytes, types: Sequence[DataType]) -> list[object]:
    """Decode BinaryRow bytes (no arity prefix) into Python values; CorruptMetadataError when malformed."""
    data = bytes(data)
    arity = len(types)
    w = header_size(arity)
    if len(data) < w + 8 * arity:
        raise CorruptMetadataError(f"BinaryRow of {len(data)} bytes is too short for {arity} fields")
    out: list[object] = []
    for i, t in enumerate(types):
        if data[(i + 8) // 8] & (1 << ((i + 8) % 8)):
            out.append(None)
        else:
            out.append(_decode_value(data, i, t, w + 8 * i))
    return out


def deserialize_row(data: bytes, types: Sequence[DataType]) -> list[object]:
    """Decode a manifest-style BinaryRow (4-byte big-endian arity prefix) after checking the arity."""
    if len(data) < 4:
        raise CorruptMetadataError(f"Serialized BinaryRow of {len(data)} bytes lacks its arity prefix")
    arity = struct.unpack_from(">i", data)[0]
    if arity != len(types):
        raise CorruptMetadataError(f"Serialized BinaryRow has arity {arity}, expected {len(types)}")
    return decode_row(data[4:], types)


# ---------------------------------------------------------------------------------------------------------
# Vectorized encoding

_WORD = np.dtype("<u8")
# _LOW_BYTES[n] keeps the n lowest bytes of a little-endian word.
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [_MASK64], dtype=np.uint64)


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
        return _TIMESTAMP_AREA

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
        first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), _DECIMAL_AREA)
        lead = magnitude[np.arange(n), np.minimum(first, _DECIMAL_AREA - 1)]
        # A sign bit is needed on top of the magnitude when its top byte uses bit 7.
        length = np.where(first == _DECIMAL_AREA, 1, _DECIMAL_AREA - first + (lead >= 0x80))
        if nulls is not None:
            length[nulls] = 0
        col = np.arange(_DECIMAL_AREA)[None, :]
        src = np.minimum(_DECIMAL_AREA - length[:, None] + col, _DECIMAL_AREA - 1)
        packed = np.take_along_axis(be, src, axis=1)
        packed[col >= length[:, None]] = 0
        self._length = length.astype(np.uint64)
        self._packed = np.ascontiguousarray(packed).view(_WORD)  # (n, 2) words in memory order

    def var_sizes(self) -> int:
        return _DECIMAL_AREA

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
        self._long = lengths > _MAX_INLINE
        self._any_long = bool(self._long.any())
        self._src = _unaligned_words(np.concatenate([buf, np.zeros(8, dtype=np.uint8)]))
        lens_u = lengths.astype(np.uint64)
        short_len = np.minimum(lens_u, _MAX_INLINE)
        inline = self._src[starts] & _LOW_BYTES[short_len]
        inline |= (np.uint64(_INLINE_FLAG) | short_len) << np.uint64(56)
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
    if isinstance(t, _TIMESTAMP_TYPES):
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
    if isinstance(t, _STRING_TYPES + _BINARY_TYPES):
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
    if isinstance(t, _NESTED_TYPES):
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
