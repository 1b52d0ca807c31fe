"""A process-wide, bounded cache of parsed Parquet footers of data files.

Data files are immutable and their names unique (``data-<uuid>-<n>``), so what a read learns from a
file's footer - pyarrow's parsed `FileMetaData`, its Arrow schema, which string columns read through
their dictionaries (`parquet_read.dictionary_columns`) - holds for the life of the process.
Repeated reads of a table (the benchmark's best-of-N, dashboards polling a table, Spark tasks in
one worker) then open each file once with the parsed metadata instead of opening it, parsing the
footer, opening it again and walking the footer's Thrift bytes: about 0.15 ms of CPU per file.

Only footers are cached, never rows: every read still opens the file itself, so a file that was
deleted (expiry, a replaced file) fails as it did, and a cached footer is used only when the file
opened has the size it had when the footer was parsed (a file truncated or rewritten in place is
parsed again). The key is the file's full path, table root included. Entries are evicted least
recently used first beyond `FOOTER_CACHE_MAX_ENTRIES` footers or `FOOTER_CACHE_MAX_BYTES` bytes of
serialized footers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

# Bounds of the process-wide cache: footers held, and the sum of their serialized sizes.
FOOTER_CACHE_MAX_ENTRIES = 4096
FOOTER_CACHE_MAX_BYTES = 32 * 1024 * 1024


@dataclass
class Footer:
    """What a read keeps of one file's footer. ``dictionary_columns`` maps a requested column set
    (None: all) to the string columns read through their dictionaries; it is filled as reads ask."""

    file_size: int
    metadata: pq.FileMetaData
    arrow_schema: pa.Schema
    dictionary_columns: dict[tuple[str, ...] | None, list[str]] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        """The serialized footer's size: what the entry counts against the byte bound."""
        return int(self.metadata.serialized_size)


class FooterCache:
    """LRU of file path -> `Footer`, bounded by entries and bytes. Thread-safe."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, Footer] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, path: str, file_size: int) -> Footer | None:
        """The footer of ``path`` parsed when the file had ``file_size`` bytes; None otherwise
        (a footer of another size is dropped: the file is not the one it was parsed from)."""
        with self._lock:
            hit = self._entries.get(path)
            if hit is None:
                return None
            if hit.file_size != file_size:
                del self._entries[path]
                self._bytes -= hit.nbytes
                return None
            self._entries.move_to_end(path)
            return hit

    def put(self, path: str, footer: Footer) -> None:
        nbytes = footer.nbytes
        if nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(path, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._entries[path] = footer
            self._bytes += nbytes
            while self._bytes > self.max_bytes or len(self._entries) > self.max_entries:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.nbytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes (of serialized footers) held now."""
        return self._bytes


FOOTER_CACHE = FooterCache(FOOTER_CACHE_MAX_ENTRIES, FOOTER_CACHE_MAX_BYTES)

__all__ = ["FOOTER_CACHE", "FOOTER_CACHE_MAX_BYTES", "FOOTER_CACHE_MAX_ENTRIES", "Footer", "FooterCache"]
