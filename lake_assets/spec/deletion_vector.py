"""Deletion vectors and deletion-vector index files (docs/format.md §4.6).

A deletion vector is the set of row positions of one data file that readers must skip. Paimon
stores the vectors of one (partition, bucket) in an index file under ``index/``:

* one version byte (``1``);
* per data file: an int32 big-endian size ``n``, then ``n`` bytes (the vector: a magic number,
  then its bitmap), then an int32 big-endian CRC-32 of those ``n`` bytes.

A vector has one of two forms, told apart by its magic number (Java's ``DeletionVector.read``):

* **32-bit** (Paimon 0.9 on; the default): an int32 big-endian magic ``1581511376``, then the
  portable RoaringBitmap serialization. In memory a `pyroaring.BitMap`, whose ``serialize`` writes
  the bytes Java's ``RoaringBitmap.serialize`` writes.
* **64-bit** (``deletion-vectors.bitmap64``, Paimon 1.2 on: ``Bitmap64DeletionVector`` over
  ``OptimizedRoaringBitmap64``, the layout of Iceberg's deletion-vector blob): an int32
  *little-endian* magic ``1681511377``, then the portable 64-bit Roaring serialization, little-endian
  (a uint64 count of 32-bit bitmaps, then per bitmap its uint32 high key and the portable
  RoaringBitmap of its low halves). In memory a `pyroaring.BitMap64`, whose ``serialize`` writes that
  format. Java writes a bitmap for every high key from 0 to the largest (empty ones in gaps);
  pyroaring leaves empty ones out; each reads the other's. Below 2**32 rows a file (every real
  file) there is one key and the bytes are the same.

The index manifest entry of the file lists, per data file, the offset of its size int and a length
(``_DELETIONS_VECTORS_RANGES``): ``n`` for a 32-bit vector, ``4 + n + 4`` (size and CRC included)
for a 64-bit one, as Java's serializers return them. One file may hold both forms: Java keeps a
vector in the form it was read in and gives new ones the table's form, and so does lake_assets.
Checked byte for byte against files Paimon Java 0.9 writes and against the 64-bit vectors Java's
serializer writes (``tests/unit/test_deletion_vector.py``, ``test_deletion_vector_64.py``).
"""

from __future__ import annotations

import array
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Literal, overload

import numpy as np
from pyroaring import BitMap, BitMap64

from lake_assets.errors import CorruptMetadataError, InvalidDataError, UnsupportedFeatureError
from lake_assets.spec.manifest import DeletionVectorRange

DV_FILE_VERSION = 1
BITMAP32_MAGIC = 1581511376
BITMAP64_MAGIC = 1681511377
# Roaring 32 holds positions up to Java's Integer.MAX_VALUE (Paimon's limit for the 32-bit form).
MAX_POSITION = 2**31 - 1
# OptimizedRoaringBitmap64.MAX_VALUE: high key Integer.MAX_VALUE - 1, low half Integer.MIN_VALUE
MAX_POSITION_64 = ((2**31 - 2) << 32) | 2**31
# a 64-bit vector's manifest length counts its size int and CRC besides its ``n`` bytes
_FRAME_64 = 8

DeletionVector = BitMap | BitMap64
"""A deletion vector in memory: the type is the form it is written in (32- or 64-bit)."""

_INT = struct.Struct(">i")
_INT_LE = struct.Struct("<i")
# whether array.array's "I" holds 32 bits here (it does on every platform CPython supports today)
_UINT32_ARRAY = array.array("I").itemsize == 4
_UINT = struct.Struct(">I")


@overload
def new_vector(
    positions: Iterable[int] | np.ndarray = (), where: str = "", *, bitmap64: Literal[False] = False
) -> BitMap: ...


@overload
def new_vector(positions: Iterable[int] | np.ndarray = (), where: str = "", *, bitmap64: bool) -> DeletionVector: ...


def new_vector(
    positions: Iterable[int] | np.ndarray = (), where: str = "", *, bitmap64: bool = False
) -> DeletionVector:
    """A deletion vector holding ``positions`` (row numbers in a data file, from 0), in the 64-bit
    form when ``bitmap64`` (the table's ``deletion-vectors.bitmap64``), else the 32-bit one.

    ``where`` names the data file in errors. A negative position raises `InvalidDataError`, one
    past the form's limit (``MAX_POSITION``, ``MAX_POSITION_64``) `UnsupportedFeatureError`, before
    anything is cast or added.
    """
    of = f" of {where}" if where else ""
    if isinstance(positions, np.ndarray):
        if positions.size:
            # checked on the original values: after the cast to uint32 a negative one wraps silently
            low, high = int(positions.min()), int(positions.max())
            _check_positions(low, high, of, bitmap64)
        return BitMap64(_bulk64(positions)) if bitmap64 else BitMap(_bulk(positions))
    values = positions if isinstance(positions, (list, tuple, range)) else list(positions)
    if len(values):
        _check_positions(min(values), max(values), of, bitmap64)
    return BitMap64(values) if bitmap64 else BitMap(values)


def add_positions(vector: DeletionVector, positions: np.ndarray, where: str = "", *, ascending: bool = False) -> None:
    """Add ``positions`` (a numpy integer array of row numbers) to ``vector`` in place, checked
    as `new_vector` checks them for the vector's form; ``where`` names the data file in errors.
    ``ascending``: the caller's positions are sorted, so their ends are their bounds (two passes
    fewer over them)."""
    if positions.size:
        wide = isinstance(vector, BitMap64)
        low, high = (positions[0], positions[-1]) if ascending else (positions.min(), positions.max())
        _check_positions(int(low), int(high), f" of {where}" if where else "", wide)
        if wide:
            vector.update(_bulk64(positions))
        else:
            vector.update(_bulk(positions))


def _bulk(positions: np.ndarray) -> array.array[int] | np.ndarray:
    """Checked positions as pyroaring takes them in bulk: pyroaring copies an array.array of 32-bit
    unsigned ints at once, but adds a numpy array's values one by one (7x the time for 25,000)."""
    arr = np.ascontiguousarray(positions.astype(np.uint32, copy=False))
    if not _UINT32_ARRAY:
        return arr
    bulk = array.array("I")
    bulk.frombytes(arr.data.cast("B"))  # one copy (bytes, then an array, made two)
    return bulk


def _bulk64(positions: np.ndarray) -> array.array[int]:
    """Checked positions as an array.array of 64-bit unsigned ints, which `BitMap64` copies at once."""
    bulk = array.array("Q")
    bulk.frombytes(np.ascontiguousarray(positions.astype(np.uint64, copy=False)).data.cast("B"))
    return bulk


def _check_positions(low: int, high: int, of: str, bitmap64: bool = False) -> None:
    """Refuse a row position the vector's form cannot hold (``of`` names the file)."""
    if low < 0:
        raise InvalidDataError(f"Row position {low}{of} is negative: a deletion vector holds positions from 0")
    if high > (MAX_POSITION_64 if bitmap64 else MAX_POSITION):
        raise UnsupportedFeatureError(f"Row position {high}{of} does not fit a {64 if bitmap64 else 32}-bit "
                                      "deletion vector")


def serialize_vector(vector: DeletionVector) -> bytes:
    """The ``n`` bytes of one vector (magic + portable roaring, in the vector's form), without
    the size and CRC frame."""
    if isinstance(vector, BitMap64):
        return _INT_LE.pack(BITMAP64_MAGIC) + vector.serialize()
    return _INT.pack(BITMAP32_MAGIC) + vector.serialize()


def is_64(data: bytes | memoryview, at: int = 0) -> bool:
    """Whether the vector bytes at ``at`` start with the 64-bit form's (little-endian) magic."""
    return len(data) >= at + 4 and _INT_LE.unpack_from(data, at)[0] == BITMAP64_MAGIC


def deserialize_vector(data: bytes, where: str) -> DeletionVector:
    """A vector from its ``n`` bytes (magic + bitmap), in the form its magic names; ``where``
    names it in errors."""
    if len(data) < 4:
        raise CorruptMetadataError(f"Deletion vector {where} is truncated ({len(data)} bytes)")
    (magic,) = _INT.unpack_from(data, 0)
    wide = magic != BITMAP32_MAGIC and is_64(data)
    if magic != BITMAP32_MAGIC and not wide:
        raise CorruptMetadataError(f"Deletion vector {where} has an unknown magic number {magic}")
    try:
        vector: DeletionVector = BitMap64.deserialize(data[4:]) if wide else BitMap.deserialize(data[4:])
    except (ValueError, OverflowError) as exc:
        raise CorruptMetadataError(f"Deletion vector {where} is not a valid roaring bitmap: {exc}") from None
    if wide and vector and vector.max() > MAX_POSITION_64:
        # Java's OptimizedRoaringBitmap64 refuses a high key above Integer.MAX_VALUE - 1
        raise CorruptMetadataError(f"Deletion vector {where} holds position {vector.max()}, past the 64-bit "
                                   f"form's limit {MAX_POSITION_64}")
    return vector


def encode_index_file(vectors: Mapping[str, DeletionVector]) -> tuple[bytes, tuple[DeletionVectorRange, ...]]:
    """The bytes of a deletion-vector index file holding ``vectors`` (data file name -> vector,
    each in its own form), in the order given, and the range of each (offset of its size int,
    length as Java records it for the form, cardinality).

    Empty vectors are left out, as Paimon does not store them."""
    out = bytearray([DV_FILE_VERSION])
    ranges = []
    for name, vector in vectors.items():
        if not vector:
            continue
        body = serialize_vector(vector)
        length = len(body) + _FRAME_64 if isinstance(vector, BitMap64) else len(body)
        ranges.append(DeletionVectorRange(name, len(out), length, len(vector)))
        out += _INT.pack(len(body))
        out += body
        out += _UINT.pack(zlib.crc32(body) & 0xFFFFFFFF)
    return bytes(out), tuple(ranges)


def read_vector(data: bytes, rng: DeletionVectorRange, file_name: str) -> DeletionVector:
    """The vector of ``rng`` inside index file bytes ``data`` (named ``file_name``), checked
    against its size and CRC frame; its magic number says its form and how the manifest's
    length counts (Java's ``DeletionVector.read``)."""
    where = f"of {rng.data_file} in {file_name}"
    if not data or data[0] != DV_FILE_VERSION:
        got = data[0] if data else "nothing"
        raise CorruptMetadataError(f"Deletion vector index file {file_name} has version {got}, expected 1")
    start, length = rng.offset, rng.length
    # the manifest's length counts the size int and CRC of a 64-bit vector only
    wide = start >= 1 and is_64(data, start + 4)
    size_wanted = length - _FRAME_64 if wide else length
    if start < 1 or size_wanted < 4 or start + 8 + size_wanted > len(data):
        raise CorruptMetadataError(
            f"Deletion vector {where}: range ({start}, {length}) lies outside the file ({len(data)} bytes)"
        )
    (size,) = _INT.unpack_from(data, start)
    if size != size_wanted:
        framed = " (a 64-bit vector's counts its size int and CRC too)" if wide else ""
        raise CorruptMetadataError(
            f"Deletion vector {where}: size {size} does not match the manifest's length {length}{framed}"
        )
    body = data[start + 4:start + 4 + size]
    (crc,) = _UINT.unpack_from(data, start + 4 + size)
    if zlib.crc32(body) & 0xFFFFFFFF != crc:
        raise CorruptMetadataError(f"Deletion vector {where}: checksum mismatch")
    return deserialize_vector(body, where)


def deleted_mask(vector: DeletionVector | None, num_rows: int, where: str = "a data file") -> np.ndarray | None:
    """A boolean keep-mask over ``num_rows`` rows (False at deleted positions), or None when the
    vector deletes nothing. A position past the end means the vector belongs to another file."""
    if not vector:
        return None
    if vector.max() >= num_rows:
        raise CorruptMetadataError(
            f"The deletion vector of {where} deletes row {vector.max()}, but the file has {num_rows} rows"
        )
    keep = np.ones(num_rows, dtype=bool)
    keep[np.frombuffer(vector.to_array(), dtype=np.uint64 if isinstance(vector, BitMap64) else np.uint32)] = False
    return keep


__all__ = [
    "BITMAP32_MAGIC",
    "BITMAP64_MAGIC",
    "DV_FILE_VERSION",
    "MAX_POSITION_64",
    "DeletionVector",
    "add_positions",
    "deleted_mask",
    "deserialize_vector",
    "encode_index_file",
    "is_64",
    "new_vector",
    "read_vector",
    "serialize_vector",
]
