"""Paimon 1.x's bit-sliced index (``file-index.bsi.*``, docs/format.md §7.6), version 1.

The definition is Java's ``BitSliceIndexBitmapFileIndex`` and ``BitSliceIndexRoaringBitmap``
(Paimon HEAD; Java 0.9 has neither). Each value of a column is mapped to a long (``getValueMapper``):
TINYINT to BIGINT, DATE (days) and TIME (millis of day) as themselves, TIMESTAMP(p) and
TIMESTAMP_LTZ(p) as epoch millis for p <= 3 else epoch micros (floored), DECIMAL as its unscaled
long. Non-negative values go to a "positive" bit-sliced index, negative ones by their magnitude to a
"negative" one. The payload, big-endian as Java's ``DataOutput`` writes it::

    byte version (1) | int row count (nulls included)
    | bool has positive | [positive slices] | bool has negative | [negative slices]

and each slices part::

    byte version (1) | long min | long max | roaring ebm (the rows holding a value)
    | int slice count | that many roaring bitmaps (slice i: the rows whose value - min has bit i set)

with every roaring bitmap run-optimized in the portable format (``RoaringBitmap32.serialize``).
Java's writer starts its min and max at 0 (``StatsCollectList``), so min is always 0 and the slice
count is the bit length of the largest magnitude; BIGINT's ``Long.MIN_VALUE`` has no magnitude and
fails Java's writer (`BsiIndexBuilder` refuses it alike). A builder keeps only the slices' bitmaps,
never a file's values (Java's ``StatsCollectList`` holds them all). Reading answers ``=``, ``<``,
``<=``, ``>``, ``>=``, ``in``, ``!=`` and ``not in`` with the rows that match, as Java's reader does
(O'Neil's comparison over the slices; a null row matches none, ``!=`` and ``not in`` included, as
in lake_assets' filters, `lake_assets.predicate`), but for TIMESTAMP(7..9) (`term_keys`).
pypaimon-rust 0.4 writes the same layout without ``runOptimize`` (tests/interop/test_bsi_interop.py).
"""

from __future__ import annotations

import array
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lake_assets.errors import InvalidDataError
from lake_assets.formats.fast_hash import epoch_values
from lake_assets.spec.data_types import (
    BigIntType,
    DataType,
    DateType,
    DecimalType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
)

BSI = "bsi"
VERSION_1 = 1
_INTEGERS = (TinyIntType, SmallIntType, IntType, BigIntType, DateType, TimeType)
_TIMESTAMPS = (TimestampType, LocalZonedTimestampType)
_LONG_MIN = -(2**63)
_MAX_ROWS = 2**31 - 1
_MAX_DECIMAL_PRECISION = 18  # unscaled values of up to 18 digits always fit a long
_RANGE_OPS = ("<", "<=", ">", ">=")
_EQUAL_OPS = ("=", "==", "in")
_NOT_EQUAL_OPS = ("!=", "not in")
BSI_OPS = _EQUAL_OPS + _NOT_EQUAL_OPS + _RANGE_OPS


def keyable_type(dt: DataType) -> bool:
    """Whether Paimon's bsi index keys values of type ``dt`` at all (its ``getValueMapper``, which
    ``BitSliceIndexBitmapFileIndexFactory.validate`` calls at create and ALTER in Paimon 1.x)."""
    return isinstance(dt, (*_INTEGERS, *_TIMESTAMPS, DecimalType))


def java_refusal(dt: DataType) -> str | None:
    """Java HEAD's message when its bsi index cannot key a column of type ``dt`` at all
    (``getValueMapper``, which ``BitSliceIndexBitmapFileIndexFactory.validate`` calls at create and
    ALTER), or None; DECIMAL of any precision passes, as in Java."""
    if keyable_type(dt):
        return None
    return (f"{dt.copy(nullable=True)} type is not support to build bsi index yet (Paimon's bsi index keys "
            "TINYINT, SMALLINT, INT, BIGINT, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ and DECIMAL only)")


def unsupported_reason(dt: DataType) -> str | None:
    """Why no bsi index of a column of type ``dt`` is written, or None."""
    if isinstance(dt, DecimalType) and dt.precision > _MAX_DECIMAL_PRECISION:
        return (f"a bsi index keys DECIMAL by its unscaled long: {dt} holds values that do not fit one (Paimon's "
                "writer fails on such a value), and lake_assets indexes DECIMAL up to precision 18 only")
    if not keyable_type(dt):
        return (f"Paimon's bsi index does not support type {dt} (its writer fails on it): only TINYINT, SMALLINT, "
                "INT, BIGINT, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ and DECIMAL")
    return None


def bsi_keys(values: pa.Array | pa.ChunkedArray, dt: DataType) -> tuple[np.ndarray, np.ndarray]:
    """(the longs Java's ``getValueMapper`` gives ``values``, whether each is non-null); a null's
    long is 0 and meaningless."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    valid = np.ones(len(arr), bool) if not arr.null_count else arr.is_valid().to_numpy(zero_copy_only=False)
    if arr.null_count and not pa.types.is_decimal(arr.type):  # a decimal's words are read as they lie
        arr = pc.fill_null(arr, pa.scalar(0, arr.type))
    if isinstance(dt, _TIMESTAMPS):
        keys = epoch_values(arr, "ms" if dt.precision <= 3 else "us")
    elif isinstance(dt, DecimalType):
        if not pa.types.is_decimal128(arr.type):
            raise InvalidDataError(f"A bsi index of {dt} needs decimal128 values, not {arr.type}")
        # the unscaled value: the low 8 bytes (little-endian) of each 16-byte two's complement
        words = np.frombuffer(arr.buffers()[1], dtype="<i8")
        keys = words[2 * arr.offset: 2 * (arr.offset + len(arr)): 2]
    elif isinstance(dt, (DateType, TimeType)):
        if pa.types.is_time64(arr.type):  # millis of day, floored, as Paimon's TIME values
            per_ms = 1000 if arr.type.unit == "us" else 1_000_000
            keys = arr.view(pa.int64()).to_numpy(zero_copy_only=False) // per_ms
        elif pa.types.is_time32(arr.type) and arr.type.unit == "s":
            keys = arr.view(pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64) * 1000
        else:
            keys = arr.view(pa.int32()).to_numpy(zero_copy_only=False)
    else:
        keys = arr.to_numpy(zero_copy_only=False)
    return np.asarray(keys).astype(np.int64, copy=False), valid


def _bitmap(rows: np.ndarray) -> BitMap:
    return BitMap(array.array("I", rows.astype(np.uint32, copy=False).tobytes()))


def _roaring(bm: BitMap) -> bytes:
    # RoaringBitmap32.serialize: run-optimized, portable format
    bm.run_optimize()
    return bytes(bm.serialize())


class _SlicesBuilder:
    """One sign's bit-sliced index as Java's ``Appender`` builds it (min 0)."""

    def __init__(self) -> None:
        self.max = 0
        self.ebm = BitMap()
        self.slices: list[BitMap] = []

    def add(self, rows: np.ndarray, magnitudes: np.ndarray) -> None:
        if not len(rows):
            return
        self.max = max(self.max, int(magnitudes.max()))
        self.ebm |= _bitmap(rows)
        while len(self.slices) < self.max.bit_length():
            self.slices.append(BitMap())
        for bit, bm in enumerate(self.slices):
            # the rows whose value has this bit set (one numpy pass per bit, not per row)
            hit = rows[(magnitudes >> bit) & 1 == 1]
            if len(hit):
                bm |= _bitmap(hit)

    def serialize(self) -> bytes:
        head = struct.pack(">bqq", VERSION_1, 0, self.max)
        # the slice count is 64 - numberOfLeadingZeros(max - min)
        return (head + _roaring(self.ebm) + struct.pack(">i", len(self.slices))
                + b"".join(_roaring(s) for s in self.slices))


class BsiIndexBuilder:
    """The bsi index of one column of one data file, fed chunk by chunk in row order."""

    def __init__(self, dt: DataType, column: str = "") -> None:
        self.dt, self.column = dt, column
        self.rows = 0
        self.positive = _SlicesBuilder()
        self.negative = _SlicesBuilder()

    def add(self, values: pa.Array | pa.ChunkedArray) -> None:
        """Index the next rows' values (nulls count as rows without a value)."""
        keys, valid = bsi_keys(values, self.dt)
        if self.rows + len(keys) > _MAX_ROWS:
            raise InvalidDataError(f"A bsi index counts rows in a Java int: over {_MAX_ROWS} rows in one file")
        if (valid & (keys == _LONG_MIN)).any():
            raise InvalidDataError(
                f"Cannot write a bsi index of column {self.column!r} ({self.dt}): value {_LONG_MIN} has no bsi "
                "magnitude (Paimon's writer fails on it too); drop the column from file-index.bsi.columns")
        ids = np.arange(self.rows, self.rows + len(keys), dtype=np.int64)
        negative = valid & (keys < 0)
        positive = valid & ~negative
        self.positive.add(ids[positive], keys[positive])
        self.negative.add(ids[negative], -keys[negative])
        self.rows += len(keys)

    def finish(self) -> bytes:
        """The payload (see the module docstring)."""
        out = bytearray(struct.pack(">bi", VERSION_1, self.rows))
        for side in (self.positive, self.negative):
            out += b"\x01" + side.serialize() if side.ebm else b"\x00"
        return bytes(out)


# ---------------------------------------------------------------- reading


def _portable_size(data: bytes, pos: int, what: str) -> int:
    """The length of the portable-format roaring bitmap at ``data[pos:]`` (CRoaring reads a
    bitmap without telling how many bytes it took)."""
    (cookie,) = struct.unpack_from("<I", data, pos)
    if cookie & 0xFFFF == 12347:  # with run containers
        n = (cookie >> 16) + 1
        runs = data[pos + 4: pos + 4 + (n + 7) // 8]
        at = pos + 4 + (n + 7) // 8
        headers = np.frombuffer(data, "<u2", 2 * n, at).reshape(n, 2)
        at += 4 * n + (4 * n if n >= 4 else 0)
        for i in range(n):  # per container (at most one per 65536 rows), not per row
            if runs[i // 8] >> (i % 8) & 1:
                (nruns,) = struct.unpack_from("<H", data, at)
                at += 2 + 4 * nruns
            else:
                card = int(headers[i, 1]) + 1
                at += 8192 if card > 4096 else 2 * card
        return at - pos
    if cookie == 12346:
        (n,) = struct.unpack_from("<I", data, pos + 4)
        cards = np.frombuffer(data, "<u2", 2 * n, pos + 8).reshape(n, 2)[:, 1].astype(np.int64) + 1
        return 8 + 8 * n + int(np.where(cards > 4096, 8192, 2 * cards).sum())
    raise InvalidDataError(f"{what}: not a roaring bitmap (cookie {cookie})")


def _read_roaring(data: bytes, pos: int, what: str) -> tuple[BitMap, int]:
    size = _portable_size(data, pos, what)
    if pos + size > len(data):
        raise InvalidDataError(f"{what} is truncated")
    return BitMap.deserialize(data[pos: pos + size]), pos + size


@dataclass(frozen=True)
class BitSlices:
    """One sign's bit-sliced index: values in [min, max], the rows holding one (``ebm``), and
    slice i: the rows whose value - min has bit i set."""

    min: int
    max: int
    ebm: BitMap
    slices: tuple[BitMap, ...]

    def compare(self, op: str, value: int) -> BitMap:
        """The rows whose value ``op`` ``value`` (``BitSliceIndexRoaringBitmap.compare``; Python
        ints, so no long overflows)."""
        lo, hi = self.min, self.max
        everything, nothing = BitMap(self.ebm), BitMap()
        if op == "=" and (value < lo or value > hi):
            return nothing
        if op == "<" and (value > hi or value <= lo):
            return everything if value > hi else nothing
        if op == "<=" and (value >= hi or value < lo):
            return everything if value >= hi else nothing
        if op == ">" and (value < lo or value >= hi):
            return everything if value < lo else nothing
        if op == ">=" and (value <= lo or value > hi):
            return everything if value <= lo else nothing
        # O'Neil's comparison, from the highest slice down
        p = value - lo
        gt, lt, eq = BitMap(), BitMap(), BitMap(self.ebm)
        for i in range(len(self.slices) - 1, -1, -1):
            s = self.slices[i]
            if p >> i & 1:
                lt = lt | (eq - s)
                eq = eq & s
            else:
                gt = gt | (eq & s)
                eq = eq - s
        if p >> len(self.slices):  # a value wider than the slices (min/max inconsistent): no row equals it
            lt, eq = lt | eq, BitMap()
        return {"=": eq, "<": lt, "<=": lt | eq, ">": gt, ">=": gt | eq}[op]


_EMPTY = BitSlices(0, 0, BitMap(), ())


def _read_slices(data: bytes, pos: int, what: str) -> tuple[BitSlices, int]:
    version, lo, hi = struct.unpack_from(">bqq", data, pos)
    if version != VERSION_1:
        raise InvalidDataError(f"{what} has bit-sliced index version {version}; lake_assets reads {VERSION_1}")
    if lo < 0 or lo > hi:
        raise InvalidDataError(f"{what}: bad bounds [{lo}, {hi}]")
    ebm, pos = _read_roaring(data, pos + 17, what)
    (count,) = struct.unpack_from(">i", data, pos)
    if not 0 <= count <= 64:
        raise InvalidDataError(f"{what}: {count} slices")
    pos += 4
    slices = []
    for _ in range(count):
        bm, pos = _read_roaring(data, pos, what)
        slices.append(bm)
    return BitSlices(lo, hi, ebm, tuple(slices)), pos


@dataclass(frozen=True)
class BsiIndex:
    """A parsed bsi index: the rows each term matches, as Java's reader answers."""

    rows: int
    positive: BitSlices
    negative: BitSlices

    @classmethod
    def parse(cls, payload: bytes, what: str = "bsi index") -> BsiIndex:
        """Read a payload (Java's, pypaimon-rust's or ours)."""
        try:
            version, rows = struct.unpack_from(">bi", payload)
            if version != VERSION_1:
                raise InvalidDataError(f"{what} has version {version}; lake_assets reads version {VERSION_1}")
            pos = 5
            sides = []
            for _ in range(2):
                present = payload[pos]
                pos += 1
                if present:
                    side, pos = _read_slices(payload, pos, what)
                else:
                    side = _EMPTY
                sides.append(side)
        except (struct.error, IndexError, ValueError) as exc:
            raise InvalidDataError(f"{what} is truncated or malformed ({exc})") from None
        return cls(rows, sides[0], sides[1])

    def not_null(self) -> BitMap:
        """The rows holding a value."""
        return self.positive.ebm | self.negative.ebm

    def _compare(self, op: str, key: int) -> BitMap:
        # Java's reader: a negative key is looked up by its magnitude among the negative rows
        pos, neg = self.positive, self.negative
        if op == "=":
            return neg.compare("=", -key) if key < 0 else pos.compare("=", key)
        if op in ("<", "<="):
            if key < 0:
                return neg.compare(">" if op == "<" else ">=", -key)
            return pos.compare(op, key) | neg.ebm
        if key < 0:  # > and >=
            return pos.ebm | neg.compare("<" if op == ">" else "<=", -key)
        return pos.compare(op, key)

    def rows_matching(self, op: str, keys: Sequence[int]) -> BitMap:
        """The rows whose value satisfies ``value op key`` (for ``in`` / ``not in``: any / none of
        ``keys``). A null row matches none, ``!=`` and ``not in`` included: SQL's unknown, as Java's
        reader and lake_assets' filters (`lake_assets.predicate`) answer it."""
        if op in _EQUAL_OPS:
            out = BitMap()
            for k in keys:
                out |= self._compare("=", k)
            return out
        if op in _NOT_EQUAL_OPS:
            return self.not_null() - self.rows_matching("in", keys)
        (key,) = keys
        return self._compare(op, key)


def term_keys(literals: pa.Array, dt: DataType, op: str) -> tuple[str, list[int]] | None:
    """(the op to ask the index, the literals' longs) for a term on a column of type ``dt``, or
    None when the index cannot decide it exactly. TIMESTAMP(7..9) values are indexed as floored
    micros, so several values share a long: ``<`` and ``>`` become ``<=`` and ``>=`` (a superset
    of the matches) and ``!=`` / ``not in`` decide nothing (Java's reader would drop the rows that
    share the literal's micros; we never skip a file that matches)."""
    if literals.null_count:
        return None
    keys, _ = bsi_keys(literals, dt)
    if isinstance(dt, _TIMESTAMPS) and dt.precision > 6:
        if op in _NOT_EQUAL_OPS:
            return None
        op = {"<": "<=", ">": ">="}.get(op, op)
    return op, [int(k) for k in keys.tolist()]


__all__ = ["BSI", "BSI_OPS", "BitSlices", "BsiIndex", "BsiIndexBuilder", "bsi_keys", "java_refusal", "term_keys",
           "unsupported_reason"]
