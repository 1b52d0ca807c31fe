"""Decoded hash indexes of dynamic-bucket tables, shared by the writers of one process.

Every writer of a dynamic-bucket table starts by loading the partitions' HASH index files it
writes to (`lake_assets.ops.dynamic_bucket`): decoding them and sorting their hashes into one
lookup array costs as much as the upsert itself once a partition holds a million keys, and
``Table.write_arrow`` makes a new writer per call. Index files never change once written (a new
one replaces an old one under a new name), so what was loaded from a given set of files can be
reused by the next writer: entries are keyed by the table's index directory and the file names,
and hold read-only arrays (writers replace them, never modify them). Least recently used entries
go first once the byte budget is exceeded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np


class LoadedIndexCache:
    """Arrays loaded from immutable index files, by key, within a byte budget (thread-safe)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[tuple[np.ndarray, ...], dict[int, int]]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[tuple[np.ndarray, ...], dict[int, int]] | None:
        """The arrays and counts stored under ``key`` (the counts as a copy the caller may change)."""
        with self._lock:
            got = self._items.get(key)
            if got is None:
                return None
            self._items.move_to_end(key)
            return got[0], dict(got[1])

    def put(self, key: Hashable, arrays: tuple[np.ndarray, ...], counts: dict[int, int] | None = None) -> None:
        """Keep ``arrays`` (made read-only) and ``counts`` under ``key``; too big ones are not kept."""
        size = sum(a.nbytes for a in arrays)
        if size > self.max_bytes // 4:
            return
        for a in arrays:
            a.flags.writeable = False
        with self._lock:
            if key in self._items:
                return
            self._items[key] = (arrays, dict(counts or {}))
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (old, _) = self._items.popitem(last=False)
                self._bytes -= sum(a.nbytes for a in old)


# One per process: a partition of 1,000,000 keys takes 8 MB (hash + bucket per key), a file 4 bytes a key.
LOADED_INDEXES = LoadedIndexCache(128 * 1024 * 1024)

__all__ = ["LOADED_INDEXES", "LoadedIndexCache"]
