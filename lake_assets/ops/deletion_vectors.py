"""Deletion vectors of a snapshot, for reads (docs/format.md §4.6, §11.3).

A table with ``deletion-vectors.enabled`` keeps, per (partition, bucket), one index file of type
``DELETION_VECTORS`` in the snapshot's index manifest. It names, per data file, the positions of
rows a newer file superseded. Readers (as Paimon's):

* skip level-0 files of primary-key tables unless ``deletion-vectors.merge-on-read`` is set - compaction makes rows
  visible, and only compaction maintains the vectors;
* drop a file's deleted positions as they read it;
* need no merge when every visible file is above level 0 without retract rows: each key then has
  exactly one live row (`raw_readable`).

Java reads deletion vectors only when the option is on; so do we. A vector is read in the form its
magic number names (32- or 64-bit, whatever ``deletion-vectors.bitmap64`` says now); new vectors
take the table's form (`bitmap64`).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError
from lake_assets.ops.deletion_vector_cache import INDEX_FILE_CACHE, check_index_file
from lake_assets.ops.scan import Split
from lake_assets.spec.deletion_vector import DeletionVector, read_vector
from lake_assets.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

DELETION_VECTORS_INDEX = "DELETION_VECTORS"


def enabled(schema: TableSchema) -> bool:
    """Whether the table keeps deletion vectors (``deletion-vectors.enabled``)."""
    return str(schema.options.get("deletion-vectors.enabled", "false")).strip().lower() == "true"


def bitmap64(schema: TableSchema) -> bool:
    """Whether new vectors take the 64-bit form (``deletion-vectors.bitmap64``, Paimon 1.2 on). A
    vector already written keeps its form, as in Java's ``BucketedDvMaintainer``."""
    return str(schema.options.get("deletion-vectors.bitmap64", "false")).strip().lower() == "true"


def merge_on_read(schema: TableSchema) -> bool:
    """Whether batch reads also merge level-0 files in (``deletion-vectors.merge-on-read``)."""
    return str(schema.options.get("deletion-vectors.merge-on-read", "false")).strip().lower() == "true"


def hides_level0(schema: TableSchema) -> bool:
    """Whether batch reads skip level-0 files, as Paimon's scan does for primary-key tables with
    deletion vectors (an append table's files are all level 0 and all visible: its vectors come
    from deletes, not from compaction)."""
    return enabled(schema) and bool(schema.primary_keys) and not merge_on_read(schema)


def raw_readable(files: Sequence[DataFileMeta]) -> bool:
    """Whether a bucket's visible files of a deletion-vector table can be read file by file, with
    no merge: all above level 0 and without retract rows (Paimon's rawConvertible for DV)."""
    return all(f.level > 0 and f.delete_row_count == 0 for f in files)


def bucket_index(entries: Iterable[IndexManifestEntry]) -> dict[tuple[bytes, int], tuple[IndexManifestEntry, ...]]:
    """The live deletion-vector index files of a snapshot, per (partition, bucket)."""
    out: dict[tuple[bytes, int], list[IndexManifestEntry]] = defaultdict(list)
    for e in entries:
        if e.index_type == DELETION_VECTORS_INDEX and e.kind == FileKind.ADD:
            out[(e.partition, e.bucket)].append(e)
    return {k: tuple(v) for k, v in out.items()}


def snapshot_index(
    store: FileStore, snapshot: Snapshot | None
) -> dict[tuple[bytes, int], tuple[IndexManifestEntry, ...]]:
    """`bucket_index` of a snapshot's index manifest (empty without one)."""
    if snapshot is None or not snapshot.index_manifest:
        return {}
    return bucket_index(store.index_entries(snapshot.index_manifest))


def attach(store: FileStore, snapshot: Snapshot, splits: list[Split]) -> list[Split]:
    """Give each split its bucket's deletion-vector index files (when the table keeps them)."""
    if not enabled(store.schema) or not snapshot.index_manifest:
        return splits
    index = snapshot_index(store, snapshot)
    for sp in splits:
        sp.dv_entries = index.get((sp.partition, sp.bucket), ())
    return splits


def deleted_rows(
    store: FileStore, entries: Sequence[IndexManifestEntry], loader: VectorLoader | None = None
) -> dict[str, int]:
    """Data file name -> rows its deletion vector deletes, over one bucket's index files: the
    cardinality the index manifest records (Paimon 1.x and lake_assets write it), else counted
    from the vector itself (Paimon 0.9 does not record it)."""
    out: dict[str, int] = {}
    missing = False
    for e in entries:
        for r in e.dv_ranges or ():
            if r.cardinality is None:
                missing = True
            else:
                out[r.data_file] = r.cardinality
    if missing:
        vectors = (loader or VectorLoader(store)).vectors(entries)
        out = {name: len(v) for name, v in vectors.items()}
    return out


class VectorLoader:
    """Loads the deletion vectors of splits through the process-wide cache of decoded index files
    (`deletion_vector_cache`: they never change). Thread-safe: readers of several splits share
    one loader; a race may read an uncached file twice, but a cached one is checked once."""

    def __init__(self, store: FileStore) -> None:
        self.store = store
        # index files this loader found on storage as their manifest entries record them: a
        # cache hit is checked once per loader (see `deletion_vector_cache`)
        self._checked: set[str] = set()
        self._lock = threading.Lock()

    def vectors(self, entries: Sequence[IndexManifestEntry]) -> dict[str, DeletionVector]:
        """Data file name -> deletion vector, over the index files ``entries`` of one bucket.
        The vectors are shared: callers copy before changing one."""
        out: dict[str, DeletionVector] = {}
        for e in entries:
            key = (self.store.paths.root, e.file_name, e.file_size)
            got = INDEX_FILE_CACHE.get(key)
            if got is None:
                got = self._load(e)
                INDEX_FILE_CACHE.put(key, got, e.file_size)
            elif self._first_look(e.file_name):
                self._check_on_storage(e)
            self._checked.add(e.file_name)
            for name, vector in got.items():
                if name in out:
                    raise CorruptMetadataError(
                        f"Table {self.store.name}: data file {name} has deletion vectors in two index files"
                    )
                out[name] = vector
        return out

    def _first_look(self, file_name: str) -> bool:
        """Whether this is the loader's first look at a cached file (then it is checked). Under a
        lock: the read's threads share the loader, and one check per file is the promise."""
        with self._lock:
            if file_name in self._checked:
                return False
            self._checked.add(file_name)
            return True

    def _check_on_storage(self, entry: IndexManifestEntry) -> None:
        """A cached file must still be there, as its manifest entry records it."""
        try:
            size: int | None = self.store.file_io.size(self.store.paths.index_file(entry.file_name))
        except FileNotFoundError:
            size = None
        check_index_file(self.store.name, entry.file_name, entry.file_size, size)

    def _load(self, entry: IndexManifestEntry) -> dict[str, DeletionVector]:
        if entry.external_path:
            raise CorruptMetadataError(
                f"Table {self.store.name}: index file {entry.file_name} has an external path; not supported"
            )
        path = self.store.paths.index_file(entry.file_name)
        try:
            data = self.store.file_io.read_bytes(path)
        except FileNotFoundError:
            data = None
        check_index_file(self.store.name, entry.file_name, entry.file_size, None if data is None else len(data))
        assert data is not None
        return {r.data_file: read_vector(data, r, entry.file_name) for r in entry.dv_ranges or ()}


__all__ = [
    "DELETION_VECTORS_INDEX",
    "VectorLoader",
    "attach",
    "bitmap64",
    "bucket_index",
    "deleted_rows",
    "enabled",
    "hides_level0",
    "merge_on_read",
    "raw_readable",
    "snapshot_index",
]
