"""Reading Paimon 1.x's range-bitmap file index (``file-index.range-bitmap.*``, docs/format.md §7.6).

The definition is Java HEAD's ``RangeBitmapFileIndex``, ``RangeBitmap``, ``ChunkedDictionary``,
``FixedLengthChunk`` / ``VariableLengthChunk`` and ``BitSliceIndexBitmap`` (Java 0.9 has none).
A column's distinct non-null values, sorted (`lake_assets.formats.range_bitmap_keys`), are numbered
0, 1, ... ("codes"); a dictionary maps values to codes and a bit-sliced index holds each row's code.
Every part is big-endian and starts with its header's length::

    int header length | byte version (1) | int rows (nulls included) | int cardinality (distinct values)
        | [min key | max key: only when cardinality > 0] | int dictionary length
    | dictionary | bit-sliced index

    dictionary: int header length | byte version (1) | int chunk count | int offsets length
        | int chunks length | chunk offsets (an int each, into the chunks) | chunks | keys
    chunk (fixed-length keys): byte version (1) | first key | int its code | int offset (into keys)
        | int count (keys after the first) | int keys length | int key length
    chunk (strings): byte version (1) | first key | int its code | int offset | int count
        | int offsets length | int keys length
    a chunk's keys: fixed-length: the keys after its first, back to back; strings: an int offset per
        key (from the first), then the keys (int length, bytes)

    bit-sliced index: int header length | byte version (1) | byte slice count | int ebm length
        | int indexes length | (int offset, int length) per slice | ebm | slices

with ``ebm`` the rows holding a value and slice i the rows whose code has bit i set (roaring
bitmaps, portable format). `RangeBitmapIndex.rows_matching` answers each term as Java's reader
does (``RangeBitmap.eq`` ... ``isNotNull``): null rows match no comparison (``!=`` / ``not in``
included), as lake_assets' filters have it, and FLOAT / DOUBLE compare as ``Float.compare`` as
they do too. A version above 1 or bytes that do not add up raise `InvalidDataError` (the file is
then read, not skipped).
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.range_bitmap_keys import KeyCodec, codec, unsupported_reason
from lake_assets.spec.data_types import DataType

VERSION_1 = 1
_EQUAL = ("=", "==")


def _check(ok: bool, what: str, problem: str) -> None:
    if not ok:
        raise InvalidDataError(f"{what}: {problem}")


def _part(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """(start of a part's header, start of its body): each part begins with its header's length."""
    (length,) = struct.unpack_from(">i", data, pos)
    _check(0 <= length <= len(data) - pos - 4, what, f"header length {length} runs past the index")
    return pos + 4, pos + 4 + length


def _roaring(data: bytes, start: int, length: int, what: str) -> BitMap:
    _check(length >= 0 and start + length <= len(data), what, "a bitmap lies outside the index")
    try:
        return BitMap.deserialize(data[start: start + length])
    except (ValueError, OverflowError) as exc:
        raise InvalidDataError(f"{what}: a bitmap does not parse ({exc})") from None


@dataclass
class _BitSlices:
    """The rows of each code (``BitSliceIndexBitmap``): ``ebm`` the rows holding a value, slice i
    the rows whose code has bit i set."""

    ebm: BitMap
    slices: list[BitMap]

    @classmethod
    def parse(cls, data: bytes, pos: int, what: str) -> _BitSlices:
        head, body = _part(data, pos, what)
        version, count, ebm_length, indexes_length = struct.unpack_from(">bbii", data, head)
        _check(version <= VERSION_1, what, f"bit-sliced index version {version}; lake_assets reads {VERSION_1}")
        _check(count >= 0 and indexes_length == 8 * count, what, f"{count} slices in {indexes_length} bytes")
        spans = np.frombuffer(data, ">i4", 2 * count, head + 10).reshape(count, 2).astype(np.int64)
        ebm = _roaring(data, body, ebm_length, what)
        slices = [_roaring(data, body + ebm_length + o, n, what) for o, n in spans.tolist()]
        return cls(ebm, slices)

    def eq(self, code: int) -> BitMap:
        state = BitMap(self.ebm)
        for i, s in enumerate(self.slices):  # bits above the slices are not looked at (as Java)
            state = state & s if code >> i & 1 else state - s
        return state

    def gt(self, code: int) -> BitMap:
        """The rows whose code is above ``code`` (O'Neil's comparison from the lowest bit: a run
        of set low bits of ``code`` cannot be exceeded there, so it starts above them)."""
        if code < 0:
            return BitMap(self.ebm)
        start = (~code & -~code).bit_length() - 1  # trailing zeros of ~code
        state: BitMap | None = None
        for i in range(start, len(self.slices)):
            if state is None:
                state = BitMap(self.slices[i])
            elif code >> i & 1:
                state &= self.slices[i]
            else:
                state |= self.slices[i]
        return BitMap() if state is None else state & self.ebm

    def gte(self, code: int) -> BitMap:
        return self.gt(code - 1)


@dataclass
class _Dictionary:
    """The sorted keys and their codes, as chunks: each chunk's first key and code are in its
    header, its other keys (codes following on) in the keys area, read when a lookup needs them."""

    codec: KeyCodec
    data: bytes
    keys_start: int
    first_keys: Any  # np.ndarray of order keys, or a list of bytes (strings)
    codes: np.ndarray
    offsets: np.ndarray  # each chunk's keys, from keys_start
    counts: np.ndarray
    lengths: np.ndarray  # fixed: keys length; strings: offsets length
    key_lengths: np.ndarray  # fixed: the key length; strings: keys length
    what: str
    _chunks: dict[int, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, kc: KeyCodec, data: bytes, pos: int, end: int, what: str) -> _Dictionary:
        head, body = _part(data, pos, what)
        version, size, offsets_length, chunks_length = struct.unpack_from(">biii", data, head)
        _check(version <= VERSION_1, what, f"dictionary version {version}; lake_assets reads {VERSION_1}")
        _check(size >= 0 and offsets_length == 4 * size and chunks_length >= 0
               and body + offsets_length + chunks_length <= end, what, "the dictionary's lengths do not add up")
        chunk_at = np.frombuffer(data, ">i4", size, body).astype(np.int64) + body + offsets_length
        keys_start = body + offsets_length + chunks_length
        _check(bool(((chunk_at >= body + offsets_length) & (chunk_at < keys_start)).all()), what,
               "a chunk lies outside the dictionary")
        raw = np.frombuffer(data, np.uint8, end)
        be = np.array([24, 16, 8, 0], np.uint32)

        def ints(at: np.ndarray) -> np.ndarray:
            _check(bool((at + 4 <= keys_start).all()), what, "a chunk header runs past the chunks")
            return ((raw[at[:, None] + np.arange(4)].astype(np.uint32) << be).sum(axis=1)
                    .astype(np.uint32).view(np.int32).astype(np.int64))

        versions = raw[chunk_at] if size else np.zeros(0, np.uint8)
        _check(bool((versions.view(np.int8) <= VERSION_1).all()), what, "a chunk version above 1")
        if kc.is_string:
            lengths = ints(chunk_at + 1)
            _check(bool((lengths >= 0).all()), what, "a negative key length")
            starts = chunk_at + 5
            first: Any = [bytes(data[s: s + n]) for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
            rest = starts + lengths
        else:
            w = kc.width
            _check(bool((chunk_at + 1 + w <= keys_start).all()), what, "a chunk header runs past the chunks")
            gathered = raw[(chunk_at + 1)[:, None] + np.arange(w)].reshape(-1).tobytes()
            first = kc.from_disk(np.frombuffer(gathered, kc.disk))
            rest = chunk_at + 1 + w
        codes, offsets, counts, lens, key_lens = (ints(rest + 4 * k) for k in range(5))
        _check(bool((offsets >= 0).all() and (counts >= 0).all() and (lens >= 0).all()
                    and (key_lens >= 0).all()), what, "a chunk has negative lengths")
        return cls(kc, data[:end], keys_start, first, codes, offsets, counts, lens, key_lens, what)

    def _chunk_keys(self, j: int) -> Any:
        """The keys of chunk ``j`` after its first one (order keys, or a list of bytes)."""
        if j not in self._chunks:
            at, count = self.keys_start + int(self.offsets[j]), int(self.counts[j])
            if self.codec.is_string:
                offsets_length, keys_length = int(self.lengths[j]), int(self.key_lengths[j])
                _check(offsets_length == 4 * count and at + offsets_length + keys_length <= len(self.data),
                       self.what, "a chunk's keys lie outside the dictionary")
                base = at + offsets_length
                out = []
                for o in np.frombuffer(self.data, ">i4", count, at).tolist():  # one chunk's keys (~16 kB)
                    _check(0 <= o <= keys_length - 4, self.what, "a key offset lies outside its chunk")
                    (n,) = struct.unpack_from(">i", self.data, base + o)
                    _check(0 <= n <= keys_length - o - 4, self.what, "a key runs past its chunk")
                    out.append(bytes(self.data[base + o + 4: base + o + 4 + n]))
                self._chunks[j] = out
            else:
                w = self.codec.width
                _check(int(self.key_lengths[j]) == w and int(self.lengths[j]) >= count * w
                       and at + count * w <= len(self.data), self.what, "a chunk's keys lie outside the dictionary")
                self._chunks[j] = self.codec.from_disk(np.frombuffer(self.data, self.codec.disk, count, at))
        return self._chunks[j]

    def find(self, key: Any) -> int:
        """``ChunkedDictionary.find``: the key's code, else -(insertion code) - 1."""
        first = self.first_keys
        j = bisect.bisect_left(first, key) if self.codec.is_string else int(np.searchsorted(first, key))
        if j < len(first) and first[j] == key:
            return int(self.codes[j])
        if j == 0:
            return -1
        j -= 1
        base = int(self.codes[j]) + 1
        keys = self._chunk_keys(j)
        low = bisect.bisect_left(keys, key) if self.codec.is_string else int(np.searchsorted(keys, key))
        if low < len(keys) and keys[low] == key:
            return base + low
        return -(base + low + 1)


class RangeBitmapIndex:
    """A parsed range-bitmap index: the rows each term matches, as Java's ``RangeBitmap`` answers.
    The dictionary and the bit-sliced index are parsed when a term first needs them."""

    def __init__(self, payload: bytes, dt: DataType, what: str = "range-bitmap index") -> None:
        """Read a payload (Java's, pypaimon-rust's or ours) of a column of type ``dt``."""
        if (why := unsupported_reason(dt)) is not None:
            raise UnsupportedFeatureError(f"{what}: {why}")
        self.codec, self.payload, self.what = codec(dt), payload, what
        try:
            head, body = _part(payload, 0, what)
            version, self.rows, self.cardinality = struct.unpack_from(">bii", payload, head)
            _check(version <= VERSION_1, what, f"version {version}; lake_assets reads version {VERSION_1}")
            _check(self.rows >= 0, what, f"{self.rows} rows")
            pos = head + 9
            self.min: Any = None
            self.max: Any = None
            if self.cardinality > 0:
                self.min, pos = self._key_at(pos)
                self.max, pos = self._key_at(pos)
            (dictionary_length,) = struct.unpack_from(">i", payload, pos)
            _check(pos + 4 == body and 0 <= dictionary_length <= len(payload) - body, what,
                   "the header's lengths do not add up")
        except struct.error as exc:
            raise InvalidDataError(f"{what} is truncated ({exc})") from None
        self._dictionary_at, self._bsi_at = body, body + dictionary_length
        self._dictionary: _Dictionary | None = None
        self._bsi: _BitSlices | None = None

    def _key_at(self, pos: int) -> tuple[Any, int]:
        if self.codec.is_string:
            (n,) = struct.unpack_from(">i", self.payload, pos)
            _check(0 <= n <= len(self.payload) - pos - 4, self.what, "a key runs past the header")
            return bytes(self.payload[pos + 4: pos + 4 + n]), pos + 4 + n
        w = self.codec.width
        raw = np.frombuffer(self.payload, self.codec.disk, 1, pos)
        return int(self.codec.from_disk(raw)[0]), pos + w

    def _parsed(self) -> tuple[_Dictionary, _BitSlices]:
        try:
            if self._dictionary is None:
                self._dictionary = _Dictionary.parse(self.codec, self.payload, self._dictionary_at, self._bsi_at,
                                                     f"{self.what} (dictionary)")
            if self._bsi is None:
                self._bsi = _BitSlices.parse(self.payload, self._bsi_at, f"{self.what} (bit-sliced index)")
        except (struct.error, ValueError, IndexError) as exc:
            raise InvalidDataError(f"{self.what} is truncated or malformed ({exc})") from None
        return self._dictionary, self._bsi

    def not_null(self) -> BitMap:
        """The rows holding a value (``isNotNull``)."""
        return BitMap() if self.cardinality <= 0 else BitMap(self._parsed()[1].ebm)

    def nulls(self) -> BitMap:
        """The null rows (``isNull``)."""
        return BitMap(range(self.rows)) - self.not_null()

    def _not(self, rows: BitMap) -> BitMap:
        return self.not_null() - rows

    def _eq(self, key: Any) -> BitMap:
        lo, hi = self.min, self.max
        if key == lo and key == hi:
            return self.not_null()
        if key < lo or key > hi:
            return BitMap()
        dictionary, bsi = self._parsed()
        code = dictionary.find(key)
        return BitMap() if code < 0 else bsi.eq(code)

    def _gte_or_gt(self, key: Any, strict: bool) -> BitMap:
        if key < self.min or (not strict and key == self.min):
            return self.not_null()
        if key > self.max or (strict and key == self.max):
            return BitMap()
        dictionary, bsi = self._parsed()
        code = dictionary.find(key)
        if code < 0:
            return bsi.gte(-code - 1)
        return bsi.gt(code) if strict else bsi.gte(code)

    def rows_matching(self, op: str, keys: list[Any]) -> BitMap:
        """The rows whose value satisfies ``value op key`` (``in`` / ``not in``: any / none of
        ``keys``; ``is null`` / ``is not null`` take no key), keys as `literal_keys` gives them.
        `InvalidDataError` when a part the term needs does not parse."""
        try:
            return self._rows_matching(op, keys)
        except (struct.error, IndexError) as exc:
            raise InvalidDataError(f"{self.what} is truncated or malformed ({exc})") from None

    def _rows_matching(self, op: str, keys: list[Any]) -> BitMap:
        if op == "is null":
            return self.nulls()
        if self.cardinality <= 0:
            return BitMap()
        if op == "is not null":
            return self.not_null()
        if op in (*_EQUAL, "in"):
            out = BitMap()
            for k in keys:
                out |= self._eq(k)
            return out
        if op in ("!=", "not in"):
            return self._not(self._rows_matching("in", keys))
        (key,) = keys
        if op == ">":
            return self._gte_or_gt(key, True)
        if op == ">=":
            return self._gte_or_gt(key, False)
        if op == "<":  # lt: not(gte), with Java's own bounds checks first
            if key > self.max:
                return self.not_null()
            return BitMap() if key <= self.min else self._not(self._gte_or_gt(key, False))
        if op == "<=":
            if key >= self.max:
                return self.not_null()
            return BitMap() if key < self.min else self._not(self._gte_or_gt(key, True))
        raise ValueError(f"range-bitmap index: no such operator {op!r}")


def literal_keys(literals: pa.Array, dt: DataType) -> list[Any]:
    """The keys of non-null literals of a column of type ``dt`` (Python ints or bytes)."""
    keys, _ = codec(dt).keys(literals)
    return keys.to_pylist() if isinstance(keys, pa.Array) else [int(k) for k in keys.tolist()]


__all__ = ["VERSION_1", "RangeBitmapIndex", "literal_keys"]
