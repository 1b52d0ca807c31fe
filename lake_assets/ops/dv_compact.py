"""Deletion vectors written by compaction, as Paimon's lookup compaction writes them.

With ``deletion-vectors.enabled``, a compaction unit of a bucket takes all of level 0 (Paimon's
ForceUpLevel0Compaction) and rewrites every level-0 file. Every key of its merged output is newer
than any row of the bucket's files above the unit (universal compaction picks the newest runs),
so each such row is superseded: its position goes into the deletion vector of its file. Retract
rows are dropped from the output at every level, since the vectors now hide the rows they
retracted. After the commit, every key of the bucket has one live row above level 0, and reads
need no merge (`ops/deletion_vectors.py`). Engines whose result depends on that row
(partial-update, aggregation, ``sequence.field``) merge it in first (`ops/dv_old_values.py`, through
`VectorUpdate.found`, `live` and `record`).

The bucket's vectors live in one index file: the unit writes a new one holding the vectors of
files that stay live (old marks plus new ones; rewritten files' vectors go with them) and the
commit message swaps it for the old one (`CommitMessage.index_before` / ``index_after``).

The lookup runs as the unit merges: each merge step's output keys are found in the files above
(`VectorUpdate.note`) and only the found row positions are kept, a bitmap per file. A single
integer key is found through a per-file index (`lsm.int_key_positions`: a rank bitmap for dense
keys, else a binary search) cached beside the file's keys, or, in a small file without one,
through a mark of the step's keys (`WantedKeys`); string, binary and composite keys of integers
and strings (and DATEs) through a per-file index of key codes (`lsm.key_ranks.KeyRanks`, cached the
same way); float keys, or a file whose codes collide, through the slice of the file inside the
step's key range (`lsm.key_membership.sorted_positions`). The found positions of a file go
into a copy of its old vector.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lake_assets.lsm.int_key_positions import IntKeyPositions, WantedKeys
from lake_assets.lsm.key_compare import compare_keys
from lake_assets.lsm.key_membership import sorted_positions
from lake_assets.lsm.key_ranks import KeyRanks
from lake_assets.ops import deletion_vectors
from lake_assets.ops.deletion_vector_cache import INDEX_FILE_CACHE
from lake_assets.ops.deletion_vectors import DELETION_VECTORS_INDEX, VectorLoader, deleted_rows
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
from lake_assets.spec.deletion_vector import (
    DeletionVector,
    add_positions,
    deleted_mask,
    encode_index_file,
    new_vector,
)
from lake_assets.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry

if TYPE_CHECKING:
    from lake_assets.ops.read import SplitReader
    from lake_assets.store.file_store import FileStore

_INTEGER_TYPES = (TinyIntType, SmallIntType, IntType, BigIntType)
# key columns `KeyRanks` searches (Arrow's byte order for strings and binaries is Paimon's; a
# DATE is its day number)
_RANKED_TYPES = (*_INTEGER_TYPES, DateType, CharType, VarCharType, BinaryType, VarBinaryType)


DELETE_RATIO_THRESHOLD = "compaction.delete-ratio-threshold"
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


def delete_heavy_files(store: FileStore, split: Split) -> list[DataFileMeta]:
    """Files above level 0 whose deletion vector hides at least ``compaction.delete-ratio-threshold``
    of their rows (Paimon's option, default 0.2): compaction rewrites them in place, so their
    dead rows stop costing reads and storage."""
    if not split.dv_entries:
        return []
    threshold = float(store.schema.core_options.raw.get(DELETE_RATIO_THRESHOLD, "0.2"))
    if threshold <= 0:
        return []
    deleted = deleted_rows(store, split.dv_entries)
    return [f for f in split.files
            if f.level > 0 and f.row_count and deleted.get(f.file_name, 0) / f.row_count >= threshold]


class VectorUpdate:
    """Looks up the keys a compaction unit outputs in the bucket's files above it, batch by batch
    as the unit merges them, then writes the bucket's new vectors.

    Memory: what it holds between batches is one bitmap of row positions per file (the found ones,
    with the file's old vector for a file looked up: at most a bit per row of the file), never the
    unit's output keys: a unit's output may be far larger than one merge step
    (``compaction.merge-rows``)."""

    def __init__(
        self,
        store: FileStore,
        split: Split,
        reader: Callable[[], SplitReader],
        lookup_files: Sequence[DataFileMeta],
        rewrite_files: Sequence[DataFileMeta] = (),
        vectors: VectorLoader | None = None,
    ) -> None:
        """``lookup_files`` get new marks in their vectors; ``rewrite_files`` (rewritten beside
        the unit, `without_superseded`) lose the rows the unit supersedes instead. ``reader``
        gives the unit's reader, called only when a file's keys must be read: a unit that
        relabels a level-0 file whose keys the writer cached (`remember_written_keys`) reads no
        row and builds none (its set-up was most of such a unit's cost). ``vectors`` loads the
        old vectors: the unit reader's loader, so that an index file is checked on storage once
        per unit (default: a loader of its own)."""
        self.store = store
        self.split = split
        self._reader = reader
        self._loader = vectors if vectors is not None else VectorLoader(store)
        self.lookup_files = list(lookup_files)
        self.key_names = list(store.schema.trimmed_primary_keys)
        self.key_types: list[DataType] = store.schema.types(self.key_names)
        # one integer key column: files are searched through `IntKeyPositions`; string, binary
        # and composite keys of integers and strings through `KeyRanks`
        self._int_key = len(self.key_types) == 1 and isinstance(self.key_types[0], _INTEGER_TYPES)
        self._ranked_key = not self._int_key and all(isinstance(t, _RANKED_TYPES) for t in self.key_types)
        self._targets = {f.file_name: f for f in (*self.lookup_files, *rewrite_files)}
        self._rewrite_names = {f.file_name for f in rewrite_files}
        self._found: dict[str, BitMap] = {}  # rewritten file -> positions whose key the unit output
        self._marked: dict[str, DeletionVector] = {}  # looked-up file -> its old vector plus those positions
        self._bounds: dict[str, tuple[object, object]] = {}  # file name -> its first key column's range
        self._kept: dict[str, np.ndarray | None] = {}  # file name -> the rows its old vector keeps
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

    def note(self, merged: pa.Table) -> None:
        """Look up the keys of merged output rows (retract rows included: they supersede too), one
        merge step's sorted output at a time; nothing of ``merged`` is kept."""
        for meta, positions in self.found(merged.select(self.key_names)):
            self.record(meta.file_name, positions)

    def found(self, keys: pa.Table) -> list[tuple[DataFileMeta, np.ndarray]]:
        """Each file above the unit (or rewritten beside it) holding a key of ``keys`` (key columns,
        sorted, one row per key), with the ascending positions of those rows: every row of the
        file counts, those its old vector deletes included."""
        if not keys.num_rows:
            return []
        wanted = _sorted_int_keys(keys) if self._int_key else None
        marks = WantedKeys(wanted) if wanted is not None else None  # built at first use
        # a string or composite key's codes, computed for the first file and reused (`KeyRanks`)
        codes: dict[str, np.ndarray] = {}
        selected = keys.select(self.key_names) if self._ranked_key else keys
        out = []
        for meta in self._targets.values():
            if not self._may_hold(meta, keys, wanted):
                continue
            positions = self._positions(meta, selected, marks, codes)
            if positions.size:
                out.append((meta, positions))
        return out

    def live(self, meta: DataFileMeta, positions: np.ndarray) -> np.ndarray:
        """The ``positions`` of ``meta`` its old vector keeps (rows a read of the bucket still sees)."""
        name = meta.file_name
        if name not in self._kept:  # once per file and unit, not per merge step
            self._kept[name] = deleted_mask(self._old_vectors().get(name), meta.row_count, name)
        kept = self._kept[name]
        return positions if kept is None else positions[kept[positions]]

    def record(self, name: str, positions: np.ndarray) -> None:
        """Keep ``positions`` (ascending, as `found` gives them) of file ``name`` found by one merge step."""
        if name in self._rewrite_names:
            found = self._found.get(name)
            batch = new_vector(positions, name)
            if found is None:
                self._found[name] = batch
            else:
                found |= batch
            return
        marked = self._marked.get(name)
        if marked is None:
            # a copy of the old vector (shared through the cache) to add to: adding into its
            # containers costs less than a bitmap of the positions and a union at `finish` (0.20
            # against 0.33 ms for 25,000 positions into 22,000 marks of a 250,000-row file)
            old = self._old_vectors().get(name)
            # a new vector takes the table's form, an old one keeps its own (Java's BucketedDvMaintainer)
            marked = self._marked[name] = (new_vector(bitmap64=deletion_vectors.bitmap64(self.store.schema))
                                           if old is None else old.copy())
        add_positions(marked, positions, name, ascending=True)  # `found` gives them ascending

    def note_relabelled(self, meta: DataFileMeta) -> None:
        """Record the keys of a level-0 file the unit relabels up (rows unchanged). The next
        compaction looks this very file up, so its keys go into the lookup cache too."""
        self.note(self._file_keys(meta))

    def _path(self, meta: DataFileMeta) -> str:
        path = self._paths.get(meta.file_name)
        if path is None:
            path = self._paths[meta.file_name] = self.store.data_file_path(self.split.partition, self.split.bucket,
                                                                           meta)
        return path

    def _file_keys(self, meta: DataFileMeta) -> pa.Table:
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
            built = _int_index(self._file_keys(meta))
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
        built = KeyRanks.build(self._file_keys(meta).select(self.key_names))
        if built is not None:
            keep(cache_key, built, _cache_budget(self.store), self.store.paths.root)
        return built

    def without_superseded(self, meta: DataFileMeta, rows: pa.Table) -> pa.Table:
        """``rows`` of a file rewritten beside the unit (its live rows in file order: every row
        its old vector keeps), minus those whose key the unit output (they would otherwise have
        been marked in that file's vector). ``meta`` must be one of the ``rewrite_files``."""
        if meta.file_name not in self._targets:
            raise ValueError(f"{meta.file_name} was not named as a file rewritten beside the unit")
        found = self._found.get(meta.file_name)
        if not found or not rows.num_rows:
            return rows
        # positions count every row of the file; ``rows`` are those its old vector keeps
        keep = deleted_mask(found, meta.row_count, meta.file_name)
        assert keep is not None  # ``found`` is not empty
        old = self._old_vectors().get(meta.file_name)
        live = deleted_mask(old, meta.row_count, meta.file_name)
        if live is not None:
            keep = keep[live]
        if keep.size != rows.num_rows:
            raise ValueError(f"{rows.num_rows} rows of {meta.file_name} are not its {keep.size} live rows")
        return rows.filter(pa.array(keep))

    def _old_vectors(self) -> dict[str, DeletionVector]:
        """The bucket's vectors before the unit (the loader caches them)."""
        return self._loader.vectors(self.split.dv_entries) if self.split.dv_entries else {}

    def finish(
        self, rewritten: set[str]
    ) -> tuple[tuple[IndexManifestEntry, ...], tuple[IndexManifestEntry, ...], list[str]]:
        """Write the bucket's new index file if its vectors change; returns the index files to
        remove and to add, and the paths written (for cleanup on failure). ``rewritten`` names
        the unit's input files that are gone after it (upgraded files keep their name)."""
        old = self._old_vectors()
        vectors = {name: v for name, v in old.items() if name not in rewritten}  # not changed in place
        changed = len(vectors) != len(old)
        for meta in self.lookup_files:
            marked = self._marked.get(meta.file_name)
            if meta.file_name in rewritten or marked is None:
                continue
            before = vectors.get(meta.file_name)
            if before is None or len(marked) != len(before):  # ``marked`` holds ``before``
                # Java's RoaringBitmap32.serialize runs runOptimize first: the same containers
                marked.run_optimize()
                vectors[meta.file_name] = marked
                changed = True
        if not changed:
            return (), (), []
        vectors = {name: v for name, v in vectors.items() if v}
        if not vectors:
            return self.split.dv_entries, (), []
        data, ranges = encode_index_file(vectors)
        name = f"index-{uuid.uuid4()}-0"
        path = self.store.paths.index_file(name)
        self.store.file_io.write_bytes(path, data)
        # the bucket's next compaction (and reads) start from these vectors: cached as written,
        # not read back and decoded (shared from here on: never changed in place)
        INDEX_FILE_CACHE.put((self.store.paths.root, name, len(data)), vectors, len(data))
        entry = IndexManifestEntry(FileKind.ADD, self.split.partition, self.split.bucket, DELETION_VECTORS_INDEX,
                                   name, len(data), len(ranges), ranges)
        return self.split.dv_entries, (entry,), [path]

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
            return sorted_positions(self._file_keys(meta), keys, self.key_names)
        cached = _KEY_CACHE.get(self._index_key(meta))
        if (not isinstance(cached, IntKeyPositions) and marks.markable
                and meta.row_count <= MARKED_ROWS_PER_KEY * marks.values.size):
            # a small file without an index (the newest level): its rows against the keys' mark
            column = self._file_keys(meta).column(0)
            if not column.null_count and pa.types.is_signed_integer(column.type):
                return marks.positions_in(column.to_numpy())
        index = cached if isinstance(cached, IntKeyPositions) else self._file_index(meta)
        if index is not None:
            # no hash table over the file's keys: a rank bitmap or a binary search of its own
            # share of the keys (they spread over the sorted run's files)
            return index.find(marks.values)
        return sorted_positions(self._file_keys(meta), keys, self.key_names)


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


__all__ = ["DELETE_RATIO_THRESHOLD", "VectorUpdate", "delete_heavy_files", "remember_written_keys"]
