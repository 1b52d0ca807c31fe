"""Paimon's bitmap file index (``file-index.bitmap.*``, docs/format.md §7.6), version 1, in numpy.

The payload lists, for every distinct value of a column in a data file, the rows holding it: a
roaring bitmap of their positions, or the one position itself when it is alone. Java 0.9 writes
version 1 and reads nothing newer; Paimon 1.x writes version 2 by default but reads version 1 too,
so lake_assets writes version 1, the same bytes as Java 0.9's ``BitmapFileIndex`` for the same
rows (values in its HashMap's order, `lake_assets.formats.java_hash_map`), and reads version 1.

Values are keyed as Java keys them (``BitmapFileIndex.getValueMapper``, ``BitmapFileIndexMeta``):
integers, DATE (days) and TIME (millis of day) as themselves, FLOAT and DOUBLE by their bits with
one canonical NaN (``Float.equals``), TIMESTAMP(p) as epoch millis for p <= 3 else epoch micros,
CHAR / VARCHAR as their UTF-8 bytes. BOOLEAN, BINARY, DECIMAL and nested types have no layout
Java 0.9 can read (`unsupported_reason`).
"""

from __future__ import annotations

import array
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.fast_hash import bytes_of, epoch_values
from lake_assets.formats.java_hash_map import binary_string_hash_codes, hash_map_order, long_hash_codes
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import (
    BigIntType,
    BooleanType,
    CharType,
    DataType,
    DateType,
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

BITMAP = "bitmap"
VERSION_1 = 1
_STRINGS = (CharType, VarCharType)
# the big-endian width Java's DataOutput gives each key type
_FIXED: dict[type, str] = {TinyIntType: ">i1", SmallIntType: ">i2", IntType: ">i4", DateType: ">i4",
                           TimeType: ">i4", BigIntType: ">i8", TimestampType: ">i8",
                           LocalZonedTimestampType: ">i8", FloatType: ">i4", DoubleType: ">i8"}


def unsupported_reason(dt: DataType) -> str | None:
    """Why no bitmap index of a column of type ``dt`` can be written for Paimon 0.9 readers, or None."""
    if isinstance(dt, BooleanType):
        return ("Paimon 0.9's bitmap index has no BOOLEAN layout (its writer fails on a value; a 1.x index of one "
                "reads as a TINYINT key there, so a 0.9 reader would skip files that match)")
    if not isinstance(dt, _STRINGS) and type(dt) not in _FIXED:
        return f"Paimon's bitmap index does not support type {dt} (its writer fails on it)"
    return None


def index_keys(values: pa.Array | pa.ChunkedArray, dt: DataType) -> pa.Array:
    """The keys Java's bitmap index gives ``values`` (nulls stay null): an int array of the
    width `_FIXED` names (float and double as their canonical bits), or binary UTF-8 bytes."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(dt, _STRINGS):
        return arr.cast(pa.binary()) if not pa.types.is_binary(arr.type) else arr
    mask = None
    if arr.null_count:
        mask = arr.is_null().to_numpy(zero_copy_only=False)
        arr = pc.fill_null(arr, pa.scalar(0, arr.type))  # the mask keeps them null
    if isinstance(dt, (TimestampType, LocalZonedTimestampType)):
        ints = epoch_values(arr, "ms" if dt.precision <= 3 else "us")
    elif isinstance(dt, FloatType):
        f = arr.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        ints = np.where(np.isnan(f), np.int32(0x7FC00000), f.view(np.int32))
    elif isinstance(dt, DoubleType):
        d = arr.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        ints = np.where(np.isnan(d), np.int64(0x7FF8000000000000), d.view(np.int64))
    else:
        if pa.types.is_date32(arr.type) or pa.types.is_time32(arr.type):
            arr = arr.view(pa.int32())
        ints = arr.to_numpy(zero_copy_only=False)
    ints = np.asarray(ints).astype(np.dtype(_FIXED[type(dt)]).newbyteorder("="), copy=False)
    return pa.array(ints, mask=mask)


def _hash_codes(keys: pa.Array, dt: DataType) -> np.ndarray:
    """Java's ``hashCode`` of distinct keys (no nulls): Byte/Short/Integer/Float their int value or
    bits, Long/Double ``(int)(v ^ v >>> 32)`` of value or bits, BinaryString Murmur3 of its bytes."""
    if isinstance(dt, _STRINGS):
        data, starts, lengths = bytes_of(keys)
        return binary_string_hash_codes(data, starts, lengths)
    ints = keys.to_numpy(zero_copy_only=False)
    return long_hash_codes(ints) if ints.dtype.itemsize == 8 else ints.astype(np.int32)


def _entries(keys: pa.Array, dt: DataType, offsets: np.ndarray) -> bytes:
    """``value | offset`` of every entry, as ``BitmapFileIndexMeta.serialize`` writes them."""
    if not isinstance(dt, _STRINGS):
        rec = np.empty(len(keys), np.dtype([("k", _FIXED[type(dt)]), ("o", ">i4")]))
        rec["k"] = keys.to_numpy(zero_copy_only=False)
        rec["o"] = offsets
        return rec.tobytes()
    data, starts, lengths = bytes_of(keys)
    # each entry: int length, the bytes, int offset
    pos = np.concatenate([[0], np.cumsum(lengths + 8)])
    out = np.zeros(int(pos[-1]), np.uint8)
    for field, at in ((lengths, pos[:-1]), (offsets, pos[:-1] + 4 + lengths)):
        out[at[:, None] + np.arange(4)] = np.asarray(field, ">i4").view(np.uint8).reshape(-1, 4)
    total = int(lengths.sum())
    if total:
        src = np.repeat(starts, lengths) + np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        dst = np.repeat(pos[:-1] + 4, lengths) + np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[dst] = data[src]
    return out.tobytes()


def _roaring(rows: np.ndarray) -> bytes:
    """``RoaringBitmap32.serialize``: run-optimized, portable roaring format."""
    bm = BitMap(array.array("I", rows.astype(np.uint32).tobytes()))
    bm.run_optimize()
    return bytes(bm.serialize())


def _bitmaps(grouped: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> tuple[bytes, np.ndarray]:
    """(the serialized bitmaps of the row groups ``grouped[starts[i]: starts[i] + counts[i]]``,
    one after another; each one's size).

    A group whose containers (its rows by 65536-row block) all stay arrays after ``runOptimize``
    (at most 4096 rows, and 2 * card <= 2 + 4 * runs) is laid out here in the portable format
    without runs, for all such groups at once: cookie 12346, the container count, each container's
    key and cardinality - 1, each one's offset, then each one's rows as 16-bit values, all
    little-endian. Any other group (a run or a bitmap container) goes through pyroaring."""
    g = len(starts)
    if not g:
        return b"", np.zeros(0, np.int64)
    total = int(counts.sum())
    before = np.cumsum(counts) - counts  # each group's first position in the concatenation
    rows = grouped[np.repeat(starts - before, counts) + np.arange(total)]
    gid = np.repeat(np.arange(g), counts)
    high = rows >> 16
    new_container = np.ones(total, bool)
    new_container[1:] = (gid[1:] != gid[:-1]) | (high[1:] != high[:-1])
    c_first = np.nonzero(new_container)[0]
    c_card = np.diff(np.append(c_first, total))
    breaks = np.zeros(total, np.int64)
    breaks[1:] = (rows[1:] != rows[:-1] + 1) & ~new_container[1:]
    c_runs = np.add.reduceat(breaks, c_first) + 1
    c_gid = gid[c_first]
    c_bad = (c_card > 4096) | (2 * c_card > 2 + 4 * c_runs)
    simple = np.bincount(c_gid, weights=c_bad, minlength=g) == 0
    k = np.bincount(c_gid, minlength=g)
    sizes = np.where(simple, 8 + 8 * k + 2 * counts, 0).astype(np.int64)
    others = {int(i): _roaring(rows[before[i]: before[i] + counts[i]]) for i in np.nonzero(~simple)[0]}
    for i, blob in others.items():
        sizes[i] = len(blob)
    at = np.cumsum(sizes) - sizes
    out = np.zeros(int(sizes.sum()), np.uint8)

    def put_u32(pos: np.ndarray, value: np.ndarray) -> None:
        out[pos[:, None] + np.arange(4)] = np.asarray(value, "<u4").view(np.uint8).reshape(-1, 4)

    ok = np.nonzero(simple)[0]
    put_u32(at[ok], np.full(len(ok), 12346))  # SERIAL_COOKIE_NO_RUNCONTAINER
    put_u32(at[ok] + 4, k[ok])
    cs = np.nonzero(simple[c_gid])[0]  # the containers of simple groups
    cg = c_gid[cs]
    j = cs - (np.cumsum(k) - k)[cg]  # each one's place in its group
    put_u32(at[cg] + 8 + 4 * j, high[c_first[cs]] | (c_card[cs] - 1) << 16)  # key, cardinality - 1
    put_u32(at[cg] + 8 + 4 * k[cg] + 4 * j, 8 + 8 * k[cg] + 2 * (c_first[cs] - before[cg]))
    ps = np.nonzero(simple[gid])[0]  # the rows of simple groups
    dst = at[gid[ps]] + 8 + 8 * k[gid[ps]] + 2 * (ps - before[gid[ps]])
    low = rows[ps]
    out[dst] = low & 0xFF  # each row's low 16 bits, little-endian
    out[dst + 1] = (low >> 8) & 0xFF
    for i, blob in others.items():
        out[at[i]: at[i] + len(blob)] = np.frombuffer(blob, np.uint8)
    return out.tobytes(), sizes


def write_bitmap_index(keys: pa.Array, dt: DataType) -> tuple[bytes, bool]:
    """(version-1 payload of a file whose column has the `index_keys` ``keys``, row by row;
    whether its value order is exactly Java's (see `hash_map_order`))."""
    n = len(keys)
    encoded = pc.dictionary_encode(keys)  # codes in order of first occurrence: Java's insertion order
    distinct = encoded.dictionary
    codes = encoded.indices
    valid = codes.is_valid().to_numpy(zero_copy_only=False) if codes.null_count else np.ones(n, bool)
    null_rows = np.nonzero(~valid)[0]
    rows = np.nonzero(valid)[0]
    c = codes.fill_null(0).to_numpy(zero_copy_only=False)[rows]
    m = len(distinct)
    counts = np.bincount(c, minlength=m)
    # each value's rows, ascending (a stable sort of small codes is numpy's radix sort)
    grouped = rows[np.argsort(c.astype(np.uint16) if m <= 0xFFFF else c, kind="stable")]
    first = (np.cumsum(counts) - counts).astype(np.int64)
    # Java's writer adds each non-null row with computeIfAbsent: a call after the last new value
    # grows a table whose threshold that value passed
    last_new = int(grouped[first].max()) if m else -1
    order, exact = hash_map_order(_hash_codes(distinct, dt), compute_if_absent=True,
                                  called_after_last=bool(len(rows)) and last_new < int(rows[-1]))
    null_bytes = _roaring(null_rows) if len(null_rows) > 1 else b""
    multi = counts > 1
    in_order = order[multi[order]]  # values with a bitmap, in the order their bitmaps are written
    body, sizes = _bitmaps(grouped, first[in_order], counts[in_order])
    offsets = np.empty(m, np.int64)
    offsets[in_order] = len(null_bytes) + np.cumsum(sizes) - sizes
    offsets[~multi] = -1 - grouped[first[~multi]]
    head = struct.pack(">BiiB", VERSION_1, n, m, len(null_rows) > 0)
    if len(null_rows):
        head += struct.pack(">i", -1 - int(null_rows[0]) if len(null_rows) == 1 else 0)
    meta = _entries(distinct.take(pa.array(order)), dt, offsets[order])
    return head + meta + null_bytes + body, exact


class BitmapIndexBuilder:
    """One column's bitmap index in one data file, fed chunk by chunk (the keys are kept until
    `finish`: as Java's writer keeps a bitmap per value, memory grows with the file's rows)."""

    def __init__(self, dt: DataType) -> None:
        if (why := unsupported_reason(dt)) is not None:
            raise UnsupportedFeatureError(why)
        self.type = dt
        self._keys: list[pa.Array] = []

    def add(self, values: pa.Array | pa.ChunkedArray) -> None:
        """Index the next rows of the file."""
        self._keys.append(index_keys(values, self.type))

    def finish(self) -> bytes:
        """The payload (version 1)."""
        keys = (pa.concat_arrays(self._keys) if self._keys
                else index_keys(pa.array([], to_arrow(self.type)), self.type))
        return write_bitmap_index(keys, self.type)[0]


_INT = struct.Struct(">i")


def _string_entries(payload: bytes, pos: int, m: int) -> tuple[pa.Array, np.ndarray, int]:
    """(keys, offsets, end) of ``m`` string entries (``int`` length, bytes, ``int`` offset) from
    ``pos``. Each entry's start depends on the one before: only that walk is a Python step per
    value; the keys and offsets are then gathered by numpy."""
    unpack = _INT.unpack_from
    walk: list[int] = []
    step = walk.append
    for _ in range(m):  # ~0.14 us a value: 430,000 values in 0.06 CPU s
        step(pos)
        pos += 8 + unpack(payload, pos)[0]
    starts = np.array(walk, np.int64)
    if pos > len(payload):
        raise InvalidDataError(f"string entries run past the index ({pos} > {len(payload)} bytes)")
    data = np.frombuffer(payload, np.uint8)
    be = np.array([24, 16, 8, 0], np.uint32)
    lengths = (data[starts[:, None] + np.arange(4)].astype(np.uint32) << be).sum(axis=1).astype(np.int64)
    if (lengths < 0).any() or (lengths > len(payload)).any():
        raise InvalidDataError("a string entry has a negative or oversized length")
    ends = starts + 4 + lengths
    offsets = (data[ends[:, None] + np.arange(4)].astype(np.uint32) << be).sum(axis=1).astype(np.uint32)
    total = int(lengths.sum())
    value_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    src = np.repeat(starts + 4 - value_offsets[:-1], lengths) + np.arange(total)
    keys = pa.Array.from_buffers(pa.binary(), m, [None, pa.py_buffer(value_offsets), pa.py_buffer(data[src])])
    return keys, offsets.view(np.int32).astype(np.int64), pos


@dataclass(frozen=True)
class BitmapIndex:
    """A parsed version-1 bitmap index: the rows of each value, looked up without a Python loop."""

    type: DataType
    row_count: int
    null_offset: int | None  # None: no null in the file
    keys: pa.Array
    offsets: np.ndarray
    body: bytes
    bitmap_starts: np.ndarray  # where each bitmap of the body starts, ascending

    @classmethod
    def parse(cls, payload: bytes, dt: DataType, what: str = "bitmap index") -> BitmapIndex:
        """The index of a payload (Java's or ours) of a column of type ``dt``."""
        if not payload:
            raise InvalidDataError(f"{what} is empty")
        if payload[0] != VERSION_1:
            raise UnsupportedFeatureError(f"{what} has version {payload[0]}; lake_assets reads version 1")
        if unsupported_reason(dt) is not None:
            raise UnsupportedFeatureError(f"{what}: {unsupported_reason(dt)}")
        try:
            _, rows, m, has_null = struct.unpack_from(">BiiB", payload)
            pos = 10
            null_offset = None
            if has_null:
                (null_offset,) = struct.unpack_from(">i", payload, pos)
                pos += 4
            if m < 0 or rows < 0:
                raise InvalidDataError(f"{what} has {m} values in {rows} rows")
            if isinstance(dt, _STRINGS):
                keys, offs, pos = _string_entries(payload, pos, m)
            else:
                rec = np.frombuffer(payload, np.dtype([("k", _FIXED[type(dt)]), ("o", ">i4")]), m, pos)
                pos += rec.nbytes
                keys = pa.array(rec["k"].astype(rec["k"].dtype.newbyteorder("=")))
                offs = rec["o"].astype(np.int64)
        except (struct.error, ValueError) as exc:
            raise InvalidDataError(f"{what} is truncated ({exc})") from None
        # Java writes the bitmaps in entry order, so these are sorted already (a cheap sort then)
        return cls(dt, rows, null_offset, keys, offs, payload[pos:], np.sort(offs[offs >= 0]))

    def _bitmap(self, offset: int) -> BitMap:
        if offset < 0:
            return BitMap([-1 - offset])
        if offset >= len(self.body):
            raise InvalidDataError(f"bitmap at offset {offset} lies outside the index")
        # version 1 records no lengths: a bitmap ends where the next one starts (the body holds
        # them back to back), which spares copying the rest of the body for each lookup
        at = int(np.searchsorted(self.bitmap_starts, offset, side="right"))
        end = int(self.bitmap_starts[at]) if at < len(self.bitmap_starts) else len(self.body)
        try:
            return BitMap.deserialize(self.body[offset:end])
        except (ValueError, OverflowError) as exc:
            raise InvalidDataError(f"the bitmap at offset {offset} does not parse ({exc})") from None

    def rows_in(self, literals: pa.Array) -> BitMap:
        """The rows whose value is one of ``literals`` (an Arrow array of the column's type; a
        null literal stands for the null rows, as in Java's reader)."""
        keys = index_keys(literals, self.type)
        out = BitMap()
        if keys.null_count and self.null_offset is not None:
            out |= self._bitmap(self.null_offset)
        wanted = keys.drop_null()
        if len(wanted):
            hit = np.nonzero(pc.is_in(self.keys, value_set=wanted).to_numpy(zero_copy_only=False))[0]
            for i in hit.tolist():
                out |= self._bitmap(int(self.offsets[i]))
        return out

    def all_rows(self) -> BitMap:
        """Every row the index covers (``flip`` of Java's NOT IN runs over these)."""
        return BitMap(range(self.row_count))
