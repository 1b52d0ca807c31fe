"""A process-wide, bounded cache of parsed Parquet footers of data files.

Data files are immutable and their names unique (``data-<uuid>-<n>``), so what a read learns from a
file's footer - pyarrow's parsed `FileMetaData`, its Arrow schema, which string columns read through
their dictionaries (`parquet_read.dictionary_columns`) - holds for the life of the process.
Repeated reads of a table (the benchmark's best-of-N, dashboards polling a table, Spark tasks in
one worker) then open each file once with the parsed metadata instead of opening it, parsing the
footer, opening it again and walking the footer's Thrift bytes: about 0.15 ms of CPU per file.

Only footers are cached, never rows: every read still opens the file itself (a count of its rows
alone looks up its size instead: `data_file_row_count`), so a file that was deleted (expiry, a
replaced file) fails as it did, and a cached footer is used only when the file has the size it had
when the footer was parsed (a file truncated or rewritten in place is parsed again). The key is the
file's full path, table root included. Entries are evicted least recently used first beyond
`FOOTER_CACHE_MAX_ENTRIES` footers or `FOOTER_CACHE_MAX_BYTES` bytes: an entry counts its
serialized footer and the dictionary decisions reads added to it, one per column set asked for
(`decision_nbytes`), so a file read with many projections grows its entry within the bound rather
than beside it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

# Bounds of the process-wide cache: footers held, and the sum of their bytes (`Footer.nbytes`).
FOOTER_CACHE_MAX_ENTRIES = 4096
FOOTER_CACHE_MAX_BYTES = 32 * 1024 * 1024
# What one dictionary decision costs beyond its column names' characters: the dict slot, the key
# tuple and the list (CPython: about 56 + 40 + 56 bytes empty), and a pointer per name in each.
DECISION_FIXED_BYTES = 160
DECISION_BYTES_PER_NAME = 8 + 49  # a pointer and a str object's header


def decision_nbytes(columns: tuple[str, ...] | None, decided: list[str]) -> int:
    """The bytes a dictionary decision (``columns`` asked for, ``decided`` read through their
    dictionaries) counts against the cache's byte bound: an estimate of what CPython holds."""
    names = (*(columns or ()), *decided)
    return DECISION_FIXED_BYTES + sum(DECISION_BYTES_PER_NAME + len(n) for n in names)


@dataclass
class Footer:
    """What a read keeps of one file's footer. ``dictionary_columns`` maps a requested column set
    (None: all) to the string columns read through their dictionaries; it is filled as reads ask,
    through `FooterCache.decide` (which counts each decision's bytes)."""

    file_size: int
    metadata: pq.FileMetaData
    arrow_schema: pa.Schema
    dictionary_columns: dict[tuple[str, ...] | None, list[str]] = field(default_factory=dict)
    decisions_nbytes: int = 0  # `decision_nbytes` of the decisions in ``dictionary_columns``

    @property
    def nbytes(self) -> int:
        """What the entry counts against the byte bound: the serialized footer's size plus its
        dictionary decisions."""
        return int(self.metadata.serialized_size) + self.decisions_nbytes


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

    def parsed_size(self, path: str) -> int | None:
        """The size ``path`` had when its cached footer was parsed; None when none is cached. A
        look only (no change to the recency order): the caller checks the file's size first."""
        with self._lock:
            hit = self._entries.get(path)
            return None if hit is None else hit.file_size

    def put(self, path: str, footer: Footer) -> None:
        """Hold ``footer`` as the entry of ``path`` (not when it alone exceeds the byte bound),
        evicting the least recently used entries beyond the bounds."""
        with self._lock:  # its decisions may grow it meanwhile: measured under the lock
            nbytes = footer.nbytes
            if nbytes > self.max_bytes:
                return
            old = self._entries.pop(path, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._entries[path] = footer
            self._bytes += nbytes
            self._evict()

    def decide(self, path: str | None, footer: Footer, columns: tuple[str, ...] | None,
               decided: list[str]) -> list[str]:
        """Record on ``footer`` (the entry of ``path`` when it is cached) that ``columns`` read
        ``decided`` through their dictionaries, counting its bytes, and give the recorded
        decision (the first one when racing threads decide the same columns: both are right)."""
        with self._lock:
            if columns in footer.dictionary_columns:
                return footer.dictionary_columns[columns]
            footer.dictionary_columns[columns] = decided
            nbytes = decision_nbytes(columns, decided)
            footer.decisions_nbytes += nbytes
            if path is None or self._entries.get(path) is not footer:
                return decided  # not held here: nothing counted against the bound
            self._bytes += nbytes
            if footer.nbytes > self.max_bytes:
                # grown past the whole bound by its decisions: dropped, as `put` refuses it
                del self._entries[path]
                self._bytes -= footer.nbytes
            self._evict()
            return decided

    def _evict(self) -> None:
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

__all__ = ["FOOTER_CACHE", "FOOTER_CACHE_MAX_BYTES", "FOOTER_CACHE_MAX_ENTRIES", "Footer", "FooterCache",
           "decision_nbytes"]
