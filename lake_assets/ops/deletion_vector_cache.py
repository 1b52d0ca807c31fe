"""A process-wide, byte-bounded cache of decoded deletion-vector index files.

Index files are immutable and their names unique (``index-<uuid>-<n>``), so a decoded file stays
valid for the life of the process: repeated reads of a table (streaming polls, Spark tasks in one
worker, health checks) need not fetch and decode the same files again. The key is the table's
root, the file name and the file's size as its index manifest records it: a table directory
deleted and created again under the same root writes files of new names, and a name reused with
other content would have to match the size too. Entries are evicted least recently used first
once their sizes (the index files' sizes: the serialized vectors, about their decoded size) pass
`DV_CACHE_MAX_BYTES`. Callers must not mutate the vectors they get (copy first, as compaction does).

A cached file is still checked on storage, once per loader (one read's plan): the cache saves
fetching and decoding, never the answer a fresh process would give. A file that is gone (its
snapshot was expired, or the table lost it) or whose size is not the one its index manifest
records fails as its read would (`check_index_file`), cached or not. Damage that keeps the size
(an in-place rewrite of an immutable file) is only found by reading it, which a cache hit skips.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from lake_assets.errors import CorruptMetadataError, MissingDataFileError
from lake_assets.spec.deletion_vector import DeletionVector

# Bytes of index files the cache keeps decoded; a file larger than this is never cached.
DV_CACHE_MAX_BYTES = 64 * 1024 * 1024

CacheKey = tuple[str, str, int]  # (table root, index file name, file size)


class IndexFileCache:
    """LRU of index file -> (data file name -> deletion vector), bounded by ``max_bytes``. Thread-safe."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[CacheKey, tuple[dict[str, DeletionVector], int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: CacheKey) -> dict[str, DeletionVector] | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0]

    def put(self, key: CacheKey, vectors: dict[str, DeletionVector], nbytes: int) -> None:
        if nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (vectors, nbytes)
            self._bytes += nbytes
            while self._bytes > self.max_bytes:
                _, (_, size) = self._entries.popitem(last=False)
                self._bytes -= size

    @property
    def nbytes(self) -> int:
        """Bytes (of index files) held now."""
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


def check_index_file(table: str, file_name: str, recorded_size: int, actual_size: int | None) -> None:
    """Raise what reading deletion-vector index file ``file_name`` of ``table`` gives when its
    size on storage (None: the file is missing) is not the ``recorded_size`` of its index manifest
    entry: the one check of both a fresh read and a cache hit, so both fail alike.

    A missing file is a `MissingDataFileError` (a read maps it to `ConcurrentMaintenanceError`
    when the snapshot it planned was expired meanwhile, as for data files)."""
    if actual_size is None:
        raise MissingDataFileError(f"Table {table}: deletion vector index file {file_name} is missing")
    if actual_size != recorded_size:
        raise CorruptMetadataError(
            f"Table {table}: deletion vector index file {file_name} has {actual_size} bytes, but its index "
            f"manifest records {recorded_size}"
        )


INDEX_FILE_CACHE = IndexFileCache(DV_CACHE_MAX_BYTES)
