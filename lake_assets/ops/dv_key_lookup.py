"""Where a compaction unit's output keys lie in its bucket's files: the row positions holding them.

A deletion-vector compaction (`ops.dv_compact.VectorUpdate`) marks the rows of the files above the
unit whose key the unit outputs; engines that merge a key's old row in (`ops.dv_old_values`) read
those rows first. Both find them through `FileKeyLookup.found`, one merge step's sorted keys at a
time; every row of a file counts, those its old vector deletes included.

A single integer key is found through a per-file index (`lsm.int_key_positions`: a rank bitmap for
dense keys, else a binary search) cached beside the file's keys, or, in a small file without one,
through a mark of the step's keys (`WantedKeys`); string, binary and composite keys of integers
and strings (and DATEs) through a per-file index of key codes (`lsm.key_ranks.KeyRanks`, cached the
same way); float keys, or a file whose codes collide, through the slice of the file inside the
step's key range (`lsm.key_membership.sorted_positions`). A file whose key range cannot hold any
of the step's keys is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.lsm.int_key_positions import IntKeyPositions, WantedKeys
from lake_assets.lsm.key_compare import compare_keys
from lake_assets.lsm.key_membership import sorted_positions
from lake_assets.lsm.key_ranks import KeyRanks
from lake_assets.ops import deletion_vectors
from lake_assets.ops.dv_row_cache import LOOKUP_CACHE, keep
from lake_assets.ops.scan import Split
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.data_types import (
    BigIntType,
    BinaryType,
    CharType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)
from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.ops.read import SplitReader
    from lake_assets.store.file_store import FileStore

_INTEGER_TYPES = (TinyIntType, SmallIntType, IntType, BigIntType)
# key columns `KeyRanks` searches (Arrow's byte order for strings and binaries is Paimon's; a
# DATE is its day number)
_RANKED_TYPES = (*_INTEGER_TYPES, DateType, CharType, VarCharType, BinaryType, VarBinaryType)

# A file without a built index is tested row by row against a mark of the wanted keys when it
# holds at most this many rows per wanted key (`WantedKeys`): the newest level, looked up once by
# the next round, is not worth an index built and kept (lsm/int_key_positions.py).
MARKED_ROWS_PER_KEY = 4


# (data file path, its size, key column names, what is held: "keys" or "positions")
_CacheKey = tuple[str, int, tuple[str, ...], str]

# The key columns of data files that compactions looked up (an Arrow table) and their
# search-ready integer key index (`IntKeyPositions`), by path and size (data files never change),
# in the process's lookup cache (`ops.dv_row_cache.LOOKUP_CACHE`, within the table's
# ``lookup.cache-max-memory-size``): a writer compacting every commit looks up the same
# upper-level files again and again; Paimon keeps a lookup file cache for the same reason.
_KEY_CACHE = LOOKUP_CACHE


def _cache_budget(store: FileStore) -> int:
    return store.schema.core_options.lookup_cache_max_memory_size


def remember_written_keys(
    store: FileStore, partition: bytes, bucket: int, files: Sequence[DataFileMeta], rows: pa.Table
) -> None:
    """Put the key columns of level-0 ``files`` a writer has just written from ``rows`` (in file
    order, one file after another) into the lookup cache, for deletion-vector tables: the writer's
    own compaction looks them up next (`VectorUpdate.note_relabelled`, and later units the files
    above them), and would otherwise read back what it has just written."""
    if not files or not deletion_vectors.enabled(store.schema):
        return
    names = tuple(store.schema.trimmed_primary_keys)
    if sum(f.row_count for f in files) != rows.num_rows or not set(names) <= set(rows.column_names):
        return  # not the rows of these files: leave it to a read
    keys = rows.select(list(names))
    budget = _cache_budget(store)
    start = 0
    for meta in files:
        path = store.data_file_path(partition, bucket, meta)
        keep((path, meta.file_size, names, "keys"), keys.slice(start, meta.row_count), budget, store.paths.root)
        start += meta.row_count


class FileKeyLookup:
    """Finds one merge step's sorted keys in data files of one bucket (``split``): the positions
    of the rows holding them, through the files' key indexes kept in the lookup cache."""

    def __init__(self, store: FileStore, split: Split, reader: Callable[[], SplitReader]) -> None:
        """``reader`` gives the unit's reader, called only when a file's keys must be read."""
        self.store = store
        self.split = split
        self._reader = reader
        self.key_names = list(store.schema.trimmed_primary_keys)
        self.key_types: list[DataType] = store.schema.types(self.key_names)
        # one integer key column: files are searched through `IntKeyPositions`; string, binary
        # and composite keys of integers and strings through `KeyRanks`
        self._int_key = len(self.key_types) == 1 and isinstance(self.key_types[0], _INTEGER_TYPES)
        self._ranked_key = not self._int_key and all(isinstance(t, _RANKED_TYPES) for t in self.key_types)
        self._bounds: dict[str, tuple[object, object]] = {}  # file name -> its first key column's range
        # file name -> its path (checked once per unit: a unit asks for a file's cached keys and
        # index several times, and each `data_file_path` re-checks the name)
        self._paths: dict[str, str] = {}

    @property
    def int_key(self) -> bool:
        """Whether the key is one integer column (files are searched through `IntKeyPositions`)."""
        return self._int_key

    @property
    def ranked_key(self) -> bool:
        """Whether the key is of string, binary or integer columns but not one integer column
        (files are searched through `KeyRanks`)."""
        return self._ranked_key

    def found(self, keys: pa.Table, files: Iterable[DataFileMeta]) -> list[tuple[DataFileMeta, np.ndarray]]:
        """Each of ``files`` holding a key of ``keys`` (key columns, sorted, one row per key), with
        the ascending positions of those rows: every row of the file counts, those its old vector
        deletes included."""
        if not keys.num_rows:
            return []
        wanted = _sorted_int_keys(keys) if self._int_key else None
        marks = WantedKeys(wanted) if wanted is not None else None  # built at first use
        # a string or composite key's codes, computed for the first file and reused (`KeyRanks`)
        codes: dict[str, np.ndarray] = {}
        selected = keys.select(self.key_names) if self._ranked_key else keys
        out = []
        for meta in files:
            if not self._may_hold(meta, keys, wanted):
                continue
            positions = self._positions(meta, selected, marks, codes)
            if positions.size:
                out.append((meta, positions))
        return out

    def _path(self, meta: DataFileMeta) -> str:
        path = self._paths.get(meta.file_name)
        if path is None:
            path = self._paths[meta.file_name] = self.store.data_file_path(self.split.partition, self.split.bucket,
                                                                           meta)
        return path

    def file_keys(self, meta: DataFileMeta) -> pa.Table:
        """``meta``'s key columns, every row in file order (no deletion vector applied), cached."""
        cache_key = (self._path(meta), meta.file_size, tuple(self.key_names), "keys")
        keys = _KEY_CACHE.get(cache_key)
        if not isinstance(keys, pa.Table):
            whole = Split(self.split.partition, self.split.partition_values, self.split.bucket,
                          self.split.total_buckets, [meta])
            keys = self._reader().read_file(whole, meta, False, self.key_names)
            keep(cache_key, keys, _cache_budget(self.store), self.store.paths.root)
        return keys

    def _index_key(self, meta: DataFileMeta) -> _CacheKey:
        return (self._path(meta), meta.file_size, tuple(self.key_names), "positions")

    def _file_index(self, meta: DataFileMeta) -> IntKeyPositions | None:
        """The search-ready index of ``meta``'s single integer key column, cached beside its keys
        (None when the column holds nulls: a primary key never does)."""
        cache_key = self._index_key(meta)
        index = _KEY_CACHE.get(cache_key)
        if not isinstance(index, IntKeyPositions):
            built = _int_index(self.file_keys(meta))
            if built is None:
                return None
            index = built
            keep(cache_key, index, _cache_budget(self.store), self.store.paths.root)
        return index

    def _file_ranks(self, meta: DataFileMeta) -> KeyRanks | None:
        """The `KeyRanks` of ``meta``'s keys, cached beside them (None: its keys are not one
        row per key in key order, or have nulls)."""
        cache_key = self._index_key(meta)
        index = _KEY_CACHE.get(cache_key)
        if isinstance(index, KeyRanks):
            return index
        built = KeyRanks.build(self.file_keys(meta).select(self.key_names))
        if built is not None:
            keep(cache_key, built, _cache_budget(self.store), self.store.paths.root)
        return built

    def _may_hold(self, meta: DataFileMeta, keys: pa.Table, wanted: np.ndarray | None) -> bool:
        """Whether ``meta``'s key range can hold a key of ``keys`` (by the first key column; float
        keys are not pruned, their order differs from the stored one)."""
        typ = self.key_types[0]
        if isinstance(typ, (FloatType, DoubleType)):
            return True
        if wanted is not None:  # sorted already: its ends are its bounds
            lo, hi = (int(wanted[0]), int(wanted[-1])) if wanted.size else (None, None)
        else:
            bounds = pc.min_max(keys.column(self.key_names[0]))
            lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        if lo is None:
            return False
        file_bounds = self._bounds.get(meta.file_name)
        if file_bounds is None:
            file_bounds = self._bounds[meta.file_name] = (deserialize_row(meta.min_key, self.key_types)[0],
                                                          deserialize_row(meta.max_key, self.key_types)[0])
        first = [typ]
        return (compare_keys((file_bounds[0],), (hi,), first) <= 0
                and compare_keys((lo,), (file_bounds[1],), first) <= 0)

    def _positions(self, meta: DataFileMeta, keys: pa.Table, marks: WantedKeys | None,
                   codes: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Ascending row positions of ``meta`` whose key is among ``keys`` (the file read whole, in
        order, without its deletion vector: positions count every row). ``keys`` are one merge
        step's output, sorted by key, one row per key (``marks``: their values as sorted
        integers, for an integer key)."""
        if marks is None:
            ranks = self._file_ranks(meta) if self._ranked_key else None
            if ranks is not None:
                # a binary search of the step's keys among the file's, by ranks: no hash table
                # of the file's (or the step's) keys per step, no join for a composite key
                return ranks.find(keys.select(self.key_names), codes)
            return sorted_positions(self.file_keys(meta), keys, self.key_names)
        cached = _KEY_CACHE.get(self._index_key(meta))
        if (not isinstance(cached, IntKeyPositions) and marks.markable
                and meta.row_count <= MARKED_ROWS_PER_KEY * marks.values.size):
            # a small file without an index (the newest level): its rows against the keys' mark
            column = self.file_keys(meta).column(0)
            if not column.null_count and pa.types.is_signed_integer(column.type):
                return marks.positions_in(column.to_numpy())
        index = cached if isinstance(cached, IntKeyPositions) else self._file_index(meta)
        if index is not None:
            # no hash table over the file's keys: a rank bitmap or a binary search of its own
            # share of the keys (they spread over the sorted run's files)
            return index.find(marks.values)
        return sorted_positions(self.file_keys(meta), keys, self.key_names)



def _sorted_int_keys(keys: pa.Table) -> np.ndarray | None:
    """The distinct values of a one-column integer key table, sorted; None with nulls (a key
    never has them; the generic path then decides)."""
    column = keys.column(0)
    if column.null_count:
        return None
    values: np.ndarray = column.to_numpy()
    # a merge step's output is sorted with one row per key: checked, not assumed
    if values.size > 1 and not bool(np.all(values[1:] > values[:-1])):
        # by a sort: numpy 2.x's plain np.unique takes a hash path measured 20x slower
        values = np.sort(values)
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


def _int_index(keys: pa.Table) -> IntKeyPositions | None:
    """The `IntKeyPositions` of a one-column integer key table (a file's keys in file order), or
    None when the column has nulls (then the generic path decides, as for any key)."""
    column = keys.column(0)
    if column.null_count or not pa.types.is_integer(column.type):
        return None
    return IntKeyPositions(column.to_numpy())


__all__ = ["MARKED_ROWS_PER_KEY", "FileKeyLookup", "remember_written_keys"]
