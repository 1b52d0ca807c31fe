"""Writing Paimon 1.x's range-bitmap file index: the bytes Java HEAD's ``RangeBitmap.Appender``
writes (layout: `lake_assets.formats.range_bitmap_index`), built batch by batch.

Java's appender keeps a ``TreeMap`` of each distinct value to the bitmap of its rows, and at the end
numbers the values in order (codes 0, 1, ...), lays the sorted values out in dictionary chunks of
at most ``file-index.range-bitmap.<column>.chunk-size`` bytes of keys after each chunk's first (16 kB,
or 0 - a chunk per value - for BOOLEAN, TINYINT and SMALLINT), and each row's code in a bit-sliced
index of max(bit length of the largest code, 1) slices (64 when the file holds no value: Java's
``numberOfLeadingZeros(-1)``). Roaring bitmaps are run-optimized and in the portable format
(``RoaringBitmap32.serialize``).

`RangeBitmapIndexBuilder` holds the distinct keys (with their key order, for numbers) and, per
batch, either its rows' value ids as a 64-bit roaring bitmap of ``id << 32 | row`` (a batch whose
values repeat: runs cost little) or the ids themselves (4 bytes a row, where values rarely repeat),
never the values of every row; each batch's distinct keys are numbered on their own and merged
into the file's once they add up to as many (`_merge`), so that no batch looks its keys up among
all the keys before it. Strings are hashed by Arrow; numbers are sorted by numpy, which peaks at a
third of what Arrow's hash table of the same longs takes. `finish` sorts the distinct keys and
gives each row its code, which peaks at about 60 bytes per row of a file of distinct values
(bench/RESULTS.md, session 13).
"""

from __future__ import annotations

import array
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap, BitMap64

from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.range_bitmap_index import VERSION_1
from lake_assets.formats.range_bitmap_keys import KeyCodec, codec, unsupported_reason
from lake_assets.spec.data_types import DataType

_MAX_ROWS = 2**31 - 1
_REPEATS = 8  # a batch whose values repeat less on average keeps its rows' ids, not bitmaps
_EMPTY_SLICES = 64  # Java sizes the slices of a file without values by max = -1


def _roaring(rows: np.ndarray) -> bytes:
    bm = BitMap(array.array("I", rows.astype(np.uint32, copy=False).tobytes()))
    bm.run_optimize()
    return bytes(bm.serialize())


def _be_ints(values: np.ndarray) -> bytes:
    return np.asarray(values, ">i4").tobytes()


class RangeBitmapIndexBuilder:
    """The range-bitmap index of one column of one data file, fed batch by batch in row order."""

    def __init__(self, dt: DataType, column: str = "", chunk_size: int | None = None) -> None:
        if (why := unsupported_reason(dt)) is not None:
            raise UnsupportedFeatureError(f"Cannot write a range-bitmap index of column {column!r}: {why}")
        self.codec: KeyCodec = codec(dt)
        self.column = column
        self.chunk_size = self.codec.default_chunk_size if chunk_size is None else chunk_size
        if not 0 <= self.chunk_size <= _MAX_ROWS:
            raise InvalidDataError(f"range-bitmap chunk-size of {column!r} must be 0 to {_MAX_ROWS} bytes")
        # the file's keys by id: binary (strings, hashed by Arrow) or int64 order keys, which numpy
        # sorts instead (Arrow's hash table of 2M longs peaks at ~250 MB, a sort at a third of that)
        self._distinct: pa.Array | np.ndarray | None = None
        self._order: np.ndarray | None = None  # numeric keys: the ids in key order
        self._pending: list[pa.Array | np.ndarray] = []  # batches' distinct keys not yet merged
        self._pending_count = 0
        self._merged: list[np.ndarray] = []  # file ids of the provisional ids merged so far
        self._provisional = 0  # provisional ids handed out (a batch's keys are numbered on from here)
        self._pairs = BitMap64()  # provisional id << 32 | row, of repetitive batches
        self._row_ids: list[tuple[int, np.ndarray]] = []  # (first row, each row's provisional id or -1)
        self._rows = 0

    def add(self, values: pa.Array | pa.ChunkedArray) -> None:
        """Index the next rows of the file (nulls are rows without a value)."""
        keys, valid = self.codec.keys(values)
        n, start = len(valid), self._rows
        if start + n > _MAX_ROWS:
            raise InvalidDataError(f"A range-bitmap index counts rows in a Java int: over {_MAX_ROWS} rows in "
                                   f"one file (column {self.column!r})")
        self._rows += n
        rows = np.nonzero(valid)[0]
        if not len(rows):
            return
        local: pa.Array | np.ndarray
        if isinstance(keys, pa.Array):
            encoded = pc.dictionary_encode(keys.take(pa.array(rows)) if len(rows) < n else keys)
            local, batch_ids = encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False)
        else:
            local, batch_ids = np.unique(keys[rows] if len(rows) < n else keys, return_inverse=True)
        ids = batch_ids.astype(np.int64) + self._provisional
        self._provisional += len(local)
        self._pending.append(local)
        self._pending_count += len(local)
        if self._distinct is None or self._pending_count >= len(self._distinct):
            self._merge()
        if len(local) * _REPEATS > len(rows):
            row_ids = np.full(n, -1, np.int64)
            row_ids[rows] = ids
            self._row_ids.append((start, row_ids.astype(np.int32)))
            return
        pairs = ids.astype(np.uint64) << np.uint64(32) | (rows + start).astype(np.uint64)
        pairs.sort()
        self._pairs.update(array.array("Q", pairs.tobytes()))
        self._pairs.run_optimize()  # runs of a value (a clustered column) then cost 4 bytes each

    def _merge(self) -> None:
        """Number the pending keys among the file's (the file's ids stay as they are)."""
        if not self._pending:
            return
        before = 0 if self._distinct is None else len(self._distinct)
        if not isinstance(self._pending[0], np.ndarray):
            known = [] if self._distinct is None else [self._distinct]
            encoded = pc.dictionary_encode(pa.concat_arrays([*known, *self._pending]))
            self._merged.append(encoded.indices.to_numpy(zero_copy_only=False)[before:].astype(np.int32))
            self._distinct = encoded.dictionary
        else:
            unique, inverse = np.unique(np.concatenate(self._pending), return_inverse=True)
            ids = np.zeros(len(unique), np.int64)
            found = np.zeros(len(unique), bool)
            if before:
                assert isinstance(self._distinct, np.ndarray) and self._order is not None
                in_order = self._distinct[self._order]
                at = np.minimum(np.searchsorted(in_order, unique), before - 1)
                found = in_order[at] == unique
                ids[found] = self._order[at[found]]
            fresh = unique[~found]  # sorted, as np.unique gives them
            ids[~found] = before + np.arange(len(fresh))
            if self._distinct is None or self._order is None:
                self._distinct, self._order = fresh, np.arange(len(fresh))
            else:
                # the key order of old and new ids: the fresh keys slotted in (no sort of every key again)
                slots = np.searchsorted(self._distinct[self._order], fresh)
                self._order = np.insert(self._order, slots, before + np.arange(len(fresh)))
                self._distinct = np.concatenate([self._distinct, fresh])
            self._merged.append(ids[inverse].astype(np.int32))
        self._pending, self._pending_count = [], 0

    def held_bytes(self) -> int:
        """About what the builder holds: its distinct keys, its per-row ids and its bitmaps'
        containers (one per value and 65536-row block it has rows in, ~48 bytes of bookkeeping each)."""
        held = ((0 if self._distinct is None else self._distinct.nbytes) + sum(p.nbytes for p in self._pending)
                + (0 if self._order is None else self._order.nbytes)
                + sum(m.nbytes for m in self._merged) + sum(r.nbytes for _, r in self._row_ids))
        stats = self._pairs.get_statistics()
        return held + (stats["n_bytes_array_containers"] + stats["n_bytes_run_containers"]
                       + stats["n_bytes_bitset_containers"] + 48 * stats["n_containers"])

    def finish(self) -> bytes:
        """The payload (version 1)."""
        self._merge()
        distinct = self._distinct
        count = 0 if distinct is None else len(distinct)
        codes = np.full(self._rows, -1, np.int32)  # each row's code (-1: null)
        sorted_keys: pa.Array | None = None
        if distinct is not None and count:
            # Java's comparator order: order keys by value, strings by their bytes
            order = self._order if isinstance(distinct, np.ndarray) else \
                pc.sort_indices(distinct).to_numpy(zero_copy_only=False)
            assert order is not None
            rank = np.empty(count, np.int32)
            rank[order] = np.arange(count, dtype=np.int32)
            code_of = rank[np.concatenate(self._merged)]  # provisional id -> code
            pairs = np.frombuffer(self._pairs.to_array(), np.uint64)
            codes[(pairs & np.uint64(0xFFFFFFFF)).astype(np.int64)] = code_of[(pairs >> np.uint64(32)).astype(np.int64)]
            del pairs
            for start, row_ids in self._row_ids:
                valid = row_ids >= 0
                codes[start: start + len(row_ids)][valid] = code_of[row_ids[valid]]
            sorted_keys = pa.array(distinct[order]) if isinstance(distinct, np.ndarray) else \
                distinct.take(pa.array(order))
        bsi = self._bit_slices(codes, count)
        if sorted_keys is None:
            dictionary = struct.pack(">ibiii", 13, VERSION_1, 0, 0, 0)
            bounds = b""
        else:
            dictionary = self._dictionary(sorted_keys)
            bounds = self._serialize_keys(sorted_keys.slice(0, 1)) + self._serialize_keys(sorted_keys.slice(count - 1))
        header = struct.pack(">bii", VERSION_1, self._rows, count) + bounds + struct.pack(">i", len(dictionary))
        return struct.pack(">i", len(header)) + header + dictionary + bsi

    def _bit_slices(self, codes: np.ndarray, count: int) -> bytes:
        """``BitSliceIndexBitmap.Appender.serialize`` of the rows' codes."""
        n = max(int(count - 1).bit_length(), 1) if count else _EMPTY_SLICES
        valid = np.nonzero(codes >= 0)[0].astype(np.uint32)
        held = codes[valid]
        ebm = _roaring(valid)
        slices = [_roaring(valid[(held >> i) & 1 == 1]) for i in range(n)]
        lengths = np.array([len(s) for s in slices], np.int64)
        spans = np.empty((n, 2), np.int64)
        spans[:, 0] = np.cumsum(lengths) - lengths
        spans[:, 1] = lengths
        header = struct.pack(">bbii", VERSION_1, n, len(ebm), 8 * n) + _be_ints(spans.reshape(-1))
        return struct.pack(">i", len(header)) + header + ebm + b"".join(slices)

    def _serialize_keys(self, keys: pa.Array) -> bytes:
        """Keys as Java's ``KeySerializer`` writes them, back to back."""
        if not self.codec.is_string:
            return self.codec.to_disk(keys.to_numpy(zero_copy_only=False))
        lengths = pc.binary_length(keys).to_numpy(zero_copy_only=False).astype(np.int64)
        data = _value_bytes(keys) if len(keys) else b""
        if len(keys) == 1:
            return struct.pack(">i", int(lengths[0])) + data
        # int length, then the bytes, for each key: interleave with numpy
        out = np.zeros(int(lengths.sum()) + 4 * len(keys), np.uint8)
        at = np.concatenate([[0], np.cumsum(lengths + 4)[:-1]])
        out[at[:, None] + np.arange(4)] = np.asarray(lengths, ">i4").view(np.uint8).reshape(-1, 4)
        body = np.frombuffer(data, np.uint8)
        dst = np.repeat(at + 4, lengths) + np.arange(len(body)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[dst] = body
        return out.tobytes()

    def _chunk_starts(self, keys: pa.Array) -> np.ndarray:
        """The index of each chunk's first key (``ChunkedDictionary.Appender``: a key joins the open
        chunk while its keys still fit ``chunk-size`` bytes, else it starts the next)."""
        count, size = len(keys), self.chunk_size
        if not self.codec.is_string:
            return np.arange(0, count, 1 + size // self.codec.width, dtype=np.int64)
        # a string key takes 4 + its bytes in the keys buffer and 4 in the offsets buffer, each of size bytes
        lengths = pc.binary_length(keys).to_numpy(zero_copy_only=False).astype(np.int64) + 4
        ends = np.concatenate([[0], np.cumsum(lengths)])
        starts = []
        s = 0
        while s < count:  # a Python step per chunk (about chunk-size bytes of keys each)
            starts.append(s)
            fit = int(np.searchsorted(ends, ends[s + 1] + size, side="right")) - 1
            s = min(fit, s + 1 + size // 4, count)
        return np.array(starts, np.int64)

    def _dictionary(self, keys: pa.Array) -> bytes:
        """``ChunkedDictionary.Appender.serialize`` of the sorted keys (codes 0, 1, ...)."""
        count = len(keys)
        starts = self._chunk_starts(keys)
        sizes = np.diff(np.append(starts, count)) - 1  # keys after each chunk's first
        is_first = np.zeros(count, bool)
        is_first[starts] = True
        if self.codec.is_string:
            heads, areas = self._string_chunks(keys, starts, sizes)
        else:
            # every chunk header is as long: one structured record each; the keys after each
            # chunk's first, back to back, are exactly the keys area
            w = self.codec.width
            rec = np.empty(len(starts), np.dtype([("v", "i1"), ("k", f"V{w}"), ("code", ">i4"), ("offset", ">i4"),
                                                  ("size", ">i4"), ("length", ">i4"), ("width", ">i4")]))
            rec["v"] = VERSION_1
            rec["k"] = np.frombuffer(self._serialize_keys(keys.take(pa.array(starts))), f"V{w}")
            rec["code"] = starts
            rec["offset"] = (np.cumsum(sizes) - sizes) * w
            rec["size"] = sizes
            rec["length"] = sizes * w
            rec["width"] = w
            heads = [rec.tobytes()]
            areas = [self._serialize_keys(keys.filter(pa.array(~is_first)))]
            head_lengths = np.full(len(starts), rec.itemsize, np.int64)
        if self.codec.is_string:
            head_lengths = np.array([len(h) for h in heads], np.int64)
        chunk_offsets = _be_ints(np.cumsum(head_lengths) - head_lengths)
        chunks = b"".join(heads)
        header = struct.pack(">biii", VERSION_1, len(starts), len(chunk_offsets), len(chunks))
        return struct.pack(">i", len(header)) + header + chunk_offsets + chunks + b"".join(areas)

    def _string_chunks(self, keys: pa.Array, starts: np.ndarray, sizes: np.ndarray) -> tuple[list[bytes], list[bytes]]:
        """(each chunk's header, each chunk's keys area) of sorted string keys: the area holds an
        int offset per key (from the area's keys), then the keys."""
        lengths = pc.binary_length(keys).to_numpy(zero_copy_only=False).astype(np.int64) + 4
        firsts = self._serialize_keys(keys.take(pa.array(starts)))
        first_at = np.concatenate([[0], np.cumsum(lengths[starts])])
        heads, areas = [], []
        keys_offset = 0
        for j, s in enumerate(starts.tolist()):  # a Python step per chunk (about chunk-size bytes)
            rest = keys.slice(s + 1, int(sizes[j]))
            key_lengths = lengths[s + 1: s + 1 + len(rest)]
            offsets = _be_ints(np.cumsum(key_lengths) - key_lengths)
            body = self._serialize_keys(rest) if len(rest) else b""
            first = firsts[int(first_at[j]): int(first_at[j + 1])]
            heads.append(b"\x01" + first + struct.pack(">iiiii", s, keys_offset, len(rest), len(offsets), len(body)))
            areas.append(offsets + body)
            keys_offset += len(offsets) + len(body)
        return heads, areas


__all__ = ["RangeBitmapIndexBuilder"]


def _value_bytes(keys: pa.Array) -> bytes:
    """The bytes of a string/binary array's values back to back (no per-value Python): the slice of
    its data buffer its offsets span."""
    keys = keys.cast(pa.large_binary())
    offsets = np.frombuffer(keys.buffers()[1], np.int64)[keys.offset:keys.offset + len(keys) + 1]
    data = keys.buffers()[2]
    return b"" if data is None else data.slice(int(offsets[0]), int(offsets[-1] - offsets[0])).to_pybytes()

