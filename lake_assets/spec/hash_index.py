"""Hash index files of dynamic-bucket primary-key tables (docs/format.md §4.6).

A hash index file lists the keys of one (partition, bucket): one int32 per key, the murmur hash
(§6.2) of the key's trimmed-primary-key BinaryRow, written big-endian, nothing else (no header,
no count: Paimon's ``IntFileUtils``). The index manifest entry that names it has index type
``HASH`` and ``_ROW_COUNT`` = the number of hashes. A dynamic-bucket writer loads a partition's
files to find the bucket of a key it has seen before, and counts a bucket's hashes to tell whether
it is full.
"""

from __future__ import annotations

import numpy as np

from lake_assets.errors import CorruptMetadataError

HASH_INDEX = "HASH"
# Prefix of index file names under ``index/`` (Paimon's IndexPathFactory: index-<uuid>-<n>).
INDEX_FILE_PREFIX = "index-"


def encode_hashes(hashes: np.ndarray) -> bytes:
    """The bytes of a hash index file holding ``hashes`` (int32, in the given order)."""
    return np.ascontiguousarray(hashes, dtype=">i4").tobytes()


def decode_hashes(data: bytes, name: str) -> np.ndarray:
    """The int32 hashes of a hash index file's bytes.

    Raises `CorruptMetadataError` when the length is not a multiple of 4: a torn file would
    otherwise lose the key whose bytes are cut, and the writer would give that key a second bucket.
    """
    if len(data) % 4:
        raise CorruptMetadataError(
            f"Hash index file {name} has {len(data)} bytes, not a multiple of 4 (a torn or foreign file)"
        )
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


__all__ = ["HASH_INDEX", "INDEX_FILE_PREFIX", "decode_hashes", "encode_hashes"]
