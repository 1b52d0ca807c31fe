"""The row-at-a-time BinaryRow encoder as it was before the precompiled encoders (lake_assets at
7e01e3f, `spec/binary_row.py`), kept verbatim as the reference the new encoder's bytes and errors
are compared with (`test_binary_row_encoder.py`)."""

from __future__ import annotations

import datetime as dt
import operator
import struct
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Context, Decimal, localcontext

import numpy as np

from lake_assets.errors import InvalidDataError, SchemaError, UnsupportedFeatureError
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

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_ORDINAL = _EPOCH_DATE.toordinal()
_DECIMAL_CONTEXT = Context(prec=100)

_INT_RANGES: dict[type[DataType], tuple[int, int, int]] = {
    TinyIntType: (8, -(2**7), 2**7 - 1),
    SmallIntType: (16, -(2**15), 2**15 - 1),
    IntType: (32, -(2**31), 2**31 - 1),
    BigIntType: (64, -(2**63), 2**63 - 1),
}


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def _null_area(t: DataType) -> int:
    """Variable bytes Java's codegen writers reserve even for a null value of this type."""
    if isinstance(t, DecimalType) and t.precision > MAX_COMPACT_DECIMAL_PRECISION:
        return DECIMAL_AREA
    if isinstance(t, TIMESTAMP_TYPES) and t.precision > MAX_COMPACT_TIMESTAMP_PRECISION:
        return TIMESTAMP_AREA
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
            return unscaled & MASK64, b""
        raw = _java_bigint_bytes(unscaled)
        return (var_off << 32) | len(raw), raw.ljust(DECIMAL_AREA, b"\0")
    if isinstance(t, TIMESTAMP_TYPES):
        if not isinstance(v, dt.datetime):
            raise _bad(i, t, v, "expected datetime.datetime")
        millis, micros_of_milli = divmod(_epoch_micros(v), 1000)
        if t.precision <= MAX_COMPACT_TIMESTAMP_PRECISION:
            return millis & MASK64, b""
        return (var_off << 32) | (micros_of_milli * 1000), struct.pack("<q", millis)
    if isinstance(t, STRING_TYPES):
        if not isinstance(v, str):
            raise _bad(i, t, v, "expected str")
        try:
            raw = v.encode("utf-8")
        except UnicodeEncodeError:
            raise _bad(i, t, v, "not encodable as UTF-8") from None
        return _bytes_slot(raw, var_off)
    if isinstance(t, BINARY_TYPES):
        if not isinstance(v, bytes | bytearray | memoryview):
            raise _bad(i, t, v, "expected bytes")
        return _bytes_slot(bytes(v), var_off)
    if isinstance(t, NESTED_TYPES):
        raise UnsupportedFeatureError(f"Field {i} ({t}): nested values in BinaryRow are not supported")
    raise SchemaError(f"Field {i}: unknown type {t!r}")


def _bytes_slot(raw: bytes, var_off: int) -> tuple[int, bytes]:
    n = len(raw)
    if n <= MAX_INLINE:
        return int.from_bytes(raw, "little") | ((INLINE_FLAG | n) << 56), b""
    return (var_off << 32) | n, raw.ljust(_pad8(n), b"\0")


def reference_encode_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
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


def reference_serialize_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """BinaryRow with the 4-byte big-endian arity prefix, as stored in manifests."""
    return struct.pack(">i", len(types)) + reference_encode_row(values, types)
