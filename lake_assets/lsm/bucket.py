"""Fixed-bucket assignment (docs/format.md §6): murmur hash of the bucket-key BinaryRow, then abs(h % n)
(``bucket-function.type = default``; `assign_buckets` hands ``mod`` and ``hive`` to `lsm.bucket_function`).

The hash is Paimon's ``hashBytesByWords`` (MurmurHash3 x86-32 body over 4-byte little-endian words, seed 42,
finalised with the byte length), computed here for many rows at once with numpy uint32 arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lake_assets.lsm.bucket_function import DEFAULT, function_buckets
from lake_assets.spec.binary_row_vectorized import encode_rows
from lake_assets.spec.data_types import BigIntType, DataType

SEED = 42
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_M = 0xE6546B64
_F1 = 0x85EBCA6B
_F2 = 0xC2B2AE35
_U32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _U32


def hash_scalar(data: bytes) -> int:
    """hashBytesByWords(seed 42) of one byte string whose length is a multiple of 4, as a signed int32."""
    if len(data) % 4:
        raise ValueError(f"hashBytesByWords needs a multiple of 4 bytes, got {len(data)}")
    h = SEED
    for pos in range(0, len(data), 4):
        k = int.from_bytes(data[pos : pos + 4], "little")
        k = _rotl((k * _C1) & _U32, 15) * _C2 & _U32
        h = (_rotl(h ^ k, 13) * 5 + _M) & _U32
    h = _fmix(h ^ len(data))
    return h - (1 << 32) if h >= 1 << 31 else h


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * _F1) & _U32
    h ^= h >> 13
    h = (h * _F2) & _U32
    return h ^ (h >> 16)


def _mix_word(h: np.ndarray, k: np.ndarray, scratch: np.ndarray | None = None) -> None:
    """Fold one word of every row into ``h`` (in place); ``k`` is consumed as scratch space, and
    so is ``scratch`` (uint32, as long as ``h``) when given. Every step writes into arrays it
    already has: a fresh temporary of a batch's size costs its page faults each time."""
    k *= np.uint32(_C1)
    high = np.right_shift(k, np.uint32(17), out=scratch)
    k <<= np.uint32(15)
    k |= high
    k *= np.uint32(_C2)
    h ^= k
    np.right_shift(h, np.uint32(19), out=high)
    h <<= np.uint32(13)
    h |= high
    h *= np.uint32(5)
    h += np.uint32(_M)


def murmur_hash_words(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """hashBytesByWords(seed 42) of each row ``data[offsets[r]:offsets[r + 1]]``, as int32.

    Word j of all rows is mixed in one numpy step; rows are ordered by length so that the rows still
    having a word j form a prefix, which keeps the work proportional to the total number of words.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    if n <= 0:
        return np.zeros(0, dtype=np.int32)
    lengths = np.diff(offsets)
    if (lengths % 4).any() or (offsets[0] % 4):
        raise ValueError("hashBytesByWords needs rows of a multiple of 4 bytes starting at 4-byte offsets")
    buf = np.ascontiguousarray(data, dtype=np.uint8)
    start = int(offsets[0])
    words = buf[start : start + (len(buf) - start) // 4 * 4].view("<u4")
    word_start = (offsets[:-1] - start) // 4
    nwords = lengths // 4
    h = np.full(n, SEED, dtype=np.uint32)
    scratch = np.empty_like(h)
    if n and (nwords == nwords[0]).all():
        # Equal lengths (the usual case for fixed-width keys): read word columns through a 2-D view.
        k_count = int(nwords[0])
        grid = words[: n * k_count].reshape(n, k_count)
        word = np.empty_like(h)
        for j in range(k_count):
            word[...] = grid[:, j]
            _mix_word(h, word, scratch)
    else:
        order = np.argsort(-nwords, kind="stable")
        sorted_start = word_start[order]
        sorted_count = nwords[order]
        # active[j] = number of rows (a prefix of ``order``) that have a word j.
        active = np.searchsorted(-sorted_count, -np.arange(int(sorted_count[0])), side="left")
        hs = h[order]
        for j, c in enumerate(active):
            _mix_word(hs[:c], words[sorted_start[:c] + j], scratch[:c])
        h[order] = hs
    return _finalize(h, lengths.astype(np.uint32), scratch)


def _finalize(h: np.ndarray, lengths: np.ndarray | np.uint32, scratch: np.ndarray | None = None) -> np.ndarray:
    """Murmur3's finalisation of running hashes ``h`` (uint32, in place) with the byte lengths;
    ``scratch`` as in `_mix_word`."""
    h ^= lengths
    shifted = np.right_shift(h, np.uint32(16), out=scratch)
    h ^= shifted
    h *= np.uint32(_F1)
    h ^= np.right_shift(h, np.uint32(13), out=shifted)
    h *= np.uint32(_F2)
    h ^= np.right_shift(h, np.uint32(16), out=shifted)
    return h.view(np.int32)


def bucket_of_hashes(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """Java's ``Math.abs(hash % numBuckets)`` with a truncating remainder (§6.3), as int32."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    hashes = np.asarray(hashes)
    if hashes.dtype == np.int32:
        # |h % n| with Java's truncating % is |h| mod n. |h| of every int32 fits a uint32 (numpy's
        # abs of -2**31 wraps to the same bits as 2**31), and a uint32 remainder costs a fifth of
        # an int64 one; a power of two is a mask.
        magnitude: np.ndarray = np.abs(hashes).view(np.uint32)
        if num_buckets & (num_buckets - 1) == 0:
            magnitude &= np.uint32(num_buckets - 1)
        else:
            magnitude %= np.uint32(num_buckets)
        return magnitude.view(np.int32)
    # fmod on integers truncates toward zero like Java's %, unlike Python's floor-based %.
    rem = np.fmod(hashes.astype(np.int64), num_buckets)
    return np.abs(rem).astype(np.int32)


def assign_buckets(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], num_buckets: int,
    function: str = DEFAULT,
) -> np.ndarray:
    """Bucket of every row of the bucket-key ``columns`` in a fixed-bucket table, as int32.

    ``function`` is the table's ``bucket-function.type`` (`CoreOptions.bucket_function`): the
    default murmur hash here, ``mod`` and ``hive`` in `lake_assets.lsm.bucket_function`."""
    if function != DEFAULT:
        return function_buckets(function, columns, types, num_buckets)
    if len(columns) == 1 and isinstance(types[0], BigIntType) and columns[0].null_count == 0:
        return bucket_of_hashes(_bigint_row_hashes(columns[0]), num_buckets)
    data, offsets = encode_rows(columns, types)
    return bucket_of_hashes(murmur_hash_words(data, offsets), num_buckets)


def _bigint_row_hashes(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """`murmur_hash_words` of the BinaryRows of one non-null BIGINT column (the most common bucket
    key), without building the rows: a row is 16 bytes, a header word pair that is zero for every
    row (row kind and null bits) and the value's two little-endian words. The header's mix is one
    constant; only the value's words are mixed per row."""
    values = np.ascontiguousarray(column.to_numpy(), dtype=np.int64).view(np.uint32).reshape(-1, 2)
    h0 = np.full(1, SEED, dtype=np.uint32)
    for _ in range(2):
        _mix_word(h0, np.zeros(1, dtype=np.uint32))
    h = np.full(len(values), h0[0], dtype=np.uint32)
    word = values[:, 0].copy()
    scratch = np.empty_like(h)
    _mix_word(h, word, scratch)
    word[...] = values[:, 1]
    _mix_word(h, word, scratch)
    return _finalize(h, np.uint32(16), scratch)
