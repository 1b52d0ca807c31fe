"""Paimon's bitmap file index (``file-index.bitmap.*``, docs/format.md §7.6), version 1, in numpy.

The payload lists, for every distinct value of a column in a data file, the rows holding it: a
roaring bitmap of their positions, or the one position itself when it is alone. Java 0.9 writes
version 1 and reads nothing newer; Paimon 1.x writes version 2 by default but reads version 1 too,
so lake_assets writes version 1, the same bytes as Java 0.9's ``BitmapFileIndex`` for the same
rows (values in its HashMap's order, `lake_assets.formats.java_hash_map`), and reads versions 1
and 2 (`lake_assets.formats.bitmap_index_v2`).

Values are keyed as Java keys them (``BitmapFileIndex.getValueMapper``, ``BitmapFileIndexMeta``):
integers, DATE (days) and TIME (millis of day) as themselves, FLOAT and DOUBLE by their bits with
one canonical NaN (``Float.equals``), TIMESTAMP(p) as epoch millis for p <= 3 else epoch micros,
CHAR / VARCHAR as their UTF-8 bytes. BOOLEAN, BINARY, DECIMAL and nested types have no layout
Java 0.9 can read (`unsupported_reason`; BOOLEAN has one from Paimon 1.1).
"""

from __future__ import annotations

import array
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap, BitMap64

from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.bitmap_index_layout import bitmaps, entries, read_string_entries, roaring
from lake_assets.formats.bitmap_index_v2 import DEFAULT_BLOCK_SIZE, VERSION_2, java_order, parse_v2, v2_meta
from lake_assets.formats.fast_hash import bytes_of, epoch_values, nested_type_refusal
from lake_assets.formats.java_hash_map import binary_string_hash_codes, hash_map_order, long_hash_codes
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
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

BITMAP = "bitmap"
VERSION_1 = 1
_STRINGS = (CharType, VarCharType)
# the big-endian width Java's DataOutput gives each key type
_FIXED: dict[type, str] = {TinyIntType: ">i1", SmallIntType: ">i2", IntType: ">i4", DateType: ">i4",
                           TimeType: ">i4", BigIntType: ">i8", TimestampType: ">i8",
                           LocalZonedTimestampType: ">i8", FloatType: ">i4", DoubleType: ">i8"}
_MAX_ROWS = 2**31 - 1
_PROVISIONAL = 1 << 31  # ids from here on: a batch's values not yet numbered among the file's
_REPEATS = 8  # a batch whose values repeat less on average keeps its rows' ids, not bitmaps


def unsupported_reason(dt: DataType) -> str | None:
    """Why no bitmap index of a column of type ``dt`` can be written for Paimon 0.9 readers, or None."""
    if isinstance(dt, BooleanType):
        return ("Paimon 0.9's bitmap index has no BOOLEAN layout: its writer fails on a value, and its reader (and "
                "1.0's) keys an index of one, as Paimon 1.1+ writes it (apache/paimon#5013), as TINYINT, so no "
                "BOOLEAN literal finds a row and files that match would be skipped; lake_assets writes indexes "
                "Paimon 0.9 reads")
    if not isinstance(dt, _STRINGS) and type(dt) not in _FIXED:
        return (f"Paimon's bitmap index does not support type {dt}: no Paimon version writes or reads one "
                "(0.9 through 1.x's writers fail on it)")
    return None


def java_refusal(dt: DataType) -> str | None:
    """Java HEAD's message when its bitmap index cannot key a column of type ``dt``
    (``BitmapTypeVisitor``, which ``BitmapFileIndexFactory.validate`` calls at create and ALTER from
    Paimon 2.0), or None. BOOLEAN passes, as in Java (`unsupported_reason` refuses its writes)."""
    if isinstance(dt, _STRINGS) or type(dt) in _FIXED or isinstance(dt, BooleanType):
        return None
    if isinstance(dt, (BinaryType, VarBinaryType)):
        return "Does not support type binary"
    if isinstance(dt, DecimalType):
        return "Does not support decimal"
    return nested_type_refusal(dt) or f"Does not support type {dt}"


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


def write_bitmap_index(keys: pa.Array, dt: DataType) -> tuple[bytes, bool]:
    """(version-1 payload of a file whose column has the `index_keys` ``keys``, row by row;
    whether its value order is exactly Java's (see `hash_map_order`))."""
    builder = BitmapIndexBuilder(dt)
    builder.add_keys(keys)
    return builder.payload()


class BitmapIndexBuilder:
    """One column's bitmap index in one data file, fed chunk by chunk.

    As Java's writer keeps a map value -> RoaringBitmap32, this keeps the file's distinct keys (in
    order of first occurrence: Java's insertion order) and one 64-bit roaring bitmap of ``value id
    << 32 | row`` for the non-null rows, plus a bitmap of the null rows: memory grows with the
    distinct values and with what their bitmaps hold (little for runs of a value), not with the
    width of the values. A batch whose values repeat less than `_REPEATS` times on average (a
    high-cardinality column, where the bitmap would spend a container on each value) keeps its
    rows' ids instead, 4 bytes a row. A batch's values are looked up among the file's while those
    are not many more than the batch's rows; past that a batch's distinct values are kept as they
    are, under provisional ids (`_PROVISIONAL` on), and merged into the file's once they add up to
    as many, so that no batch pays for hashing all the values before it. `finish` lays the bitmaps
    out from the (id, row) pairs in id-then-row order, which needs about 24 bytes per non-null row
    of the file for as long as it runs."""

    def __init__(self, dt: DataType, version: int = VERSION_1, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        if (why := unsupported_reason(dt)) is not None:
            raise UnsupportedFeatureError(why)
        if version not in (VERSION_1, VERSION_2):
            raise UnsupportedFeatureError(f"bitmap index version {version} is not one Paimon writes (1 or 2)")
        self.type = dt
        self.version, self.block_size = version, block_size
        self._distinct = index_keys(pa.array([], to_arrow(dt)), dt)
        self._pending: list[pa.Array] = []  # batches' distinct values under provisional ids
        self._pending_count = 0
        self._merged_ids: list[np.ndarray] = []  # the file's ids of provisional ids already merged
        self._pairs = BitMap64()
        self._row_ids: list[np.ndarray] = []  # per high-cardinality batch: each row's id (-1: null)
        self._row_starts: list[int] = []  # ... and the row it starts at
        self._nulls = BitMap()
        self._rows = 0
        self._last_valid = -1  # the last non-null row

    def add(self, values: pa.Array | pa.ChunkedArray) -> None:
        """Index the next rows of the file."""
        self.add_keys(index_keys(values, self.type))

    def add_keys(self, keys: pa.Array) -> None:
        """Index the next rows of the file, given as their `index_keys`."""
        n, start = len(keys), self._rows
        if start + n > _MAX_ROWS:
            raise UnsupportedFeatureError(f"a bitmap index covers at most {_MAX_ROWS} rows (Java numbers them "
                                          f"with an int); this file would have {start + n}")
        self._rows += n
        encoded = pc.dictionary_encode(keys)  # batch ids in order of first occurrence
        local, codes = encoded.dictionary, encoded.indices
        rows = np.arange(n, dtype=np.int64)
        if codes.null_count:
            valid = codes.is_valid().to_numpy(zero_copy_only=False)
            self._nulls.update(array.array("I", (rows[~valid] + start).astype(np.uint32).tobytes()))
            rows = rows[valid]
        if not len(rows):
            return
        c = codes.drop_null().to_numpy(zero_copy_only=False).astype(np.int64)
        if len(self._distinct) + self._pending_count <= max(n, 4096):
            self._merge()
            # the file's ids of the batch's values: known ones looked up, new ones numbered on
            known = pc.index_in(local, value_set=self._distinct)
            fresh = np.nonzero(known.is_null().to_numpy(zero_copy_only=False))[0]
            ids = known.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            if len(fresh):
                ids[fresh] = len(self._distinct) + np.arange(len(fresh))
                self._distinct = pa.concat_arrays([self._distinct, local.take(pa.array(fresh))])
        else:
            ids = _PROVISIONAL + sum(len(m) for m in self._merged_ids) + self._pending_count + np.arange(len(local))
            self._pending.append(local)
            self._pending_count += len(local)
            if self._pending_count >= len(self._distinct):
                self._merge()
        self._last_valid = start + int(rows[-1])
        if len(local) * _REPEATS > len(rows):
            row_ids = np.full(n, -1, np.int64)
            row_ids[rows] = ids[c]
            self._row_ids.append(row_ids.astype(np.uint32))  # -1 as 0xFFFFFFFF
            self._row_starts.append(start)
            return
        row_id = ids[c]
        # roaring adds sorted values container by container: 2-3x faster than in row order (rows
        # are ascending already: a stable sort by id, numpy's radix sort for ids under 65536)
        if int(row_id.max()) <= 0xFFFF:
            by_id = np.argsort(row_id.astype(np.uint16), kind="stable")
            row_id, rows = row_id[by_id], rows[by_id]
        pairs = row_id.astype(np.uint64) << np.uint64(32) | (rows + start).astype(np.uint64)
        if len(pairs) > 1 and (pairs[1:] < pairs[:-1]).any():
            pairs.sort()
        self._pairs.update(array.array("Q", pairs.tobytes()))
        # runs of a value (a clustered or sorted column) then take 4 bytes each, not a bitset
        self._pairs.run_optimize()

    def _merge(self) -> None:
        """Number the pending values among the file's (the file's first, then each batch's in
        order: order of first occurrence still)."""
        if not self._pending:
            return
        encoded = pc.dictionary_encode(pa.concat_arrays([self._distinct, *self._pending]))
        self._merged_ids.append(encoded.indices.to_numpy(zero_copy_only=False)[len(self._distinct):]
                                .astype(np.int32))
        self._distinct = encoded.dictionary
        self._pending, self._pending_count = [], 0

    def held_bytes(self) -> int:
        """About what the builder holds: its distinct keys and its bitmaps' containers (one per
        value and 65536-row block it has rows in), each with ~48 bytes of bookkeeping."""
        held = (self._distinct.nbytes + sum(p.nbytes for p in self._pending) + 4 * sum(map(len, self._merged_ids))
                + sum(r.nbytes for r in self._row_ids))
        for bm in (self._pairs, self._nulls):
            stats = bm.get_statistics()
            held += (stats["n_bytes_array_containers"] + stats["n_bytes_run_containers"]
                     + stats["n_bytes_bitset_containers"] + 48 * stats["n_containers"])
        return held

    def finish(self) -> bytes:
        """The payload (in the builder's version)."""
        return self.payload()[0]

    def payload(self) -> tuple[bytes, bool]:
        """(the payload; whether its value order is exactly Java's, see `hash_map_order`)."""
        self._merge()
        dt, distinct, m = self.type, self._distinct, len(self._distinct)
        pairs = np.frombuffer(self._pairs.to_array(), np.uint64)  # ascending: by id, then row
        if self._row_ids:
            kept = [pairs]
            for row_ids, start in zip(self._row_ids, self._row_starts, strict=True):
                valid = np.nonzero(row_ids != 0xFFFFFFFF)[0]
                kept.append(row_ids[valid].astype(np.uint64) << np.uint64(32) | (valid + start).astype(np.uint64))
            pairs = np.concatenate(kept)
            del kept
        ids = (pairs >> np.uint64(32)).astype(np.int64)
        provisional = ids >= _PROVISIONAL
        if provisional.any():
            ids[provisional] = np.concatenate(self._merged_ids)[ids[provisional] - _PROVISIONAL]
            pairs = ids.astype(np.uint64) << np.uint64(32) | (pairs & np.uint64(0xFFFFFFFF))
        if len(pairs) > 1 and (pairs[1:] < pairs[:-1]).any():
            pairs = np.sort(pairs)  # each value's rows, ascending
            ids = (pairs >> np.uint64(32)).astype(np.int64)
        grouped = (pairs & np.uint64(0xFFFFFFFF)).astype(np.int64)
        del pairs
        counts = np.bincount(ids, minlength=m)
        del ids
        first = (np.cumsum(counts) - counts).astype(np.int64)
        # Java's writer adds each non-null row with computeIfAbsent: a call after the last new value
        # grows a table whose threshold that value passed
        last_new = int(grouped[first].max()) if m else -1
        order, exact = hash_map_order(_hash_codes(distinct, dt), compute_if_absent=True,
                                      called_after_last=last_new < self._last_valid)
        null_rows = np.frombuffer(self._nulls.to_array(), np.uint32).astype(np.int64)
        null_bytes = roaring(null_rows) if len(null_rows) > 1 else b""
        multi = counts > 1
        in_order = order[multi[order]]  # values with a bitmap, in the order their bitmaps are written
        body, sizes = bitmaps(grouped, first[in_order], counts[in_order])
        offsets = np.empty(m, np.int64)
        offsets[in_order] = len(null_bytes) + np.cumsum(sizes) - sizes
        offsets[~multi] = -1 - grouped[first[~multi]]
        key_dtype = None if isinstance(dt, _STRINGS) else _FIXED[type(dt)]
        if self.version == VERSION_2:
            # entries in Java's comparator order; each bitmap's length, -1 for a value in one row
            lengths = np.full(m, -1, np.int64)
            lengths[in_order] = sizes
            by_value = java_order(distinct, key_dtype, isinstance(dt, (FloatType, DoubleType)))
            null_size = len(roaring(null_rows)) if len(null_rows) else 0
            meta = v2_meta(self._rows, m, null_rows, null_size, distinct.take(pa.array(by_value)), key_dtype,
                           offsets[by_value], lengths[by_value], self.block_size)
            return meta + null_bytes + body, exact
        head = struct.pack(">BiiB", VERSION_1, self._rows, m, len(null_rows) > 0)
        if len(null_rows):
            head += struct.pack(">i", -1 - int(null_rows[0]) if len(null_rows) == 1 else 0)
        meta = entries(distinct.take(pa.array(order)), key_dtype, offsets[order])
        return head + meta + null_bytes + body, exact


@dataclass(frozen=True)
class BitmapIndex:
    """A parsed bitmap index (version 1, or 2: `lake_assets.formats.bitmap_index_v2`): the rows of
    each value, looked up without a Python loop."""

    type: DataType
    row_count: int
    null_offset: int | None  # None: no null in the file
    keys: pa.Array
    offsets: np.ndarray
    body: bytes
    bitmap_starts: np.ndarray  # where each bitmap of the body starts, ascending
    lengths: np.ndarray | None = None  # each value's bitmap's length (version 2); None: up to the next
    null_length: int = -1  # the null rows' bitmap's length (version 2)

    @classmethod
    def parse(cls, payload: bytes, dt: DataType, what: str = "bitmap index") -> BitmapIndex:
        """The index of a payload (Java's or ours) of a column of type ``dt``."""
        if not payload:
            raise InvalidDataError(f"{what} is empty")
        if payload[0] not in (VERSION_1, VERSION_2):
            raise UnsupportedFeatureError(f"{what} has version {payload[0]}; lake_assets reads versions 1 and 2")
        if unsupported_reason(dt) is not None:
            raise UnsupportedFeatureError(f"{what}: {unsupported_reason(dt)}")
        if payload[0] == VERSION_2:
            v2 = parse_v2(payload, None if isinstance(dt, _STRINGS) else _FIXED[type(dt)], what)
            offs = v2.offsets
            return cls(dt, v2.row_count, v2.null_offset, v2.keys, offs, payload[v2.body_start:],
                       np.sort(offs[offs >= 0]), v2.lengths, v2.null_length)
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
                keys, offs, pos = read_string_entries(payload, pos, m)
                offs = offs[:, 0]
            else:
                rec = np.frombuffer(payload, np.dtype([("k", _FIXED[type(dt)]), ("o", ">i4")]), m, pos)
                pos += rec.nbytes
                keys = pa.array(rec["k"].astype(rec["k"].dtype.newbyteorder("=")))
                offs = rec["o"].astype(np.int64)
        except (struct.error, ValueError) as exc:
            raise InvalidDataError(f"{what} is truncated ({exc})") from None
        # Java writes the bitmaps in entry order, so these are sorted already (a cheap sort then)
        return cls(dt, rows, null_offset, keys, offs, payload[pos:], np.sort(offs[offs >= 0]))

    def _bitmap(self, offset: int, length: int = -1) -> BitMap:
        if offset < 0:
            return BitMap([-1 - offset])
        if offset >= len(self.body) or offset + length > len(self.body):
            raise InvalidDataError(f"bitmap at offset {offset} lies outside the index")
        if length >= 0:
            end = offset + length
        else:
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
            out |= self._bitmap(self.null_offset, self.null_length)
        wanted = keys.drop_null()
        if len(wanted):
            hit = np.nonzero(pc.is_in(self.keys, value_set=wanted).to_numpy(zero_copy_only=False))[0]
            for i in hit.tolist():
                out |= self._bitmap(int(self.offsets[i]), -1 if self.lengths is None else int(self.lengths[i]))
        return out

    def all_rows(self) -> BitMap:
        """Every row the index covers (``flip`` of Java's NOT IN runs over these)."""
        return BitMap(range(self.row_count))
