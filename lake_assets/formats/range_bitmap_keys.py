"""The keys of Paimon 1.x's range-bitmap file index (``file-index.range-bitmap.*``, docs/format.md §7.6):
which column types it indexes, how a value becomes a key, how keys order and how they are laid out.

The definition is Java HEAD's ``KeyFactory`` (Java 0.9 has no range-bitmap). Each type has a key,
a comparator and a serializer (big-endian, as ``ByteBuffer`` writes)::

    TINYINT, BOOLEAN (1 / 0)   byte          SMALLINT          short
    INT, DATE (days), TIME (millis of day)   int
    BIGINT, DECIMAL(p <= 18) (unscaled), TIMESTAMP(p) and TIMESTAMP_LTZ(p), p <= 6
    (epoch millis for p <= 3, else epoch micros)                                      long
    FLOAT, DOUBLE (``putFloat`` / ``putDouble``: the raw bits)   int / long
    CHAR, VARCHAR              int length, then the UTF-8 bytes

FLOAT and DOUBLE order as Java's ``Float.compare`` / ``Double.compare`` (-0.0 below 0.0, every NaN
equal and above +inf), strings byte by byte, unsigned, then by length (``BinaryString.compareTo``),
the others by value. Other types, DECIMAL above precision 18 and TIMESTAMP above precision 6 are
refused by Java's ``KeyFactory.create`` (at table creation and ALTER from Paimon 1.5, #8168: `java_refusal`;
at write: `unsupported_reason`).

Here a fixed-length key is an int64 "order key" that sorts as Java's comparator (floats through
their canonical bits, negative ones with the magnitude bits inverted), and a string key is its
UTF-8 bytes (an Arrow binary array), whose byte order is Java's. One difference from Java's bytes:
a NaN is written as the canonical NaN, where Java's ``putFloat`` writes the raw bits of the first
NaN its ``TreeMap`` met (every NaN is one key to both, so readers answer alike; the bytes differ
only for a file holding a NaN with another payload).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.bsi_index import bsi_keys
from lake_assets.spec.data_types import (
    BigIntType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarCharType,
)

RANGE_BITMAP = "range-bitmap"
_STRINGS = (CharType, VarCharType)
_TIMESTAMPS = (TimestampType, LocalZonedTimestampType)
# the big-endian layout of each fixed-length key
_DISK: dict[type, str] = {TinyIntType: ">i1", BooleanType: ">i1", SmallIntType: ">i2", IntType: ">i4",
                          DateType: ">i4", TimeType: ">i4", FloatType: ">i4", BigIntType: ">i8",
                          DecimalType: ">i8", TimestampType: ">i8", LocalZonedTimestampType: ">i8",
                          DoubleType: ">i8"}
_NAN32 = np.int32(0x7FC00000)  # Float.floatToIntBits(NaN)
_NAN64 = np.int64(0x7FF8000000000000)
_LOW31 = np.int64(0x7FFFFFFF)
_LOW63 = np.int64(0x7FFFFFFFFFFFFFFF)
# KeyFactory.defaultChunkSize: "0b" (a chunk per key) for 1- and 2-byte keys, else "16kb"
_NO_CHUNKING = (BooleanType, TinyIntType, SmallIntType)
DEFAULT_CHUNK_SIZE = 16 * 1024


def java_refusal(dt: DataType) -> str | None:
    """Java HEAD's message when its range-bitmap index cannot key a column of type ``dt``
    (``KeyFactory.create``, which ``RangeBitmapFileIndexFactory.validate`` calls at create and
    ALTER), or None. Java's text for another type lacks a space ("data type BYTESis not
    supported."); ours has it."""
    if isinstance(dt, DecimalType) and dt.precision > 18:
        return f"The {RANGE_BITMAP} index only supports DECIMAL with a precision in [0, 18]."
    if isinstance(dt, _TIMESTAMPS) and dt.precision > 6:
        return f"The {RANGE_BITMAP} index only supports TIMESTAMP with a precision in [0, 6]."
    if not isinstance(dt, _STRINGS) and type(dt) not in _DISK:
        return f"data type {dt} is not supported."
    return None


def unsupported_reason(dt: DataType) -> str | None:
    """Why Paimon's range-bitmap index cannot key a column of type ``dt`` (Java's writer and its
    table validation fail on it: `java_refusal`), or None."""
    if java_refusal(dt) is None:
        return None
    if isinstance(dt, DecimalType):
        return "Paimon's range-bitmap index supports DECIMAL up to precision 18 only (it keys the unscaled long)"
    if isinstance(dt, _TIMESTAMPS):
        return "Paimon's range-bitmap index supports TIMESTAMP / TIMESTAMP_LTZ up to precision 6 only"
    return (f"Paimon's range-bitmap index does not support type {dt} (its writer fails on it): only CHAR, "
            "VARCHAR, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, DATE, TIME, TIMESTAMP "
            "and TIMESTAMP_LTZ")


def _float_order(bits: np.ndarray, low: np.int64) -> np.ndarray:
    """Order keys of canonical float bits (int64): the sign bit kept, a negative value's other bits
    inverted, so that they sort as ``Float.compare`` (an involution: it maps keys back to bits)."""
    bits = bits.astype(np.int64, copy=False)
    return np.where(bits < 0, bits ^ low, bits)


@dataclass(frozen=True)
class KeyCodec:
    """The range-bitmap key of one column type."""

    type: DataType

    @property
    def is_string(self) -> bool:
        return isinstance(self.type, _STRINGS)

    @property
    def disk(self) -> str:
        """The numpy dtype of a fixed-length key as laid out ('' for strings)."""
        return "" if self.is_string else _DISK[type(self.type)]

    @property
    def width(self) -> int:
        """The bytes of a fixed-length key (0 for strings)."""
        return 0 if self.is_string else np.dtype(self.disk).itemsize

    @property
    def default_chunk_size(self) -> int:
        return 0 if isinstance(self.type, _NO_CHUNKING) else DEFAULT_CHUNK_SIZE

    def keys(self, values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray | pa.Array, np.ndarray]:
        """(the keys of ``values``: int64 order keys, or binary UTF-8 bytes for strings; whether each
        value is non-null). A null's key is meaningless (an order key of 0, an empty string)."""
        arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        valid = np.ones(len(arr), bool) if not arr.null_count else arr.is_valid().to_numpy(zero_copy_only=False)
        if self.is_string:
            binary = arr.cast(pa.large_binary() if pa.types.is_large_string(arr.type) else pa.binary())
            return (pc.fill_null(binary, b"") if arr.null_count else binary), valid
        dt = self.type
        if isinstance(dt, (FloatType, DoubleType, BooleanType)):
            if arr.null_count:
                arr = pc.fill_null(arr, pa.scalar(False if isinstance(dt, BooleanType) else 0, arr.type))
            if isinstance(dt, BooleanType):
                return arr.cast(pa.int8()).to_numpy(zero_copy_only=False).astype(np.int64), valid
            if isinstance(dt, FloatType):
                f32 = arr.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
                bits = np.where(np.isnan(f32), _NAN32, f32.view(np.int32))
                return _float_order(bits, _LOW31), valid
            f64 = arr.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
            return _float_order(np.where(np.isnan(f64), _NAN64, f64.view(np.int64)), _LOW63), valid
        keys, _ = bsi_keys(arr, dt)  # integers, DATE, TIME, DECIMAL, TIMESTAMP: as Java's converters
        return keys, valid

    def from_disk(self, raw: np.ndarray) -> np.ndarray:
        """Order keys of fixed-length keys as laid out (a numpy array of `disk`)."""
        values = raw.astype(raw.dtype.newbyteorder("="))
        if isinstance(self.type, BooleanType):
            return (values == 1).astype(np.int64)  # Java reads ``get() == 1`` as true, any other byte false
        if isinstance(self.type, FloatType):
            nan = ((values & 0x7F800000) == 0x7F800000) & ((values & 0x007FFFFF) != 0)
            return _float_order(np.where(nan, _NAN32, values), _LOW31)
        if isinstance(self.type, DoubleType):
            exp = np.int64(0x7FF0000000000000)
            nan = ((values & exp) == exp) & ((values & np.int64(0x000FFFFFFFFFFFFF)) != 0)
            return _float_order(np.where(nan, _NAN64, values), _LOW63)
        return values.astype(np.int64)

    def to_disk(self, keys: np.ndarray) -> bytes:
        """Fixed-length keys laid out as Java's serializer writes them."""
        if isinstance(self.type, FloatType):
            keys = _float_order(keys, _LOW31)
        elif isinstance(self.type, DoubleType):
            keys = _float_order(keys, _LOW63)
        return np.asarray(keys).astype(self.disk).tobytes()


def codec(dt: DataType) -> KeyCodec:
    """The codec of a column type (`unsupported_reason` must be None)."""
    return KeyCodec(dt.copy(nullable=True))


__all__ = ["DEFAULT_CHUNK_SIZE", "RANGE_BITMAP", "KeyCodec", "codec", "java_refusal", "unsupported_reason"]
