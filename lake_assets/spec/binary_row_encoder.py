"""Precompiled row-at-a-time BinaryRow encoders (docs/format.md §5): one per row type.

A `RowEncoder` is built once for a list of types: each field gets a value encoder chosen by its
type when the encoder is built (not by isinstance chains per value), the header size and the
struct packing all slots are computed once. Writers encode a handful of rows per data file (min
and max keys, stats rows) and per partition; `row_encoder` caches the encoders by row type so
those rows cost the values' work only. The bytes are those of the layout in
`lake_assets.spec.binary_row_layout`; `tests/unit/test_binary_row_encoder.py` compares them with
the former type-dispatching encoder on every type.
"""

from __future__ import annotations

import datetime as dt
import operator
import struct
from collections.abc import Callable, Sequence
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

__all__ = ["RowEncoder", "ValueEncoder", "row_encoder"]

# (value, offset of the variable part so far) -> (slot as unsigned 64-bit, padded variable bytes)
ValueEncoder = Callable[[object, int], tuple[int, bytes]]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_ORDINAL = _EPOCH_DATE.toordinal()
# Enough digits for any DECIMAL(38, s) arithmetic without the default 28-digit context rounding.
_DECIMAL_CONTEXT = Context(prec=100)
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")

_INT_RANGES: dict[type[DataType], tuple[int, int, int]] = {
    TinyIntType: (8, -(2**7), 2**7 - 1),
    SmallIntType: (16, -(2**15), 2**15 - 1),
    IntType: (32, -(2**31), 2**31 - 1),
    BigIntType: (64, -(2**63), 2**63 - 1),
}


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def null_area(t: DataType) -> int:
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


def _bytes_slot(raw: bytes, var_off: int) -> tuple[int, bytes]:
    n = len(raw)
    if n <= MAX_INLINE:
        return int.from_bytes(raw, "little") | ((INLINE_FLAG | n) << 56), b""
    return (var_off << 32) | n, raw.ljust(_pad8(n), b"\0")


# ------------------------------------------------------------------------- one value encoder per type
def _boolean(i: int, t: DataType) -> ValueEncoder:
    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        if not isinstance(v, bool | np.bool_):
            raise _bad(i, t, v, "expected bool")
        return int(bool(v)), b""
    return enc


def _integer(i: int, t: DataType, bits: int, lo: int, hi: int) -> ValueEncoder:
    mask = (1 << bits) - 1

    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        if isinstance(v, bool):
            raise _bad(i, t, v, "expected int")
        try:
            iv = operator.index(v)  # type: ignore[arg-type]  # a non-integer raises TypeError, handled below
        except TypeError:
            raise _bad(i, t, v, "expected int") from None
        if not lo <= iv <= hi:
            raise _bad(i, t, v, "out of range")
        return iv & mask, b""
    return enc


def _floating(i: int, t: DataType) -> ValueEncoder:
    packer, unpacker = (_F32, _U32) if isinstance(t, FloatType) else (_F64, _U64)

    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        if isinstance(v, bool) or not isinstance(v, float | int | np.floating | np.integer):
            raise _bad(i, t, v, "expected float")
        try:
            slot: int = unpacker.unpack(packer.pack(float(v)))[0]
        except OverflowError:
            raise _bad(i, t, v, "out of range") from None
        return slot, b""
    return enc


def _date(i: int, t: DataType) -> ValueEncoder:
    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        # datetime is a date subclass; refusing it avoids silently dropping the time of day.
        if isinstance(v, dt.datetime) or not isinstance(v, dt.date):
            raise _bad(i, t, v, "expected datetime.date")
        return (v.toordinal() - _EPOCH_ORDINAL) & 0xFFFFFFFF, b""
    return enc


def _time(i: int, t: DataType) -> ValueEncoder:
    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        if not isinstance(v, dt.time):
            raise _bad(i, t, v, "expected datetime.time")
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000, b""
    return enc


def _decimal(i: int, t: DecimalType) -> ValueEncoder:
    compact = t.precision <= MAX_COMPACT_DECIMAL_PRECISION

    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        unscaled = _unscaled(i, t, v)
        if compact:
            return unscaled & MASK64, b""
        raw = _java_bigint_bytes(unscaled)
        return (var_off << 32) | len(raw), raw.ljust(DECIMAL_AREA, b"\0")
    return enc


def _timestamp(i: int, t: DataType, precision: int) -> ValueEncoder:
    compact = precision <= MAX_COMPACT_TIMESTAMP_PRECISION

    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        if not isinstance(v, dt.datetime):
            raise _bad(i, t, v, "expected datetime.datetime")
        millis, micros_of_milli = divmod(_epoch_micros(v), 1000)
        if compact:
            return millis & MASK64, b""
        return (var_off << 32) | (micros_of_milli * 1000), _I64.pack(millis)
    return enc


def _string(i: int, t: DataType) -> ValueEncoder:
    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        if not isinstance(v, str):
            raise _bad(i, t, v, "expected str")
        try:
            raw = v.encode("utf-8")
        except UnicodeEncodeError:
            raise _bad(i, t, v, "not encodable as UTF-8") from None
        return _bytes_slot(raw, var_off)
    return enc


def _binary(i: int, t: DataType) -> ValueEncoder:
    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        if not isinstance(v, bytes | bytearray | memoryview):
            raise _bad(i, t, v, "expected bytes")
        return _bytes_slot(bytes(v), var_off)
    return enc


def _refuse(error: Exception) -> ValueEncoder:
    # Types without a BinaryRow value: a null is still encodable, a value raises when met.
    def enc(v: object, var_off: int) -> tuple[int, bytes]:
        raise error
    return enc


def value_encoder(i: int, t: DataType) -> ValueEncoder:
    """The encoder of non-null values of field ``i`` of type ``t`` (errors name the field)."""
    if isinstance(t, BooleanType):
        return _boolean(i, t)
    rng = _INT_RANGES.get(type(t))
    if rng is not None:
        return _integer(i, t, *rng)
    if isinstance(t, FloatType | DoubleType):
        return _floating(i, t)
    if isinstance(t, DateType):
        return _date(i, t)
    if isinstance(t, TimeType):
        return _time(i, t)
    if isinstance(t, DecimalType):
        return _decimal(i, t)
    if isinstance(t, TIMESTAMP_TYPES):
        return _timestamp(i, t, t.precision)
    if isinstance(t, STRING_TYPES):
        return _string(i, t)
    if isinstance(t, BINARY_TYPES):
        return _binary(i, t)
    if isinstance(t, NESTED_TYPES):
        return _refuse(UnsupportedFeatureError(f"Field {i} ({t}): nested values in BinaryRow are not supported"))
    return _refuse(SchemaError(f"Field {i}: unknown type {t!r}"))


# ------------------------------------------------------------------------------------ row encoders
class RowEncoder:
    """Encodes rows of one row type (RowKind +I); build with `row_encoder`."""

    __slots__ = ("_areas", "_arity", "_fields", "_fixed", "_header", "_prefix", "_slots", "types")

    def __init__(self, types: Sequence[DataType]) -> None:
        self.types = tuple(types)
        self._arity = len(self.types)
        self._header = header_size(self._arity)
        self._fixed = self._header + 8 * self._arity  # where the variable part starts
        self._fields = tuple(value_encoder(i, t) for i, t in enumerate(self.types))
        self._areas = tuple(null_area(t) for t in self.types)
        self._slots = struct.Struct(f"<{self._arity}Q")
        self._prefix = struct.pack(">i", self._arity)

    def encode(self, values: Sequence[object]) -> bytes:
        """BinaryRow bytes of one row (no arity prefix); see `binary_row.encode_row`."""
        if len(values) != self._arity:
            raise InvalidDataError(f"Row has {len(values)} values but {self._arity} types")
        slots = [0] * self._arity
        nulls = 0
        var: list[bytes] = []
        end = self._fixed  # the row's length so far: the offset of the next variable bytes
        areas = self._areas
        for i, (v, enc) in enumerate(zip(values, self._fields, strict=True)):
            if v is None:
                nulls |= 1 << (i + 8)  # the header's first byte is the row kind
                area = areas[i]
                if area:
                    slots[i] = end << 32
                    var.append(bytes(area))
                    end += area
                continue
            slot, extra = enc(v, end)
            slots[i] = slot
            if extra:
                var.append(extra)
                end += len(extra)
        head = nulls.to_bytes(self._header, "little") + self._slots.pack(*slots)
        return head + b"".join(var) if var else head

    def serialize(self, values: Sequence[object]) -> bytes:
        """The row with the 4-byte big-endian arity prefix, as manifests store it."""
        return self._prefix + self.encode(values)


_ENCODERS: dict[tuple[DataType, ...], RowEncoder] = {}
_ENCODERS_MAX = 512  # row types of a process: partitions, keys and value columns of its tables


def row_encoder(types: Sequence[DataType]) -> RowEncoder:
    """The (cached) encoder of rows of ``types``."""
    key = tuple(types)
    enc = _ENCODERS.get(key)
    if enc is None:
        enc = RowEncoder(key)
        if len(_ENCODERS) >= _ENCODERS_MAX:
            _ENCODERS.clear()
        _ENCODERS[key] = enc
    return enc
