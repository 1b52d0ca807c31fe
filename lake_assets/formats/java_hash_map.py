"""The iteration order of a ``java.util.HashMap``, and the Java ``hashCode`` of the keys Paimon's
file-index writers put in one (docs/format.md §7.6).

Paimon's writers lay out what they collect in a HashMap in the map's iteration order: the bitmap
index its distinct values (``BitmapFileIndex.Writer.id2bitmap``), the file-index container its
columns and index types (``DataFileIndexWriter.serializeMaintainers``). Writing the same bytes
means ordering as the map does: by bucket ``(h ^ h >>> 16) & (capacity - 1)``, then within a
bucket by insertion (``put``) or by reverse insertion (``computeIfAbsent``, which puts a new key
first), the capacity being the table's after every resize. That holds while no bucket was turned
into a tree (8 or 9 keys in one bucket of a table of 64 or more): `hash_map_order` says whether
it holds; when not, the order given is still one a reader accepts (readers look keys up).
"""

from __future__ import annotations

import numpy as np

_INITIAL_CAPACITY = 16
_LOAD_FACTOR = 0.75
_MIN_TREEIFY_CAPACITY = 64  # a bin that would become a tree in a smaller table doubles it instead


def hash_map_order(hash_codes: np.ndarray, *, compute_if_absent: bool = False,
                   called_after_last: bool = True) -> tuple[np.ndarray, bool]:
    """(the positions of keys, given in insertion order with their ``hashCode`` as int32, in the
    iteration order of the HashMap they were added to; whether that order is exactly Java's).

    ``put`` appends a new key to its bin, grows the table right after the insertion that passes
    the threshold and makes a bin of 9 keys a tree; ``computeIfAbsent`` (``compute_if_absent``)
    puts a new key first in its bin, grows the table at the start of the next call once the size
    passed the threshold (none after the last key: ``called_after_last`` False) and makes a bin of
    8 keys a tree. Exact unless a bin became a tree, whose list order depends on red-black
    rotations."""
    n = len(hash_codes)
    h = np.asarray(hash_codes).astype(np.int32, copy=False).view(np.uint32)
    spread = h ^ (h >> np.uint32(16))
    tree_bin = 8 if compute_if_absent else 9
    if n <= 48:
        capacity, exact = _simulate(spread, tree_bin, compute_if_absent, called_after_last)
    else:
        capacity = _INITIAL_CAPACITY
        while n > capacity * _LOAD_FACTOR:
            capacity *= 2
        if compute_if_absent and not called_after_last and n == int(capacity // 2 * _LOAD_FACTOR) + 1:
            capacity //= 2  # the last key passed the threshold: no later call grew the table
        # tables up to 32 buckets double rather than treeify; from 64 on, check every table the
        # map had: the keys present when it last grew out of it (one more than its threshold)
        exact = True
        c = _MIN_TREEIFY_CAPACITY
        while c <= capacity and exact:
            present = spread[: min(n, int(c * _LOAD_FACTOR) + 1)]
            exact = int(np.bincount(present & np.uint32(c - 1), minlength=c).max()) < tree_bin
            c *= 2
    buckets = spread & np.uint32(capacity - 1)
    within = -np.arange(n) if compute_if_absent else np.arange(n)
    return np.lexsort((within, buckets)), exact


def _simulate(spread: np.ndarray, tree_bin: int, compute_if_absent: bool,
              called_after_last: bool) -> tuple[int, bool]:
    """(final capacity, no bin treeified) of a small map, key by key as ``HashMap.putVal`` or
    ``HashMap.computeIfAbsent`` adds them."""
    capacity, exact = _INITIAL_CAPACITY, True
    counts = np.zeros(capacity, np.int64)

    def grow(size: int) -> None:
        nonlocal capacity, counts
        capacity *= 2
        counts = np.bincount(spread[:size] & np.uint32(capacity - 1), minlength=capacity)

    for i, s in enumerate(spread.tolist()):
        if compute_if_absent and i > capacity * _LOAD_FACTOR:
            grow(i)  # the size passed the threshold at the previous key: this call grows first
        b = s & (capacity - 1)
        counts[b] += 1
        if counts[b] >= tree_bin:
            if capacity < _MIN_TREEIFY_CAPACITY:
                grow(i + 1)
            else:
                exact = False
        if not compute_if_absent and i + 1 > capacity * _LOAD_FACTOR:
            grow(i + 1)
    if compute_if_absent and called_after_last and len(spread) > capacity * _LOAD_FACTOR:
        grow(len(spread))
    return capacity, exact


def string_hash_code(text: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units), as a signed int32."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def long_hash_codes(values: np.ndarray) -> np.ndarray:
    """``Long.hashCode`` (and ``Double.hashCode`` of the bits) of int64 values: ``(int)(v ^ v >>> 32)``."""
    u = np.asarray(values).astype(np.int64, copy=False).view(np.uint64)
    return ((u ^ (u >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)


_C1, _C2, _M = np.uint32(0xCC9E2D51), np.uint32(0x1B873593), np.uint32(0xE6546B64)
_SEED = 42


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = _rotl(k * _C1, 15) * _C2
    return _rotl(h ^ k, 13) * np.uint32(5) + _M


def binary_string_hash_codes(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``BinaryString.hashCode`` of each value ``data[starts[i]: starts[i] + lengths[i]]`` (UTF-8
    bytes; ``data`` padded with 3 bytes): Paimon's ``MurmurHashUtils.hashBytes`` with seed 42,
    4-byte little-endian words, then each trailing byte on its own (sign-extended)."""
    n = len(starts)
    h = np.full(n, _SEED, np.uint32)
    starts = starts.astype(np.int64, copy=False)
    words = lengths // 4
    # rows by word count, longest first: the rows with a j-th word are a prefix
    order = np.argsort(-words, kind="stable")
    have = np.searchsorted(-words[order], -np.arange(int(words.max()) if n else 0), side="left")
    hs, st = h[order], starts[order]
    for j, c in enumerate(have.tolist()):
        at = st[:c] + 4 * j
        k = (data[at].astype(np.uint32) | data[at + 1].astype(np.uint32) << np.uint32(8)
             | data[at + 2].astype(np.uint32) << np.uint32(16) | data[at + 3].astype(np.uint32) << np.uint32(24))
        hs[:c] = _mix(hs[:c], k)
    h[order] = hs
    for t in range(3):
        rows = np.nonzero(lengths % 4 > t)[0]
        k = data[starts[rows] + words[rows] * 4 + t].view(np.int8).astype(np.int32).view(np.uint32)
        h[rows] = _mix(h[rows], k)
    h ^= lengths.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h.view(np.int32)
