"""Arrow columns to and from the raw values of Avro records, vectorized.

fastavro encodes and decodes the records; everything a logical type changes (timestamps, dates
and times as integers, decimals as big-endian two's-complement bytes, non-string-keyed maps as
arrays of key/value records) is converted here column by column with Arrow and numpy, never one
Python object per value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import CorruptMetadataError

_DEC_BYTES = 16


def _needs_conversion(t: pa.DataType) -> bool:
    if pa.types.is_temporal(t) or pa.types.is_decimal(t):
        return True
    if pa.types.is_map(t):
        return True  # written as a list of {key, value} records (avro_schema.maps_as_arrays)
    if pa.types.is_list(t):
        return _needs_conversion(t.value_type)
    if pa.types.is_struct(t):
        return any(_needs_conversion(f.type) for f in t)
    return False


def _mask(arr: pa.Array) -> pa.Array | None:
    return pc.is_null(arr) if arr.null_count else None


def decimal_to_bytes(arr: pa.Array) -> pa.Array:
    """DECIMAL values as Java's ``BigInteger.toByteArray`` (shortest big-endian two's complement)."""
    n = len(arr)
    if arr.type.bit_width != 128:
        raise CorruptMetadataError(f"decimal type {arr.type} has no Avro data file mapping")
    words = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16:(arr.offset + n) * 16]
    be = words.reshape(n, 16)[:, ::-1]  # little-endian words -> big-endian bytes
    sign = np.where(be[:, :1] >= 0x80, 0xFF, 0x00).astype(np.uint8)
    # a leading byte is redundant when it only repeats the sign and the next byte keeps the sign bit
    redundant = (be[:, :-1] == sign) & ((be[:, 1:] & 0x80) == (sign & 0x80))
    drop = np.cumprod(redundant, axis=1).sum(axis=1)
    valid = np.ones(n, dtype=bool) if not arr.null_count else arr.is_valid().to_numpy(zero_copy_only=False)
    lengths = np.where(valid, _DEC_BYTES - drop, 0)
    keep = (np.arange(_DEC_BYTES)[None, :] >= (_DEC_BYTES - lengths)[:, None])
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = np.ascontiguousarray(be[keep])
    out = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return out if not arr.null_count else pc.if_else(pa.array(valid), out, pa.scalar(None, pa.binary()))


def bytes_to_decimal(arr: pa.Array, t: pa.Decimal128Type) -> pa.Array:
    """Big-endian two's-complement bytes (any length up to 16) as DECIMAL values of type ``t``."""
    n = len(arr)
    if pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.binary())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset:arr.offset + n + 1].astype(np.int64)
    lengths = np.diff(offsets)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    for row in np.flatnonzero(lengths > _DEC_BYTES):  # sign-extended beyond 16 bytes: rare, checked one by one
        value = int.from_bytes(data[offsets[row]:offsets[row + 1]].tobytes(), "big", signed=True)
        if not -(1 << 127) <= value < (1 << 127):
            raise CorruptMetadataError(f"Avro decimal value does not fit {t}")
    if not len(data):
        data = np.zeros(1, np.uint8)
    cols = np.arange(_DEC_BYTES)[None, :]
    present = cols >= (_DEC_BYTES - lengths)[:, None]
    idx = np.clip(offsets[1:, None] - _DEC_BYTES + cols, 0, len(data) - 1)
    first = data[np.clip(offsets[1:] - np.minimum(lengths, _DEC_BYTES), 0, len(data) - 1)]
    sign = np.where((lengths > 0) & (first >= 0x80), 0xFF, 0x00).astype(np.uint8)
    be = np.where(present, data[idx], sign[:, None]).astype(np.uint8)
    le = np.ascontiguousarray(be[:, ::-1])
    out = pa.Array.from_buffers(t, n, [None, pa.py_buffer(le)])
    if arr.null_count:
        out = pc.if_else(arr.is_valid(), out, pa.scalar(None, t))
    return out


def to_raw(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """A column of Arrow type ``t`` as the values fastavro writes for Paimon's Avro type."""
    if not _needs_conversion(t):
        return arr
    if pa.types.is_timestamp(t) or pa.types.is_date64(t):
        return arr.cast(pa.int64())
    if pa.types.is_date32(t):
        return arr.cast(pa.int32())
    if pa.types.is_time32(t):
        return arr.view(pa.int32())
    if pa.types.is_time64(t):
        return arr.view(pa.int64())
    if pa.types.is_decimal(t):
        return decimal_to_bytes(arr)
    if pa.types.is_map(t):
        keys = to_raw(arr.keys, t.key_type)
        items = to_raw(arr.items, t.item_type)
        entries = pa.StructArray.from_arrays([keys, items], names=["key", "value"])
        return pa.ListArray.from_arrays(arr.offsets, entries, mask=_mask(arr))
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(arr.offsets, to_raw(arr.values, t.value_type), mask=_mask(arr))
    if pa.types.is_struct(t):
        children = [to_raw(arr.field(i), f.type) for i, f in enumerate(t)]
        return pa.StructArray.from_arrays(children, names=[f.name for f in t], mask=_mask(arr))
    raise CorruptMetadataError(f"type {t} has no Avro data file mapping")


def from_raw(arr: pa.Array, raw: pa.DataType, logical: pa.DataType) -> pa.Array:
    """A column decoded from Avro records (``raw``) as the type it means (``logical``)."""
    if raw == logical:
        return arr
    if pa.types.is_decimal(logical):
        return bytes_to_decimal(arr, logical)
    if pa.types.is_temporal(logical):
        return arr.cast(logical) if not pa.types.is_time(logical) else arr.view(logical)
    if pa.types.is_map(logical):  # decoded as an array of {key, value} records
        entries = arr.values
        keys = from_raw(entries.field(0), raw.value_type[0].type, logical.key_type)
        items = from_raw(entries.field(1), raw.value_type[1].type, logical.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=logical, mask=_mask(arr))
    if pa.types.is_list(logical):
        values = from_raw(arr.values, raw.value_type, logical.value_type)
        return pa.ListArray.from_arrays(arr.offsets, values, type=logical, mask=_mask(arr))
    if pa.types.is_struct(logical):
        children = [from_raw(arr.field(i), raw[i].type, f.type) for i, f in enumerate(logical)]
        return pa.StructArray.from_arrays(children, fields=list(logical), mask=_mask(arr))
    return arr.cast(logical)
