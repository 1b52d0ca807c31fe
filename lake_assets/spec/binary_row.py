"""BinaryRow codec, one row at a time (docs/format.md §5): partitions, min/max keys, stats rows and
bucket-hash input.

The layout is `lake_assets.spec.binary_row_layout`; rows are encoded by a precompiled encoder per
row type (`lake_assets.spec.binary_row_encoder`); whole Arrow columns are encoded at once by
`lake_assets.spec.binary_row_vectorized.encode_rows` (re-exported here). Null high-precision values
(DECIMAL p > 18, TIMESTAMP p > 3) use Java's codegen form (§5.4 item 1): the variable area is still
reserved and the slot points at it, so partitions and bucket keys hash like Java's.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Sequence
from decimal import Decimal

from lake_assets.errors import CorruptMetadataError, SchemaError, UnsupportedFeatureError
from lake_assets.spec.binary_row_encoder import row_encoder
from lake_assets.spec.binary_row_layout import (
    BINARY_TYPES,
    DECIMAL_AREA,
    MAX_INLINE,
    NESTED_TYPES,
    STRING_TYPES,
    TIMESTAMP_TYPES,
    header_size,
)
from lake_assets.spec.binary_row_vectorized import encode_rows
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
    LocalZonedTimestampType,
    SmallIntType,
    TimeType,
    TinyIntType,
)

__all__ = [
    "EMPTY_ROW", "decode_row", "deserialize_row", "encode_row", "encode_rows", "header_size", "serialize_row",
]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_ORDINAL = _EPOCH_DATE.toordinal()
_MILLIS_PER_DAY = 86_400_000

_INT_RANGES: dict[type[DataType], tuple[int, int, int]] = {
    TinyIntType: (8, -(2**7), 2**7 - 1),
    SmallIntType: (16, -(2**15), 2**15 - 1),
    IntType: (32, -(2**31), 2**31 - 1),
    BigIntType: (64, -(2**63), 2**63 - 1),
}


def encode_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """Encode one row as BinaryRow bytes (RowKind +I, no arity prefix).

    Naive datetimes are wall clocks read as if UTC, aware ones are converted to UTC (for both TIMESTAMP
    and TIMESTAMP_LTZ). Nullability is not enforced here; writers reject null keys themselves.
    The encoder of the row type is built once and cached (`binary_row_encoder.row_encoder`).
    """
    return row_encoder(types).encode(values)


def serialize_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """BinaryRow with the 4-byte big-endian arity prefix, as stored in manifests."""
    return row_encoder(types).serialize(values)


EMPTY_ROW: bytes = serialize_row([], [])
"""The serialized arity-0 row (12 zero bytes) used for absent partitions, keys and stats."""


# ---------------------------------------------------------------------------------------------------------
# Decoding


def _corrupt(i: int, t: DataType, why: str) -> CorruptMetadataError:
    return CorruptMetadataError(f"BinaryRow field {i} ({t}): {why}")


def _var_bytes(data: bytes, i: int, t: DataType, slot: int, slot_pos: int) -> bytes:
    if slot >> 63:
        n = (slot >> 56) & 0x7F
        if n > MAX_INLINE:
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
            if not 1 <= len(raw) <= DECIMAL_AREA:
                raise _corrupt(i, t, f"decimal byte length {len(raw)} not in 1..16")
            unscaled = int.from_bytes(raw, "big", signed=True)
        # The string constructor is exact, unlike arithmetic under the default 28-digit context.
        return Decimal(f"{unscaled}E-{t.scale}")
    if isinstance(t, TIMESTAMP_TYPES):
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
    if isinstance(t, STRING_TYPES):
        raw = _var_bytes(data, i, t, slot, slot_pos)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _corrupt(i, t, "invalid UTF-8") from None
    if isinstance(t, BINARY_TYPES):
        return _var_bytes(data, i, t, slot, slot_pos)
    if isinstance(t, NESTED_TYPES):
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
