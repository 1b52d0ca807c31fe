"""Paimon's bloom-filter hash (``FastHash``, docs/format.md §7.6) of whole Arrow columns, in numpy.

Strings and binaries hash as xxHash64 (seed 0) of their bytes, numbers, dates, times and
timestamps as Thomas Wang's 64-bit integer hash of a long (`thomas_wang`). Both are computed for
a whole column at once: the string hash walks the columns' values in lockstep, 8 bytes per step,
so its cost is that of the bytes plus one numpy pass per 32-byte stripe of the longest value.
NULLs are not hashed (Paimon's writer skips them). All arithmetic is on uint64 arrays, which wrap
as Java's ``long`` does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.spec.data_types import (
    ArrayType,
    BigIntType,
    BinaryType,
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

_INTEGERS = (TinyIntType, SmallIntType, IntType, BigIntType, DateType, TimeType)
_BYTES = (CharType, VarCharType, BinaryType, VarBinaryType)
_TIMESTAMPS = (TimestampType, LocalZonedTimestampType)
_U64 = np.uint64


def hashable(dt: DataType) -> bool:
    """Whether Paimon's FastHash has a hash for ``dt`` (BOOLEAN, DECIMAL and nested types have none)."""
    return isinstance(dt, _INTEGERS + _BYTES + _TIMESTAMPS + (FloatType, DoubleType))


def java_refusal(dt: DataType) -> str | None:
    """Java HEAD's message when its bloom-filter index cannot hash a column of type ``dt``
    (``FastHashVisitor``, which ``BloomFilterFileIndexFactory.validate`` calls at create and ALTER
    from Paimon 2.0), or None."""
    if hashable(dt):
        return None
    return nested_type_refusal(dt) or ("Does not support decimal" if isinstance(dt, DecimalType)
                                       else f"Does not support type {type(dt).__name__.removesuffix('Type').lower()}")


def nested_type_refusal(dt: DataType) -> str | None:
    """Java's message for a nested type no file index keys (its type visitors), or None; the
    "mutiset" misspelling is Java's."""
    for cls, name in ((ArrayType, "array"), (MultisetType, "mutiset"), (MapType, "map"), (RowType, "row")):
        if isinstance(dt, cls):
            return f"Does not support type {name}"
    return None


def fast_hash(values: pa.Array | pa.ChunkedArray, dt: DataType) -> np.ndarray:
    """The 64-bit hashes (as uint64) of the non-null ``values`` of Paimon type ``dt``, in order."""
    if not hashable(dt):
        raise UnsupportedFeatureError(f"Paimon's bloom-filter index has no hash for type {dt}")
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    out = [_hash_chunk(c.drop_null() if c.null_count else c, dt) for c in chunks]
    return np.concatenate(out) if out else np.zeros(0, _U64)


def _hash_chunk(arr: pa.Array, dt: DataType) -> np.ndarray:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(dt, _BYTES):
        return xxhash64(arr)
    if isinstance(dt, FloatType):
        f = arr.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        bits = f.view(np.int32).astype(np.int64)
        bits[np.isnan(f)] = 0x7FC00000  # Float.floatToIntBits: one canonical NaN
        return thomas_wang(bits.view(_U64))
    if isinstance(dt, DoubleType):
        d = arr.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        bits = d.view(np.int64).copy()
        bits[np.isnan(d)] = 0x7FF8000000000000  # Double.doubleToLongBits
        return thomas_wang(bits.view(_U64))
    if isinstance(dt, _TIMESTAMPS):
        # Paimon hashes epoch millis up to precision 3, else epoch micros (floored, as Timestamp)
        unit = "ms" if dt.precision <= 3 else "us"
        ints = epoch_values(arr, unit)
        return thomas_wang(ints.view(_U64))
    # integers, DATE (days), TIME (millis of day): sign-extended to a long
    if pa.types.is_date32(arr.type) or pa.types.is_time32(arr.type):
        arr = arr.view(pa.int32())
    ints = arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return thomas_wang(ints.view(_U64))


_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def epoch_values(arr: pa.Array, unit: str) -> np.ndarray:
    """Epoch values of a timestamp array in ``unit`` (ms or us), floored as Paimon's Timestamp."""
    have = _UNIT_NANOS[arr.type.unit]
    want = _UNIT_NANOS[unit]
    # the int64 behind a timestamp is its epoch value in its unit, with or without a time zone
    v = arr.view(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    if have > want:
        return v * (have // want)
    return v // (want // have) if have < want else v


def thomas_wang(key: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash (FastHash.getLongHash) of uint64 keys (Java longs' bits).

    Java's ``>>`` on a long is arithmetic: the shifts run on the int64 view."""
    k = key.astype(_U64, copy=True)
    k = ~k + (k << _U64(21))
    k ^= (k.view(np.int64) >> 24).view(_U64)
    k = k + (k << _U64(3)) + (k << _U64(8))
    k ^= (k.view(np.int64) >> 14).view(_U64)
    k = k + (k << _U64(2)) + (k << _U64(4))
    k ^= (k.view(np.int64) >> 28).view(_U64)
    k = k + (k << _U64(31))
    return k


# xxHash64's primes
_P1, _P2, _P3 = _U64(11400714785074694791), _U64(14029467366897019727), _U64(1609587929392839161)
_P4, _P5 = _U64(9650029242287828579), _U64(2870177450012600261)
# the four accumulators' start values for seed 0: P1 + P2, P2, 0, -P1 (mod 2**64)
_INIT = tuple(_U64(x % 2**64) for x in (int(_P1) + int(_P2), int(_P2), 0, -int(_P1)))


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U64(r)) | (x >> _U64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * _P2, 31) * _P1


def bytes_of(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data padded with 8 zero bytes, starts, lengths) of a string or binary array without nulls."""
    if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        off_type: type = np.int64
    elif pa.types.is_string(arr.type) or pa.types.is_binary(arr.type):
        off_type = np.int32
    else:
        arr = arr.cast(pa.large_binary())
        off_type = np.int64
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=off_type)[arr.offset: arr.offset + len(arr) + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    end = int(offsets[-1]) if len(offsets) else 0
    padded = np.zeros(end + 8, np.uint8)
    padded[:end] = data[:end]
    return padded, offsets[:-1], np.diff(offsets)


def _u64_at(data: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Little-endian uint64 read at each byte position (the data is padded by 8 bytes)."""
    return data[pos[:, None] + np.arange(8)].view("<u8").reshape(-1).astype(_U64, copy=False)


def _u32_at(data: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return data[pos[:, None] + np.arange(4)].view("<u4").reshape(-1).astype(_U64)


def xxhash64(arr: pa.Array) -> np.ndarray:
    """xxHash64 with seed 0 (zero-allocation-hashing's ``LongHashFunction.xx()``) of every value of a
    string or binary array without nulls (strings as their UTF-8 bytes)."""
    data, start, length = bytes_of(arr)
    n = len(length)
    h = np.full(n, _P5, _U64)
    stripes = length // 32
    big = np.nonzero(stripes)[0]
    if len(big):
        v = [np.full(len(big), x, _U64) for x in _INIT]
        pos = start[big]
        count = stripes[big]
        for s in range(int(count.max())):
            active = count > s
            p = pos[active] + 32 * s
            for j in range(4):
                v[j][active] = _round(v[j][active], _u64_at(data, p + 8 * j))
        acc = _rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)
        for lane in v:
            acc = (acc ^ _round(np.zeros(len(big), _U64), lane)) * _P1 + _P4
        h[big] = acc
    h += length.astype(_U64)
    pos = start + 32 * stripes
    rest = length - 32 * stripes
    for k in range(3):  # up to three 8-byte lanes
        live = np.nonzero(rest >= 8 * (k + 1))[0]
        if len(live):
            k1 = _round(np.zeros(len(live), _U64), _u64_at(data, pos[live] + 8 * k))
            h[live] = _rotl(h[live] ^ k1, 27) * _P1 + _P4
    pos = pos + 8 * (rest // 8)
    rest = rest % 8
    live = np.nonzero(rest >= 4)[0]
    if len(live):
        h[live] = _rotl(h[live] ^ (_u32_at(data, pos[live]) * _P1), 23) * _P2 + _P3
        pos[live] += 4
        rest[live] -= 4
    for k in range(3):  # up to three single bytes
        live = np.nonzero(rest > k)[0]
        if len(live):
            b = data[pos[live] + k].astype(_U64)
            h[live] = _rotl(h[live] ^ (b * _P5), 11) * _P1
    h ^= h >> _U64(33)
    h *= _P2
    h ^= h >> _U64(29)
    h *= _P3
    h ^= h >> _U64(32)
    return h
