"""Paimon's other bucket functions, ``bucket-function.type = mod`` and ``hive`` (docs/format.md §6.3).

Both are Paimon HEAD's (``org.apache.paimon.bucket``; ``mod`` since 1.3, ``hive`` since 1.4), computed
for many rows at once with numpy (no per-row Python):

* ``mod`` (``ModBucketFunction``): one INT or BIGINT bucket key, ``Math.floorMod(key, n)``, so a
  negative key lands in ``[0, n)`` (-3 of 5 buckets is bucket 2); a null key reads the zeroed slot
  of its BinaryRow (``BinaryRowWriter.setNullAt``): bucket 0.
* ``hive`` (``HiveBucketFunction`` and ``HiveHasher``, Spark's HiveHash rules): ``h = 31 * h + f``
  over the fields from 0, then ``(h & Integer.MAX_VALUE) % n``. A field hashes as: null 0; BOOLEAN
  1 / 0; TINYINT, SMALLINT, INT, DATE (days) and TIME (millis of day) their int value; BIGINT
  ``Long.hashCode``; FLOAT / DOUBLE their ``floatToIntBits`` / ``doubleToLongBits`` (Java's
  canonical NaN; both zeros 0), a double folded as a long; CHAR / VARCHAR the UTF-8 bytes and
  BINARY / VARBINARY the bytes, each as ``h = 31 * h + b`` over *signed* bytes (not Java's
  ``String.hashCode``, which runs over UTF-16 chars); DECIMAL ``BigDecimal.hashCode`` of the value
  with trailing zeros stripped while the scale is positive (zero: scale 0), which for a Paimon
  decimal (precision <= 38) is all ``HiveHasher.normalizeDecimal`` changes. Any other type
  (timestamps, nested types) makes Java throw "Unsupported type as bucket key type".

The default function (Paimon's murmur hash of the BinaryRow) is `lake_assets.lsm.bucket`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import (
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
    SmallIntType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

DEFAULT = "default"
MOD = "mod"
HIVE = "hive"

# Types whose Hive hash is their value as a Java int (Paimon's field getters give an Integer,
# Short, Byte or Boolean), with the Arrow storage type read for it.
_HIVE_INT_STORAGE: dict[type[DataType], pa.DataType] = {
    TinyIntType: pa.int8(),
    SmallIntType: pa.int16(),
    IntType: pa.int32(),
    DateType: pa.int32(),
    TimeType: pa.int32(),
}
_BYTES_TYPES = (CharType, VarCharType, BinaryType, VarBinaryType)
HIVE_TYPES: tuple[type[DataType], ...] = (
    BooleanType, *_HIVE_INT_STORAGE, BigIntType, FloatType, DoubleType, DecimalType, *_BYTES_TYPES,
)
# Bytes of strings hashed per numpy pass: bounds the per-byte temporaries (about 33 bytes per
# byte: three int64 index arrays, two uint32 ones), so about 35 MB whatever the batch.
_BYTES_PER_PASS = 1 << 20
_U32 = np.uint32
_FLOAT_NAN_BITS = 0x7FC00000
_MAX_COMPACT_DECIMAL = 18  # precision whose unscaled values fit a long (Paimon's compact decimal)
_DOUBLE_NAN_BITS = 0x7FF8000000000000


def function_problem(function: str, types: Sequence[DataType]) -> str | None:
    """Why ``function`` cannot give buckets to keys of these types (as Paimon HEAD refuses them),
    or None."""
    if function == MOD:
        if len(types) != 1:
            return f"the mod bucket function needs a bucket key of exactly one field, not {len(types)}"
        if not isinstance(types[0], IntType | BigIntType):
            return f"the mod bucket function needs an INT or BIGINT bucket key, not {types[0]}"
    elif function == HIVE:
        bad = [str(t) for t in types if not isinstance(t, HIVE_TYPES)]
        if bad:
            return f"the hive bucket function cannot hash bucket key type(s) {', '.join(bad)}"
    elif function != DEFAULT:
        return f"unknown bucket function {function!r}"
    return None


def function_buckets(function: str, columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType],
                     num_buckets: int) -> np.ndarray:
    """Bucket (int32) of every row of the bucket-key ``columns`` under ``mod`` or ``hive``."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    problem = function_problem(function, types)
    if problem is not None or function == DEFAULT:
        raise ValueError(problem or "the default bucket function is lsm.bucket.assign_buckets")
    if function == MOD:
        return mod_buckets(columns[0], types[0], num_buckets)
    return hive_buckets(hive_hashes(columns, types), num_buckets)


def mod_buckets(column: pa.Array | pa.ChunkedArray, t: DataType, num_buckets: int) -> np.ndarray:
    """``Math.floorMod(key, n)`` of an INT or BIGINT column (a null key: bucket 0), as int32."""
    arr = _array(column, t)
    values = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    # numpy's % on integers is a floored modulo, as Java's Math.floorMod for a positive divisor
    buckets: np.ndarray = np.mod(values, np.int64(num_buckets)).astype(np.int32)
    return buckets


def hive_buckets(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """``(hash & Integer.MAX_VALUE) % n`` of combined Hive hashes (uint32 or int32), as int32."""
    positive = np.asarray(hashes).view(_U32) & _U32(0x7FFFFFFF)
    buckets: np.ndarray = (positive % _U32(num_buckets)).astype(np.int32)
    return buckets


def hive_hashes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]) -> np.ndarray:
    """The combined Hive hash of every row, ``h = 31 * h + field hash`` from 0, as uint32 (Java's
    int arithmetic is this modulo 2**32)."""
    n = len(columns[0]) if columns else 0
    h = np.zeros(n, dtype=_U32)
    for column, t in zip(columns, types, strict=True):
        h *= _U32(31)
        h += hive_field_hashes(column, t)
    return h


def hive_field_hashes(column: pa.Array | pa.ChunkedArray, t: DataType) -> np.ndarray:
    """``HiveBucketFunction.computeHash`` of every value of one column, as uint32 (null: 0)."""
    arr = _array(column, t)
    out: np.ndarray
    if isinstance(t, BooleanType):
        out = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(_U32)
    elif type(t) in _HIVE_INT_STORAGE:
        out = _storage(arr, _HIVE_INT_STORAGE[type(t)]).astype(np.int32).view(_U32)
    elif isinstance(t, BigIntType):
        out = _long_hash(_storage(arr, pa.int64()).view(np.uint64))
    elif isinstance(t, FloatType):
        values = _storage(arr, pa.float32())
        bits = values.view(_U32).copy()
        bits[values == 0] = 0  # -0.0f == 0.0f: both hash 0
        bits[np.isnan(values)] = _FLOAT_NAN_BITS  # Float.floatToIntBits' canonical NaN
        out = bits
    elif isinstance(t, DoubleType):
        values = _storage(arr, pa.float64())
        lbits = values.view(np.uint64).copy()
        lbits[values == 0] = 0
        lbits[np.isnan(values)] = _DOUBLE_NAN_BITS
        out = _long_hash(lbits)
    elif isinstance(t, DecimalType):
        out = _compact_decimal_hashes(arr, t.scale) if t.precision <= _MAX_COMPACT_DECIMAL else (
            _decimal_hashes(arr, t.scale))
    elif isinstance(t, _BYTES_TYPES):
        out = _bytes_hashes(arr)
    else:
        raise ValueError(f"the hive bucket function cannot hash {t}")
    if arr.null_count:
        out[arr.is_null().to_numpy(zero_copy_only=False)] = 0
    return out


def _array(column: pa.Array | pa.ChunkedArray, t: DataType) -> pa.Array:
    """One Arrow array of the table's type for ``t`` (a wider input column hashes as the table's)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    target = to_arrow(t)
    return arr if arr.type == target else arr.cast(target)


def _storage(arr: pa.Array, storage: pa.DataType) -> np.ndarray:
    """The values through a same-width numeric type, nulls as zero (their hash is replaced)."""
    view = arr.view(storage)
    if view.null_count:
        view = pc.fill_null(view, pa.scalar(0, storage))
    values: np.ndarray = view.to_numpy(zero_copy_only=False)
    return values


def _long_hash(bits: np.ndarray) -> np.ndarray:
    """``Long.hashCode``: ``(int) (v ^ (v >>> 32))`` of 64-bit patterns, as uint32."""
    folded: np.ndarray = ((bits ^ (bits >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(_U32)
    return folded


def _bytes_hashes(arr: pa.Array) -> np.ndarray:
    """``HiveHasher.hashBytes`` of each value (UTF-8 bytes of a string), as uint32.

    ``h = 31 * h + b`` over signed bytes is ``sum(b_i * 31 ** (len - 1 - i))`` modulo 2**32: every
    byte's term is computed at once, and a running sum (which wraps as Java's int does) gives each
    row's total as the difference of the sums at its ends."""
    binary = arr.cast(pa.large_binary())
    n = len(binary)
    out = np.zeros(n, dtype=_U32)
    if n == 0:
        return out
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64)[binary.offset : binary.offset + n + 1]
    data_buf = binary.buffers()[2]
    if data_buf is None or offsets[-1] == offsets[0]:
        return out
    data = np.frombuffer(data_buf, dtype=np.int8)
    lengths = np.diff(offsets)
    powers = np.full(int(lengths.max()), 31, dtype=_U32)
    powers[0] = 1
    powers = np.cumprod(powers, dtype=_U32)  # 31**k modulo 2**32
    start = 0
    while start < n:
        # rows [start, stop) hold at most _BYTES_PER_PASS bytes (or one longer row)
        stop = int(np.searchsorted(offsets, offsets[start] + _BYTES_PER_PASS, side="right")) - 1
        stop = min(max(stop, start + 1), n)
        lo, hi = int(offsets[start]), int(offsets[stop])
        if hi > lo:
            ends = np.repeat(offsets[start + 1 : stop + 1], lengths[start:stop])
            exponent = ends - 1 - np.arange(lo, hi, dtype=np.int64)
            terms = data[lo:hi].astype(np.int32).view(_U32) * powers[exponent]
            running = np.zeros(hi - lo + 1, dtype=_U32)
            np.cumsum(terms, dtype=_U32, out=running[1:])
            out[start:stop] = running[offsets[start + 1 : stop + 1] - lo] - running[offsets[start:stop] - lo]
        start = stop
    return out


def _compact_decimal_hashes(arr: pa.Array, scale: int) -> np.ndarray:
    """`_decimal_hashes` of a decimal of precision <= 18, whose unscaled value is an int64 (the
    low word of its 128 bits): the same arithmetic on one 64-bit magnitude, about 5x cheaper."""
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], dtype="<i8", count=(arr.offset + n) * 2).reshape(-1, 2)[arr.offset :, 0]
    negative = raw < 0
    magnitude = np.abs(raw).view(np.uint64)  # |value| < 10**18: no overflow
    scales = np.full(n, scale, dtype=np.int64)
    scales[magnitude == 0] = 0
    active = np.flatnonzero(magnitude != 0) if scale > 0 else np.zeros(0, dtype=np.int64)
    ten = np.uint64(10)
    while len(active):
        values = magnitude[active]
        q = values // ten
        rows = active[values == q * ten]
        magnitude[rows] //= ten
        scales[rows] -= 1
        active = rows[scales[rows] > 0]
    # BigInteger.hashCode of the magnitude's words: 31 * high + low
    h: np.ndarray = (magnitude >> np.uint64(32)).astype(_U32) * _U32(31)
    h += (magnitude & np.uint64(0xFFFFFFFF)).astype(_U32)
    h[negative] = _U32(0) - h[negative]
    h *= _U32(31)
    h += scales.astype(_U32)
    return h


def _decimal_hashes(arr: pa.Array, scale: int) -> np.ndarray:
    """``BigDecimal.hashCode`` of each value after ``HiveHasher.normalizeDecimal``, as uint32.

    The unscaled value's magnitude is held as four 32-bit limbs (big-endian, in uint64 arrays);
    trailing zeros are divided out by long division while the scale is positive; then
    ``31 * BigInteger.hashCode + scale``, where ``BigInteger.hashCode`` folds the magnitude's
    words with ``31 * h + word`` (leading zero words leave it 0) and takes the sign."""
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=_U32)
    raw = np.frombuffer(arr.buffers()[1], dtype="<u8", count=(arr.offset + n) * 2).reshape(-1, 2)[arr.offset :]
    lo, hi = raw[:, 0].copy(), raw[:, 1].copy()
    negative = (hi >> np.uint64(63)).astype(bool)
    # two's complement negation of the negative values: ~x + 1 over 128 bits
    neg_lo = ~lo[negative] + np.uint64(1)
    hi[negative] = ~hi[negative] + (neg_lo == 0).astype(np.uint64)
    lo[negative] = neg_lo
    mask32 = np.uint64(0xFFFFFFFF)
    limbs = [hi >> np.uint64(32), hi & mask32, lo >> np.uint64(32), lo & mask32]
    scales = np.full(n, scale, dtype=np.int64)
    zero = (lo == 0) & (hi == 0)
    scales[zero] = 0
    active = np.flatnonzero(~zero) if scale > 0 else np.zeros(0, dtype=np.int64)
    ten = np.uint64(10)
    while len(active):
        rem = np.zeros(len(active), dtype=np.uint64)
        quotients = []
        for limb in limbs:
            cur = (rem << np.uint64(32)) | limb[active]
            q = cur // ten
            rem = cur - q * ten
            quotients.append(q)
        divisible = rem == 0
        rows = active[divisible]
        for limb, q in zip(limbs, quotients, strict=True):
            limb[rows] = q[divisible]
        scales[rows] -= 1
        active = rows[scales[rows] > 0]
    h = np.zeros(n, dtype=_U32)
    for limb in limbs:
        h *= _U32(31)
        h += limb.astype(_U32)
    h[negative] = _U32(0) - h[negative]  # BigInteger.hashCode * signum
    h *= _U32(31)
    h += scales.astype(_U32)
    return h
