"""Deletion vectors and deletion-vector index files (docs/format.md §4.6).

A deletion vector is the set of row positions of one data file that readers must skip. Paimon
stores the vectors of one (partition, bucket) in an index file under ``index/``:

* one version byte (``1``);
* per data file: an int32 big-endian size ``n``, then ``n`` bytes (an int32 big-endian magic
  ``1581511376`` followed by the bitmap in the portable RoaringBitmap serialization), then an
  int32 big-endian CRC-32 of those ``n`` bytes.

The index manifest entry of the file lists, per data file, the offset of its size int and ``n``
(``_DELETIONS_VECTORS_RANGES``). Checked byte for byte against files Paimon Java 0.9 writes
(``tests/unit/test_deletion_vector.py`` holds one). The bitmap is `pyroaring.BitMap`, whose
``serialize`` is the portable format Java's ``RoaringBitmap.serialize`` writes. The 64-bit form
(``deletion-vectors.bitmap64``, magic ``1681511377``, Paimon 1.x) is refused.
"""

from __future__ import annotations

import array
import struct
import zlib
from collections.abc import Iterable, Mapping

import numpy as np
from pyroaring import BitMap

from lake_assets.errors import CorruptMetadataError, InvalidDataError, UnsupportedFeatureError
from lake_assets.spec.manifest import DeletionVectorRange

DV_FILE_VERSION = 1
BITMAP32_MAGIC = 1581511376
BITMAP64_MAGIC = 1681511377
# Roaring 32 holds positions up to Java's Integer.MAX_VALUE (Paimon's limit for the 32-bit form).
MAX_POSITION = 2**31 - 1

_INT = struct.Struct(">i")
# whether array.array's "I" holds 32 bits here (it does on every platform CPython supports today)
_UINT32_ARRAY = array.array("I").itemsize == 4
_UINT = struct.Struct(">I")


def new_vector(positions: Iterable[int] | np.ndarray = (), where: str = "") -> BitMap:
    """A deletion vector holding ``positions`` (row numbers in a data file, from 0).

    ``where`` names the data file in errors. A negative position raises `InvalidDataError`, one
    past ``MAX_POSITION`` `UnsupportedFeatureError`, before anything is cast or added.
    """
    of = f" of {where}" if where else ""
    if isinstance(positions, np.ndarray):
        if positions.size:
            # checked on the original values: after the cast to uint32 a negative one wraps silently
            low, high = int(positions.min()), int(positions.max())
            _check_positions(low, high, of)
        return BitMap(_bulk(positions))
    values = positions if isinstance(positions, (list, tuple, range)) else list(positions)
    if len(values):
        _check_positions(min(values), max(values), of)
    return BitMap(values)


def add_positions(vector: BitMap, positions: np.ndarray, where: str = "") -> None:
    """Add ``positions`` (a numpy integer array of row numbers) to ``vector`` in place, checked
    as `new_vector` checks them; ``where`` names the data file in errors."""
    if positions.size:
        _check_positions(int(positions.min()), int(positions.max()), f" of {where}" if where else "")
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


def _check_positions(low: int, high: int, of: str) -> None:
    """Refuse a row position a 32-bit deletion vector cannot hold (``of`` names the file)."""
    if low < 0:
        raise InvalidDataError(f"Row position {low}{of} is negative: a deletion vector holds positions from 0")
    if high > MAX_POSITION:
        raise UnsupportedFeatureError(f"Row position {high}{of} does not fit a 32-bit deletion vector")


def serialize_vector(vector: BitMap) -> bytes:
    """The ``n`` bytes of one vector (magic + portable roaring), without the size and CRC frame."""
    return _INT.pack(BITMAP32_MAGIC) + vector.serialize()


def deserialize_vector(data: bytes, where: str) -> BitMap:
    """A vector from its ``n`` bytes (magic + bitmap); ``where`` names it in errors."""
    if len(data) < 4:
        raise CorruptMetadataError(f"Deletion vector {where} is truncated ({len(data)} bytes)")
    (magic,) = _INT.unpack_from(data, 0)
    if magic != BITMAP32_MAGIC:
        if struct.unpack_from("<i", data, 0)[0] == BITMAP64_MAGIC:
            raise UnsupportedFeatureError(
                f"Deletion vector {where} is a 64-bit bitmap (deletion-vectors.bitmap64); only the 32-bit form "
                "is implemented"
            )
        raise CorruptMetadataError(f"Deletion vector {where} has an unknown magic number {magic}")
    try:
        return BitMap.deserialize(data[4:])
    except (ValueError, OverflowError) as exc:
        raise CorruptMetadataError(f"Deletion vector {where} is not a valid roaring bitmap: {exc}") from None


def encode_index_file(vectors: Mapping[str, BitMap]) -> tuple[bytes, tuple[DeletionVectorRange, ...]]:
    """The bytes of a deletion-vector index file holding ``vectors`` (data file name -> vector),
    in the order given, and the range of each (offset of its size int, byte length, cardinality).

    Empty vectors are left out, as Paimon does not store them."""
    out = bytearray([DV_FILE_VERSION])
    ranges = []
    for name, vector in vectors.items():
        if not vector:
            continue
        body = serialize_vector(vector)
        ranges.append(DeletionVectorRange(name, len(out), len(body), len(vector)))
        out += _INT.pack(len(body))
        out += body
        out += _UINT.pack(zlib.crc32(body) & 0xFFFFFFFF)
    return bytes(out), tuple(ranges)


def read_vector(data: bytes, rng: DeletionVectorRange, file_name: str) -> BitMap:
    """The vector of ``rng`` inside index file bytes ``data`` (named ``file_name``), checked
    against its size and CRC frame."""
    where = f"of {rng.data_file} in {file_name}"
    if not data or data[0] != DV_FILE_VERSION:
        got = data[0] if data else "nothing"
        raise CorruptMetadataError(f"Deletion vector index file {file_name} has version {got}, expected 1")
    start, length = rng.offset, rng.length
    if start < 1 or length < 4 or start + 8 + length > len(data):
        raise CorruptMetadataError(
            f"Deletion vector {where}: range ({start}, {length}) lies outside the file ({len(data)} bytes)"
        )
    (size,) = _INT.unpack_from(data, start)
    if size != length:
        raise CorruptMetadataError(f"Deletion vector {where}: size {size} does not match the manifest's {length}")
    body = data[start + 4:start + 4 + length]
    (crc,) = _UINT.unpack_from(data, start + 4 + length)
    if zlib.crc32(body) & 0xFFFFFFFF != crc:
        raise CorruptMetadataError(f"Deletion vector {where}: checksum mismatch")
    return deserialize_vector(body, where)


def deleted_mask(vector: BitMap | None, num_rows: int, where: str = "a data file") -> np.ndarray | None:
    """A boolean keep-mask over ``num_rows`` rows (False at deleted positions), or None when the
    vector deletes nothing. A position past the end means the vector belongs to another file."""
    if not vector:
        return None
    if vector.max() >= num_rows:
        raise CorruptMetadataError(
            f"The deletion vector of {where} deletes row {vector.max()}, but the file has {num_rows} rows"
        )
    keep = np.ones(num_rows, dtype=bool)
    keep[np.frombuffer(vector.to_array(), dtype=np.uint32)] = False
    return keep


__all__ = [
    "BITMAP32_MAGIC",
    "BITMAP64_MAGIC",
    "DV_FILE_VERSION",
    "add_positions",
    "deleted_mask",
    "deserialize_vector",
    "encode_index_file",
    "new_vector",
    "read_vector",
    "serialize_vector",
]
