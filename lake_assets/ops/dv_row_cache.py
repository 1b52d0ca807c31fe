"""Decoded rows of the files a deletion-vector compaction takes old rows from, kept between rounds.

A writer of a partial-update, aggregation or ``sequence.field`` table with deletion vectors merges
each key's live row above the compaction unit into its output (`ops.dv_old_values`). Those rows
come from the same files round after round: a bucket's upper levels change only when a
compaction writes them, and the top level holds most keys. Decoding the whole top-level file for a
tenth of its rows, every round, was the largest part of such a round's cost (bench/RESULTS.md,
"Deletion-vector upsert round, round 7"). Paimon's writer keeps looked-up files local between
compactions for the same reason (``LookupLevels``' lookup file cache, bounded by the
``lookup.cache-*`` options).

`LookedUpRows` keeps a file's rows decoded (every row, in file order, with the system columns and
the level column a unit's reader gives, no deletion vector applied: positions count every row) and
answers a unit's positions with a ``take``. Entries are keyed by the file's path, size and level
and the read schema's id (data files never change; an upgraded file is read again under its new
level). Memory: one cache per process (`LOOKUP_CACHE`), with the key columns and key indexes
`ops.dv_compact` keeps, accounted per table: a table's entries stay within its own
``lookup.cache-max-memory-size`` (Paimon's option, default 256 mb; as Java, where each table's
writer has its own lookup cache), its least recently used out first, and the whole cache within
the largest budget of the tables holding entries (the least recently used entry of any table out
first), so a second table in the process neither adds its budget to the first's nor shrinks the
first's to its own. A file whose rows take more than a quarter of its table's budget is not kept,
and only its selected rows are decoded, each time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa

from lake_assets.spec.manifest import DataFileMeta

# (data file path, its size, its level, the read schema's id)
RowsKey = tuple[str, int, int, int]


class Sized(Protocol):
    """What the cache holds: anything that knows its size (an Arrow table, a key index)."""

    @property
    def nbytes(self) -> int: ...


class _LookupCache:
    """What lookup compactions keep between rounds, by a tuple key, least recently used out first:
    whole files' decoded rows (`RowsKey`) and, from `ops.dv_compact`, files' key columns and key
    indexes (their own keys). Each entry belongs to a table (its ``owner``, the table's path):
    a table's entries stay within the budget of its last `put`, all entries within the largest
    budget of the tables holding any."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[object, ...], tuple[Sized, str]] = OrderedDict()
        self._owned: dict[str, OrderedDict[tuple[object, ...], None]] = {}  # each table's keys, LRU first
        self._owner_bytes: dict[str, int] = {}
        self._owner_budget: dict[str, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return self._bytes

    def owner_nbytes(self, owner: str) -> int:
        """Bytes held for one table."""
        return self._owner_bytes.get(owner, 0)

    def get(self, key: tuple[object, ...]) -> Sized | None:
        with self._lock:
            got = self._items.get(key)
            if got is None:
                return None
            self._items.move_to_end(key)
            self._owned[got[1]].move_to_end(key)
            return got[0]

    def put(self, key: tuple[object, ...], value: Sized, budget: int, owner: str = "") -> None:
        """Keep ``value`` for table ``owner``, whose budget is now ``budget``; then drop that
        table's least recently used entries until it holds at most ``budget`` bytes (``value``
        too, when it alone exceeds it), and anyone's until the cache holds at most the largest
        budget of the tables holding entries."""
        with self._lock:
            self._owner_budget[owner] = budget
            if key not in self._items:
                self._items[key] = (value, owner)
                self._owned.setdefault(owner, OrderedDict())[key] = None
                self._owner_bytes[owner] = self._owner_bytes.get(owner, 0) + value.nbytes
                self._bytes += value.nbytes
            owned = self._owned[owner]
            while owned and self._owner_bytes[owner] > budget:
                self._drop(next(iter(owned)))
            while self._items and self._bytes > max(self._owner_budget[o] for o in self._owned):
                self._drop(next(iter(self._items)))

    def _drop(self, key: tuple[object, ...]) -> Sized:
        value, owner = self._items.pop(key)
        owned = self._owned[owner]
        del owned[key]
        self._bytes -= value.nbytes
        self._owner_bytes[owner] -= value.nbytes
        if not owned:  # a table without entries no longer widens the cache's bound
            del self._owned[owner], self._owner_bytes[owner], self._owner_budget[owner]
        return value

    def pop(self, key: tuple[object, ...]) -> Sized | None:
        with self._lock:
            return self._drop(key) if key in self._items else None

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._owned.clear()
            self._owner_bytes.clear()
            self._owner_budget.clear()
            self._bytes = 0


LOOKUP_CACHE = _LookupCache()
"""One per process: each table's entries within its ``lookup.cache-max-memory-size``, all within
the largest of the budgets of the tables holding entries."""


def keep(key: tuple[object, ...], value: Sized, budget: int, owner: str = "") -> None:
    """Put ``value`` in `LOOKUP_CACHE` for table ``owner`` (its path) unless it takes more than a
    quarter of ``budget`` (the table's ``lookup.cache-max-memory-size``)."""
    if value.nbytes <= budget // 4:
        LOOKUP_CACHE.put(key, value, budget, owner)


class LookedUpRows:
    """The rows a unit selects from files above it, from `LOOKUP_CACHE` where a file's rows are
    kept. ``read_whole(meta)`` decodes every row of a file, ``read_selected(meta, positions)``
    only the rows at those positions (both with the unit reader's columns; the selection is sized
    by the file's own count, never by the manifest's alone: `ops.file_rows`); ``key(meta)`` names its
    entry; ``budget`` is ``lookup.cache-max-memory-size`` in bytes (0: nothing is kept) of the
    table at path ``owner``."""

    def __init__(
        self,
        read_whole: Callable[[DataFileMeta], pa.Table],
        read_selected: Callable[[DataFileMeta, np.ndarray], pa.Table],  # (file, ascending positions)
        key: Callable[[DataFileMeta], RowsKey],
        budget: int,
        owner: str = "",
    ) -> None:
        self._read_whole = read_whole
        self._read_selected = read_selected
        self.key = key
        self.budget = budget
        self.owner = owner

    def rows(self, meta: DataFileMeta, positions: np.ndarray) -> pa.Table:
        """The rows of ``meta`` at ``positions`` (ascending, counting every row of the file), in
        file order."""
        table, at = self.source(meta, positions)
        return table if at is None else table.take(pa.array(at, type=pa.int64()))

    def source(self, meta: DataFileMeta, positions: np.ndarray) -> tuple[pa.Table, np.ndarray | None]:
        """A table holding the rows of ``meta`` at ``positions`` and where they are in it: the
        whole file's kept rows and ``positions``, or the selected rows alone and None (a caller
        gathering from several tables takes them in one pass: `ops.dv_old_values`)."""
        if self._fits(meta):
            key = self.key(meta)
            got = LOOKUP_CACHE.get(key)
            whole = got if isinstance(got, pa.Table) else self._read_whole(meta)
            if whole.num_rows != meta.row_count:
                whole = None  # a row count other than the manifest's: decode only what is asked, keep nothing
            elif got is None:
                keep(key, whole, self.budget, self.owner)
            if whole is not None:
                return whole, positions
        return self._read_selected(meta, positions), None

    def _fits(self, meta: DataFileMeta) -> bool:
        """Whether ``meta``'s rows may be kept: by the file's size on storage, a lower bound of
        its decoded rows (a file that cannot fit is never decoded whole)."""
        return 0 < meta.file_size <= self.budget // 4


def remember_written_rows(
    files: Sequence[DataFileMeta], rows: pa.Table, key: Callable[[DataFileMeta], RowsKey], budget: int,
    owner: str = "",
) -> None:
    """Keep the rows of ``files`` a compaction has just written from ``rows`` (in file order, one
    file after another; the reader's columns and level column) for table ``owner`` (`keep`): the
    next round takes old rows from these very files, and would otherwise decode what was just
    encoded."""
    if not files or budget <= 0 or sum(f.row_count for f in files) != rows.num_rows:
        return
    start = 0
    for meta in files:
        part = rows.slice(start, meta.row_count)
        start += meta.row_count
        if 0 < meta.file_size <= budget // 4:
            keep(key(meta), part, budget, owner)


FLUSHED_LEVEL = -1
"""The level of a `RowsKey` whose rows are a level-0 file's as the writer's flush held them
(`remember_written_rows` with `flushed_key`): the same round's compaction rewrites that file
through the merge (`take_flushed`), where it would otherwise decode what was just encoded."""


def flushed_key(path: str, meta: DataFileMeta, schema_id: int) -> RowsKey:
    """The key of a level-0 file's rows as the writer's flush held them."""
    return (path, meta.file_size, FLUSHED_LEVEL, schema_id)


def take_flushed(key: RowsKey) -> pa.Table | None:
    """The rows `flushed_key` names, removed from the cache (a level-0 file is rewritten once)."""
    got = LOOKUP_CACHE.pop(key)
    return got if isinstance(got, pa.Table) else None


__all__ = ["FLUSHED_LEVEL", "LOOKUP_CACHE", "LookedUpRows", "RowsKey", "Sized", "flushed_key", "keep",
           "remember_written_rows", "take_flushed"]
