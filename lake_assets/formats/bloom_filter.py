"""Paimon's bloom filter of 64-bit hashes (``BloomFilter64``) and its index payload, in numpy.

The bit positions, sizing and serialized bytes follow Paimon's ``BloomFilter64`` and
``BloomFilterFileIndex`` exactly (docs/format.md §7.6), so Java reads the filters lake_assets
writes and lake_assets reads Java's. Hashes come from `lake_assets.formats.fast_hash`; adding or
testing a column's hashes is one numpy pass per hash function, never a Python loop over rows.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from lake_assets.errors import InvalidDataError


def _positions(hashes: np.ndarray, k: int, num_bits: int) -> np.ndarray:
    """The (k, n) bit positions of uint64 hashes: for i in 1..k, ``h1 + i*h2`` in 32-bit wrapping
    arithmetic, bits flipped when negative, modulo the bit count (BloomFilter64.addHash)."""
    h = hashes.astype(np.uint64, copy=False)
    h1 = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    h2 = (h >> np.uint64(32)).astype(np.uint32)
    i = np.arange(1, k + 1, dtype=np.uint32)[:, None]
    combined = (h1[None, :] + i * h2[None, :]).view(np.int32)  # uint32 wraps as Java's int
    combined = np.where(combined < 0, ~combined, combined)
    return combined.astype(np.int64) % num_bits


class BloomFilter64:
    """A bloom filter over 64-bit hashes with Paimon's layout: bit ``i`` is bit ``i & 7`` of byte ``i >> 3``."""

    def __init__(self, num_hash_functions: int, bits: np.ndarray) -> None:
        self.num_hash_functions = num_hash_functions
        self.bits = bits  # uint8, one byte per 8 bits
        self.num_bits = len(bits) * 8

    @classmethod
    def sized(cls, items: int, fpp: float) -> BloomFilter64:
        """An empty filter sized as Java sizes one for ``items`` values at false positive rate ``fpp``."""
        num_bits = bloom_bits(items, fpp)
        if num_bits > INT_MAX:
            raise InvalidDataError(f"A bloom filter of {items} items at fpp {fpp} needs {num_bits} bits, more "
                                   "than Paimon's BloomFilter64 holds (a Java int)")
        k = max(1, _java_round(num_bits / items * math.log(2)))
        return cls(k, np.zeros(num_bits // 8, np.uint8))

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Set the bits of every hash (uint64)."""
        if len(hashes) == 0:
            return
        pos = _positions(hashes, self.num_hash_functions, self.num_bits).reshape(-1)
        # one flag per bit, packed little-endian within each byte: Paimon's bit order
        flags = np.unpackbits(self.bits, bitorder="little").view(bool)
        flags[pos] = True
        self.bits = np.packbits(flags, bitorder="little")

    def might_contain(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash, whether every one of its bits is set (False: the value is surely absent)."""
        pos = _positions(hashes, self.num_hash_functions, self.num_bits)
        hit = (self.bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1
        return np.all(hit == 1, axis=0)

    def to_bytes(self) -> bytes:
        """The index payload: the hash function count (big-endian int), then the bit set."""
        return struct.pack(">i", self.num_hash_functions) + self.bits.tobytes()

    @classmethod
    def from_bytes(cls, payload: bytes, what: str = "bloom-filter index") -> BloomFilter64:
        """The filter of an index payload (Java's or ours)."""
        if len(payload) < 5:
            raise InvalidDataError(f"{what} is truncated ({len(payload)} bytes)")
        (k,) = struct.unpack_from(">i", payload)
        if not 1 <= k <= MAX_HASH_FUNCTIONS:
            # a test computes k positions per value (a k of 2**31 asked for 8 GiB per literal)
            raise InvalidDataError(f"{what} has {k} hash functions (Paimon writes 1 to {MAX_HASH_FUNCTIONS})")
        return cls(k, np.frombuffer(payload, np.uint8, offset=4).copy())


INT_MAX = 2**31 - 1
# Paimon sizes k = round(bits / items * ln 2) = log2(1 / fpp) at the optimum: 1,075 for the
# smallest positive double as fpp. No filter Paimon writes has more.
MAX_HASH_FUNCTIONS = 1075


def bloom_bits(items: int, fpp: float) -> int:
    """BloomFilter64's bit count for ``items`` at ``fpp``: ``nb = (int)(-items ln fpp / ln² 2)``
    rounded up past the next multiple of 8 (always 1..8 bits more). Java's int arithmetic fails
    (a negative array size) when this exceeds `INT_MAX`."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))  # (int) truncates
    return nb + (8 - nb % 8)


def _java_round(x: float) -> int:
    # Math.round: floor(x + 0.5), not Python's round-half-even
    return math.floor(x + 0.5)
