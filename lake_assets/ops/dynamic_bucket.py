"""Bucket assignment and hash index upkeep of dynamic-bucket primary-key tables (``bucket = -1``).

In Paimon's dynamic bucket mode (docs/format.md §6.4) a key's bucket is not a function of the key:
the table's HASH index files (§4.6, `lake_assets.spec.hash_index`) record which key hashes each
(partition, bucket) holds. A writer

* gives a key it finds in the index the bucket recorded there (Paimon's ``PartitionIndex``),
* gives a new key the lowest-numbered bucket of its assigner that holds fewer than
  ``dynamic-bucket.target-row-num`` keys, else opens the lowest unused bucket of its assigner;
  with ``dynamic-bucket.initial-buckets`` = N keys are spread over N assigners (by partition and
  key hash, Paimon's ``BucketAssigner.computeAssigner``), assigner ``a`` owning the buckets
  ``b % N == a``, so a new partition starts with N buckets,
* and, for every bucket it wrote, writes a new hash index file holding the bucket's previous hashes
  plus the new ones (Paimon's ``HashIndexMaintainer``); the commit swaps it in for the old one.

The hash of a key is the murmur hash (§6.2) of its trimmed-primary-key BinaryRow, as Paimon's
writers take it (``trimmedPrimaryKey(row).hashCode()``). Two keys with equal hashes share a bucket,
which is what keeps a key in one bucket.

Paimon supports one writer per dynamic-bucket table: two writers that both started from the same
index would each give a new key a bucket of its own. lake_assets runs one assigner per writer (a
Spark write sends a dynamic-bucket table's rows to one task, whose writer assigns them; the
driver refuses messages of several tasks), and every HASH change a writer hands to the committer
carries the writer's view of the partition's hash index (`index_commit.hash_index_view`): the
commit fails with `CommitConflictError` unless the partition's HASH files are still the ones the
writer assigned from. So a second writer adding keys from the same snapshot fails instead of
duplicating keys, also when the two gave a new key different buckets and each changed only its own.

Where this is stricter than Paimon (Java 0.9 and later): Paimon's commit checks no index at all;
``FileStoreCommitImpl`` combines HASH files per bucket, the later writer's file replacing the
bucket's, and the one-writer rule is the user's to keep (``HashBucketAssigner`` loads a
partition's index from the latest snapshot when it first meets the partition,
``HashIndexMaintainer`` a bucket's from the writer's restore snapshot). Here a second writer's
commit is refused; a writer whose base snapshot expired meanwhile still commits (the view names
files, not a snapshot).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, OptionError
from lake_assets.lsm.bucket import hash_scalar, murmur_hash_words
from lake_assets.lsm.bucket_fill import MAX_BUCKETS, fill_assigner_buckets
from lake_assets.lsm.sorted_sets import merge_sorted_unique, sorted_unique
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.hash_index_cache import LOADED_INDEXES
from lake_assets.ops.index_commit import IndexChange, hash_index_view
from lake_assets.spec.binary_row_vectorized import encode_rows
from lake_assets.spec.data_types import DataType
from lake_assets.spec.hash_index import HASH_INDEX, INDEX_FILE_PREFIX, decode_hashes, encode_hashes
from lake_assets.spec.manifest import FileKind, IndexManifestEntry
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore



def key_hashes(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], num_rows: int | None = None
) -> np.ndarray:
    """Murmur hash of the trimmed-primary-key BinaryRow of every row, as int32 (vectorized).
    ``num_rows`` is needed when there is no column (a primary key of partition fields only)."""
    data, offsets = encode_rows(columns, types, num_rows)
    return murmur_hash_words(data, offsets)


def partition_hash(partition: bytes) -> int:
    """Java's ``BinaryRow.hashCode`` of a serialized partition (without its 4-byte arity prefix)."""
    return hash_scalar(partition[4:])


def _java_abs_mod(values: np.ndarray | int, n: int) -> np.ndarray:
    """``Math.abs(v % n)`` with Java's truncating remainder."""
    return np.abs(np.fmod(np.asarray(values, dtype=np.int64), n))


def assigner_ids(partition_hash_: int, hashes: np.ndarray, num_assigners: int) -> np.ndarray:
    """Which of ``num_assigners`` assigners owns each key hash (``BucketAssigner.computeAssigner``
    with as many channels as assigners: one process runs them all)."""
    start = int(_java_abs_mod(partition_hash_, num_assigners))
    return (start + _java_abs_mod(hashes, num_assigners)) % num_assigners


@dataclass
class _PartitionIndex:
    """What one partition's hash index says: key hash -> bucket, and keys per bucket."""

    hashes: np.ndarray  # sorted, unique int32
    buckets: np.ndarray  # bucket of hashes[i], int32
    counts: dict[int, int]  # keys per bucket, as the index files count them

    def lookup(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, bucket where found) for ``hashes``."""
        if not len(self.hashes):
            return np.zeros(len(hashes), dtype=bool), np.zeros(len(hashes), dtype=np.int32)
        pos = np.searchsorted(self.hashes, hashes)
        clipped = np.minimum(pos, len(self.hashes) - 1)
        found = (pos < len(self.hashes)) & (self.hashes[clipped] == hashes)
        return found, self.buckets[clipped]

    def add(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Record new (hash, bucket) pairs: ``hashes`` sorted, none of them in the index yet
        (a merge by insertion points, linear in the index size)."""
        at = np.searchsorted(self.hashes, hashes)
        self.hashes = np.insert(self.hashes, at, hashes)
        self.buckets = np.insert(self.buckets, at, buckets.astype(np.int32))


@dataclass
class _BucketIndex:
    """One bucket's hash index as this writer will leave it."""

    base: IndexManifestEntry | None  # the file the new one replaces (None: none yet)
    hashes: np.ndarray  # sorted unique int32: what the next file starts from (the base file's hashes)
    pending: list[np.ndarray] = field(default_factory=list)  # hashes written since, merged at prepare


@dataclass
class DynamicBucketAssigner:
    """Assigns buckets to keys of one dynamic-bucket table and keeps its hash index (see module doc).

    ``entries`` are the HASH entries of the snapshot the writer starts from; ``read_index`` returns
    the bytes of an index file by name. With ``ignore_previous`` (overwrites) the buckets' new index
    files hold only the keys written now, as the overwrite replaces the partitions' old files, while
    assignment still follows the old index (Paimon's writers do the same).
    """

    table_name: str
    entries: Sequence[IndexManifestEntry]
    read_index: Callable[[str], bytes]
    target_row_num: int
    num_assigners: int = 1
    ignore_previous: bool = False
    # the table's index directory: what this writer loads is shared with the process's next
    # writers of the table through `hash_index_cache` (None: not shared)
    cache_scope: str | None = None
    _by_partition: dict[bytes, list[IndexManifestEntry]] = field(default_factory=dict, init=False)
    _partitions: dict[bytes, _PartitionIndex] = field(default_factory=dict, init=False)
    _bucket_hashes: dict[tuple[bytes, int], np.ndarray] = field(default_factory=dict, init=False)
    _buckets: dict[tuple[bytes, int], _BucketIndex] = field(default_factory=dict, init=False)
    # per partition, the HASH files the next commit of this writer expects there (its view)
    _views: dict[bytes, list[IndexManifestEntry]] = field(default_factory=dict, init=False)
    _writer_id: str = field(default_factory=lambda: uuid.uuid4().hex, init=False)

    def __post_init__(self) -> None:
        if self.target_row_num < 1:
            raise OptionError(f"Table {self.table_name}: dynamic-bucket.target-row-num must be >= 1, "
                              f"got {self.target_row_num}")
        if not 1 <= self.num_assigners <= MAX_BUCKETS:
            raise OptionError(f"Table {self.table_name}: dynamic-bucket.initial-buckets must be in "
                              f"1..{MAX_BUCKETS}, got {self.num_assigners}")
        for e in self.entries:
            if e.index_type == HASH_INDEX and e.kind == FileKind.ADD:
                self._by_partition.setdefault(e.partition, []).append(e)

    # ------------------------------------------------------------------ loading
    def _file_hashes(self, entry: IndexManifestEntry) -> np.ndarray:
        key = (entry.partition, entry.bucket)
        got = self._bucket_hashes.get(key)
        if got is None:
            shared = (self.cache_scope, entry.file_name)
            cached = LOADED_INDEXES.get(shared) if self.cache_scope is not None else None
            if cached is not None:
                got = cached[0][0]
            else:
                got = decode_hashes(self.read_index(entry.file_name), entry.file_name)
                if self.cache_scope is not None:
                    LOADED_INDEXES.put(shared, (got,))
            self._bucket_hashes[key] = got
        return got

    def _partition(self, partition: bytes) -> _PartitionIndex:
        index = self._partitions.get(partition)
        if index is not None:
            return index
        files = self._by_partition.get(partition, [])
        shared = (self.cache_scope, partition, tuple((e.bucket, e.file_name) for e in files))
        cached = LOADED_INDEXES.get(shared) if self.cache_scope is not None else None
        if cached is not None:
            (all_h, all_b), counts = cached
            index = self._partitions[partition] = _PartitionIndex(all_h, all_b, counts)
            return index
        hashes: list[np.ndarray] = []
        buckets: list[np.ndarray] = []
        counts = {}
        for e in files:
            h = self._file_hashes(e)
            hashes.append(h)
            buckets.append(np.full(len(h), e.bucket, dtype=np.int32))
            counts[e.bucket] = counts.get(e.bucket, 0) + len(h)
        all_h = np.concatenate(hashes) if hashes else np.zeros(0, dtype=np.int32)
        all_b = np.concatenate(buckets) if buckets else np.zeros(0, dtype=np.int32)
        # a hash in two files (a table two writers wrote): the later file wins, as in Paimon's
        # loader. A stable sort keeps equal hashes in file order, so the last of each run is
        # the later file's (and the files' sorted runs make the sort a merge).
        order = np.argsort(all_h, kind="stable")
        ordered = all_h[order]
        last = np.ones(len(ordered), dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=last[:-1])
        index = self._partitions[partition] = _PartitionIndex(ordered[last], all_b[order[last]], counts)
        if self.cache_scope is not None:
            LOADED_INDEXES.put(shared, (index.hashes, index.buckets), counts)
        return index

    # --------------------------------------------------------------- assignment
    def assign(self, partition: bytes, hashes: np.ndarray) -> np.ndarray:
        """The bucket of every key hash of rows of ``partition`` (int32), recording new keys and
        the keys each bucket receives."""
        hashes = np.asarray(hashes, dtype=np.int32)
        index = self._partition(partition)
        found, out = index.lookup(hashes)
        out = out.copy()
        if not found.all():
            new_rows = ~found
            uniq, first, inverse = np.unique(hashes[new_rows], return_index=True, return_inverse=True)
            by_arrival = np.argsort(first, kind="stable")  # new keys take buckets in arrival order
            new_buckets = np.empty(len(uniq), dtype=np.int32)
            owner = assigner_ids(partition_hash(partition), uniq[by_arrival], self.num_assigners)
            for a in np.flatnonzero(np.bincount(owner)).tolist():  # the assigners owning new keys
                sel = by_arrival[owner == a]
                new_buckets[sel] = self._fill(partition, index, int(a), len(sel))
            index.add(uniq, new_buckets)
            out[new_rows] = new_buckets[inverse]
        self._note_written(partition, hashes, out)
        return out

    def _fill(self, partition: bytes, index: _PartitionIndex, assigner: int, k: int) -> np.ndarray:
        """Buckets for ``k`` new keys of one assigner: its non-full buckets in ascending order up
        to the target, then new buckets (lowest unused ids it owns), each filled to the target."""
        chosen = fill_assigner_buckets(index.counts, assigner, self.num_assigners, self.target_row_num, k,
                                       self.table_name)
        used_ids, used = np.unique(chosen, return_counts=True)
        for b, c in zip(used_ids.tolist(), used.tolist(), strict=True):
            index.counts[b] = index.counts.get(b, 0) + c
        return chosen

    # --------------------------------------------------------------- the index
    def _note_written(self, partition: bytes, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Every written key's hash joins its bucket's index (retractions too, as in Paimon).
        Cost is linear in the rows: the bucket's set is merged once, at `prepare_commit`."""
        order = np.argsort(buckets, kind="stable")
        bounds = np.flatnonzero(np.diff(buckets[order])) + 1
        for rows in np.split(order, bounds):
            b = int(buckets[rows[0]])
            key = (partition, b)
            state = self._buckets.get(key)
            if state is None:
                # ignoring previous files (an overwrite), the bucket's index starts empty and replaces
                # nothing: the overwrite drops the old file; any other commit of it conflicts
                base = None if self.ignore_previous else next(
                    (e for e in self._by_partition.get(partition, []) if e.bucket == b), None)
                kept = np.zeros(0, dtype=np.int32) if base is None else sorted_unique(self._file_hashes(base))
                state = self._buckets[key] = _BucketIndex(base, kept)
            state.pending.append(hashes[rows])

    def assign_rows(self, data: pa.Table, schema: TableSchema, part_ids: np.ndarray,
                    partitions: Sequence[bytes]) -> np.ndarray:
        """The bucket of every row of ``data`` (int64), whose partition is ``partitions[part_ids[i]]``."""
        keys = list(schema.trimmed_primary_keys)
        hashes = key_hashes([data.column(k) for k in keys], schema.types(keys), data.num_rows)
        out = np.empty(data.num_rows, dtype=np.int64)
        for g, partition in enumerate(partitions):
            rows = np.flatnonzero(part_ids == g)
            if len(rows):
                out[rows] = self.assign(partition, hashes[rows])
        return out

    def _view(self, partition: bytes) -> list[IndexManifestEntry]:
        """The partition's HASH files as this writer's next commit expects them: the snapshot's
        (none when ignoring previous files: the overwrite drops them), then its own rounds'."""
        view = self._views.get(partition)
        if view is None:
            view = self._views[partition] = [] if self.ignore_previous else list(self._by_partition.get(partition, []))
        return view

    def prepare_commit(self, write_file: Callable[[str, bytes], None]) -> dict[tuple[bytes, int], IndexChange]:
        """Write a new hash index file for every bucket whose keys changed since the last call.

        Returns per (partition, bucket) the change: the index entry the commit replaces (the base
        file, if any), the new one, and this writer's view of the partition's hash index, which
        the commit checks (`index_commit.hash_index_view`). ``write_file(name, data)`` stores a
        file under ``index/``. The new files become the base of the next round (a writer spans
        several commits).
        """
        out: dict[tuple[bytes, int], IndexChange] = {}
        views: dict[bytes, str] = {}
        for key, state in self._buckets.items():
            if not state.pending:
                continue
            merged = merge_sorted_unique(state.hashes, np.concatenate(state.pending))
            state.pending = []
            if len(merged) == len(state.hashes):
                continue  # only keys the bucket's file has (with ignore_previous it starts empty)
            name = f"{INDEX_FILE_PREFIX}{uuid.uuid4()}-0"
            data = encode_hashes(merged)
            write_file(name, data)
            if self.cache_scope is not None:  # the next writer of the table loads this very file
                LOADED_INDEXES.put((self.cache_scope, name), (merged.copy(),))
            entry = IndexManifestEntry(FileKind.ADD, key[0], key[1], HASH_INDEX, name, len(data), len(merged))
            view = views.get(key[0])
            if view is None:  # before any of this round's files joins the view
                view = views[key[0]] = hash_index_view(self._writer_id, self._view(key[0]))
            out[key] = IndexChange(key[0], key[1], (state.base,) if state.base is not None else (), (entry,), view)
            state.base, state.hashes = entry, merged
        for change in out.values():  # the next round expects this round's files
            replaced = {e.file_name for e in change.before}
            view_files = self._view(change.partition)
            view_files[:] = [e for e in view_files if e.file_name not in replaced] + list(change.after)
        return out


def attach_index_changes(
    messages: Sequence[CommitMessage], changes: dict[tuple[bytes, int], IndexChange], total_buckets: int,
) -> list[CommitMessage]:
    """``messages`` with each bucket's hash index change (`DynamicBucketAssigner.prepare_commit`)
    added to ``index_before``/``index_after`` (next to a compaction's deletion-vector files) and
    the writer's view in ``hash_index_view``; a change without a message gets a message of its own."""
    out = []
    left = dict(changes)
    for m in messages:
        change = left.pop((m.partition, m.bucket), None)
        out.append(m if change is None else dataclasses.replace(
            m, index_before=m.index_before + change.before, index_after=m.index_after + change.after,
            hash_index_view=change.view))
    for (partition, bucket), change in left.items():
        out.append(CommitMessage(partition, bucket, total_buckets, index_before=change.before,
                                 index_after=change.after, hash_index_view=change.view))
    return out


def assigner_for(
    store: FileStore, snapshot: Snapshot | None, *, ignore_previous: bool = False
) -> DynamicBucketAssigner:
    """The assigner of a writer of ``store`` that starts from ``snapshot`` (None: an empty table).

    ``dynamic-bucket.initial-buckets`` sets the number of assigners (Paimon's Flink and Spark
    writers take it as the assigner count, capped by their parallelism; one process here runs
    them all), else ``dynamic-bucket.assigner-parallelism``, else one.
    """
    opts = store.schema.core_options
    entries = store.index_entries(snapshot.index_manifest) if snapshot is not None and snapshot.index_manifest else []

    def read_index(name: str) -> bytes:
        try:
            return store.file_io.read_bytes(store.paths.index_file(name))
        except FileNotFoundError:
            raise CorruptMetadataError(
                f"Cannot write to {store.name}: hash index file {name} of snapshot "
                f"{snapshot.id if snapshot else None} is missing"
            ) from None

    return DynamicBucketAssigner(store.name, entries, read_index, opts.dynamic_bucket_target_row_num,
                                 opts.dynamic_bucket_assigners, ignore_previous, cache_scope=store.paths.index_dir)


__all__ = [
    "MAX_BUCKETS",
    "DynamicBucketAssigner",
    "assigner_for",
    "assigner_ids",
    "attach_index_changes",
    "key_hashes",
    "partition_hash",
]
