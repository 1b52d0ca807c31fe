"""Reading version 2 of Paimon's bitmap file index (Paimon 1.x's default, ``BitmapFileIndexMetaV2``;
docs/format.md §7.6), so that reads prune by the bitmaps Java 1.x and pypaimon-rust write.

Version 2 keeps version 1's body (the null rows' bitmap, then each value's) and adds what lets a
reader find one value without reading every entry: the entries (value, offset, length) sorted by
value into index blocks of at most ``index-block-size`` bytes, with a first-key directory before
them. After the version byte: ``int`` rows, ``int`` distinct non-null values, ``byte`` has-null,
then if it has a null ``int`` null offset and ``int`` null bitmap length; ``int`` block count, each
block's first key and ``int`` offset (from the end of the directory); ``int`` the blocks' total
size; then the blocks (``int`` entry count, each entry's key, ``int`` offset, ``int`` length, the
offset counted from the body's start or ``-1 - row`` for a value in one row, whose length is -1),
then the body. Keys are laid out as in version 1.

lake_assets reads every block (the payload is in memory already) and looks values up with Arrow,
and writes version 2 when a column's ``version`` option asks for it (`v2_meta`): the body as in
version 1 (Java's HashMap order), the entries sorted by Java's comparators.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.bitmap_index_layout import entries, read_string_entries

VERSION_2 = 2
DEFAULT_BLOCK_SIZE = 16 * 1024  # index-block-size unset (Java's "16kb")


@dataclass(frozen=True)
class V2Entries:
    """What a version-2 payload's header and index blocks say."""

    row_count: int
    null_offset: int | None  # None: no null in the file
    null_length: int
    keys: pa.Array
    offsets: np.ndarray
    lengths: np.ndarray
    body_start: int


def parse_v2(payload: bytes, key_dtype: str | None, what: str) -> V2Entries:
    """The entries of a version-2 payload whose keys are of the big-endian numpy type
    ``key_dtype`` (None: strings); `InvalidDataError` when its parts do not add up."""
    try:
        _, rows, m, has_null = struct.unpack_from(">BiiB", payload)
        pos = 10
        null_offset, null_length = None, -1
        if has_null:
            null_offset, null_length = struct.unpack_from(">ii", payload, pos)
            pos += 8
        (blocks,) = struct.unpack_from(">i", payload, pos)
        pos += 4
        if m < 0 or rows < 0 or blocks < 0 or blocks > m:
            raise InvalidDataError(f"{what} has {m} values in {rows} rows and {blocks} index blocks")
        if key_dtype is None:
            _, directory, pos = read_string_entries(payload, pos, blocks)
            block_offsets = directory[:, 0]
        else:
            rec = np.frombuffer(payload, np.dtype([("k", key_dtype), ("o", ">i4")]), blocks, pos)
            pos += rec.nbytes
            block_offsets = rec["o"].astype(np.int64)
        (blocks_size,) = struct.unpack_from(">i", payload, pos)
        index_start = pos + 4
        body_start = index_start + blocks_size
        if blocks_size < 0 or body_start > len(payload):
            raise InvalidDataError(f"{what}: its index blocks run past the payload")
        keys, offsets, lengths = [], [], []
        for at in (index_start + block_offsets).tolist():
            if not index_start <= at < body_start:
                raise InvalidDataError(f"{what}: an index block lies outside the blocks")
            (count,) = struct.unpack_from(">i", payload, at)
            if count < 0 or count > m:
                raise InvalidDataError(f"{what}: an index block has {count} entries")
            if key_dtype is None:
                k, ints, end = read_string_entries(payload, at + 4, count, ints=2)
                keys.append(k)
                offsets.append(ints[:, 0])
                lengths.append(ints[:, 1])
            else:
                rec = np.frombuffer(payload, np.dtype([("k", key_dtype), ("o", ">i4"), ("n", ">i4")]), count,
                                    at + 4)
                end = at + 4 + rec.nbytes
                keys.append(pa.array(rec["k"].astype(rec["k"].dtype.newbyteorder("="))))
                offsets.append(rec["o"].astype(np.int64))
                lengths.append(rec["n"].astype(np.int64))
            if end > body_start:
                raise InvalidDataError(f"{what}: an index block runs into the body")
    except (struct.error, ValueError) as exc:
        raise InvalidDataError(f"{what} is truncated ({exc})") from None
    if sum(len(k) for k in keys) != m:
        raise InvalidDataError(f"{what}: its index blocks hold {sum(len(k) for k in keys)} of {m} values")
    empty = (pa.array([], pa.binary()) if key_dtype is None
             else pa.array(np.zeros(0, np.dtype(key_dtype).newbyteorder("="))))
    return V2Entries(rows, null_offset, null_length, pa.concat_arrays(keys) if keys else empty,
                     np.concatenate(offsets) if offsets else np.zeros(0, np.int64),
                     np.concatenate(lengths) if lengths else np.zeros(0, np.int64), body_start)


def java_order(keys: pa.Array, key_dtype: str | None, floating: bool) -> np.ndarray:
    """The order of distinct keys under Java's comparators (``BitmapFileIndexMetaV2.getComparator``):
    numbers by value; ``floating`` keys (FLOAT / DOUBLE as their canonical int bits) as
    ``Float.compare`` orders them (-0.0 before 0.0, NaN last: sign-magnitude read as two's
    complement); strings by unsigned bytes (``BinaryString.compareTo``)."""
    if key_dtype is None:
        return np.asarray(pc.sort_indices(keys).to_numpy(), np.int64)
    values = keys.to_numpy(zero_copy_only=False).astype(np.int64)
    if floating:
        width = np.dtype(key_dtype).itemsize * 8
        values = np.where(values < 0, values ^ ((1 << (width - 1)) - 1), values)
    return np.argsort(values, kind="stable")


def v2_meta(rows: int, m: int, null_rows: np.ndarray, null_bitmap_size: int, keys: pa.Array,
            key_dtype: str | None, offsets: np.ndarray, lengths: np.ndarray, block_size: int) -> bytes:
    """Version 2's header and index blocks (``BitmapFileIndexMetaV2.serialize``) for the distinct
    ``keys`` already in Java's comparator order, with their body offsets (``-1 - row`` for a value
    in one row) and bitmap lengths (-1 there); ``null_bitmap_size``: the null rows' serialized
    bitmap length, recorded whatever their count. Entries fill blocks of at most ``block_size``
    bytes in order; an entry no block can hold fails, as Java's writer does ("index fail")."""
    head = struct.pack(">BiiB", VERSION_2, rows, m, len(null_rows) > 0)
    if len(null_rows):
        head += struct.pack(">ii", -1 - int(null_rows[0]) if len(null_rows) == 1 else 0, null_bitmap_size)
    if key_dtype is None:
        key_sizes = 4 + pc.binary_length(keys).to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        key_sizes = np.full(m, np.dtype(key_dtype).itemsize, np.int64)
    entry_sizes = 8 + key_sizes
    if m and int(entry_sizes.max()) + 4 > block_size:
        raise UnsupportedFeatureError(
            f"a bitmap index entry of {int(entry_sizes.max())} bytes does not fit index-block-size = {block_size} "
            "bytes (Java's version-2 writer fails on it: 'index fail'); raise the option")
    cum = np.concatenate([[0], np.cumsum(entry_sizes)])
    firsts: list[int] = []
    i = 0
    while i < m:  # one step per index block, not per value
        firsts.append(i)
        i = int(np.searchsorted(cum, cum[i] + block_size - 4, side="right")) - 1
    bounds = np.array([*firsts, m], np.int64)
    block_bytes = 4 + cum[bounds[1:]] - cum[bounds[:-1]]
    block_offsets = np.cumsum(block_bytes) - block_bytes
    first_keys = keys.take(pa.array(bounds[:-1]))
    directory = struct.pack(">i", len(firsts)) + entries(first_keys, key_dtype, block_offsets)
    blob = entries(keys, key_dtype, offsets, lengths)
    blocks = b"".join(struct.pack(">i", int(bounds[b + 1] - bounds[b])) + blob[cum[bounds[b]]: cum[bounds[b + 1]]]
                      for b in range(len(firsts)))
    return head + directory + struct.pack(">i", int(block_bytes.sum())) + blocks
