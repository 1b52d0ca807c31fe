"""The index manifest a commit writes (docs/format.md §4.6, §8.1 step 5).

A snapshot's ``indexManifest`` names the complete set of its index files. A commit that changes
index files - a dynamic-bucket writer replacing a bucket's HASH file, a compaction replacing a
bucket's deletion-vector file, an overwrite dropping the files of the partitions it replaces -
reads the latest snapshot's set, applies its changes and writes a new index manifest; otherwise
the latest one's name is carried forward. An OVERWRITE drops every index file of the partitions it
replaces, as Paimon's ``FileStoreCommitImpl`` does. This runs inside the committer's retry loop,
against whatever snapshot is latest at that attempt, so the new set is never computed from a stale
base.

Each change names the files of its (partition, bucket) it replaces (``before``, per index type) and
the ones replacing them (``after``): Paimon's per-bucket combine. Where the latest snapshot's files
of that bucket and type (after an overwrite's drop) are not exactly ``before``, someone else
changed them meanwhile, and the commit fails with `CommitConflictError` before anything is written:

* deletion vectors: a compaction replaces the vectors of a bucket as it planned them; another
  compaction committed meanwhile would leave marks lost or on rows of files it never saw, as
  Paimon's deletion-vector conflict check says. Append tables (unaware bucket) are the exception:
  there a change names only the index files it replaces, which must all still be there; others
  may have come and gone (Paimon 1.x's per data file check, `append_vectors.check_vector_targets`);
* HASH: a second writer of a dynamic-bucket table (Paimon supports one) committed keys meanwhile;
  replacing its file would lose them, and both writers may have given one new key two buckets.

The per-bucket check alone does not see the worst case of two writers: both start from one
snapshot, both see a new key, one gives it bucket 0 and the other bucket 1 (a different
``dynamic-bucket.target-row-num``, or other keys written first), and each replaces only its own
bucket's file. So a HASH change also carries its writer's *view* (`hash_index_view`): who wrote
it and a digest of the partition's HASH files the writer assigned buckets from. The commit
conflicts unless the partition's HASH files are still exactly those when it applies the first
change of that view: any other writer's index change in the partition since (another bucket
too) fails it. Two writers' messages in one commit have two views, so the second fails as well;
a writer's later rounds name the files its earlier rounds wrote, so its rounds may be committed
one by one or together, in order. The view names files, not a snapshot: a writer whose base
snapshot expired meanwhile still commits when nobody changed the partition's index. Cross-partition
upsert tables (a key moving between partitions) have no HASH files; their writers' commits are
checked against racing writers by key instead (`key_index_race`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_assets.errors import CommitConflictError
from lake_assets.formats.manifest_codec import encode_index_manifest
from lake_assets.ops.append_vectors import keeps_append_vectors, per_bucket_vectors
from lake_assets.ops.deletion_vectors import DELETION_VECTORS_INDEX
from lake_assets.spec.hash_index import HASH_INDEX
from lake_assets.spec.manifest import FileKind, IndexManifestEntry
from lake_assets.spec.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.store.file_store import FileStore
    from lake_assets.store.manifest_io import ManifestIO


@dataclass(frozen=True)
class IndexChange:
    """One bucket's index files a commit removes and adds."""

    partition: bytes
    bucket: int
    before: tuple[IndexManifestEntry, ...]
    after: tuple[IndexManifestEntry, ...]
    # of a HASH change: its writer's view of the partition's hash index (`hash_index_view`)
    view: str = ""

    @property
    def index_types(self) -> frozenset[str]:
        return frozenset(e.index_type for e in (*self.before, *self.after))


def index_changes(messages: Sequence[CommitMessage]) -> list[IndexChange]:
    """The index changes the messages carry (one per message that has any)."""
    return [IndexChange(m.partition, m.bucket, m.index_before, m.index_after, m.hash_index_view)
            for m in messages if m.index_before or m.index_after]


def _view_digest(entries: Iterable[IndexManifestEntry]) -> str:
    """A digest of a set of HASH files (by bucket and name; their order does not matter)."""
    digest = hashlib.sha256()
    for bucket, name in sorted((e.bucket, e.file_name) for e in entries):
        digest.update(f"{bucket}/{name}\n".encode())
    return digest.hexdigest()[:32]


def hash_index_view(writer: str, entries: Iterable[IndexManifestEntry]) -> str:
    """The view a dynamic-bucket writer attaches to its HASH changes of one partition: ``writer``
    (an id unique to the writer) and a digest of ``entries``, the partition's HASH files its
    bucket assignment started from (see the module doc)."""
    return f"{writer}:{_view_digest(entries)}"


def _only(change: IndexChange, hash_index: bool) -> IndexChange | None:
    before = tuple(e for e in change.before if (e.index_type == HASH_INDEX) == hash_index)
    after = tuple(e for e in change.after if (e.index_type == HASH_INDEX) == hash_index)
    view = change.view if hash_index else ""
    return IndexChange(change.partition, change.bucket, before, after, view) if before or after else None


def split_hash_changes(changes: Sequence[IndexChange]) -> tuple[list[IndexChange], list[IndexChange]]:
    """(HASH changes, all other changes): Paimon commits a writer's new HASH files with its data
    (APPEND or OVERWRITE snapshot) and a compaction's deletion vectors with its COMPACT snapshot."""
    hashes = [c for c in (_only(c, True) for c in changes) if c is not None]
    others = [c for c in (_only(c, False) for c in changes) if c is not None]
    return hashes, others


def _identity(e: IndexManifestEntry) -> tuple[bytes, int, str, str]:
    return (e.partition, e.bucket, e.index_type, e.file_name)


class _Kept:
    """The index files a commit builds its manifest from, in manifest order, with the per-bucket
    and per-partition questions of the conflict checks answered from indexes (a commit of many
    buckets over a large index costs per change, not per change and index file)."""

    def __init__(self, entries: Iterable[IndexManifestEntry]) -> None:
        self._entries: dict[tuple[bytes, int, str, str], IndexManifestEntry] = {}  # insertion order
        self._slots: dict[tuple[bytes, int, str], set[tuple[bytes, int, str, str]]] = {}
        self._hash_files: dict[bytes, dict[tuple[bytes, int, str, str], IndexManifestEntry]] = {}
        for e in entries:
            self.add(e)

    def add(self, e: IndexManifestEntry) -> None:
        ident = _identity(e)
        self._entries.pop(ident, None)  # re-added: it moves to the end, as in a list
        self._entries[ident] = e
        self._slots.setdefault(ident[:3], set()).add(ident)
        if e.index_type == HASH_INDEX:
            self._hash_files.setdefault(e.partition, {})[ident] = e

    def remove(self, e: IndexManifestEntry) -> None:
        ident = _identity(e)
        if self._entries.pop(ident, None) is not None:
            self._slots[ident[:3]].discard(ident)
            self._hash_files.get(e.partition, {}).pop(ident, None)

    def slot(self, partition: bytes, bucket: int, index_type: str) -> set[tuple[bytes, int, str, str]]:
        """Identities of the bucket's files of one index type."""
        return self._slots.get((partition, bucket, index_type), set())

    def hash_files(self, partition: bytes) -> Iterable[IndexManifestEntry]:
        return self._hash_files.get(partition, {}).values()

    def entries(self) -> list[IndexManifestEntry]:
        return list(self._entries.values())


def _check_view(store: FileStore, change: IndexChange, keep: _Kept, verified: set[tuple[bytes, str]]) -> None:
    """Raise `CommitConflictError` unless the partition's HASH files in ``keep`` are the ones the
    change's writer assigned from (checked once per partition and view: the view's other changes
    follow it, and then ``keep`` holds them)."""
    if (change.partition, change.view) in verified:
        return
    digest = change.view.rpartition(":")[2]
    if not change.view or _view_digest(keep.hash_files(change.partition)) != digest:
        raise CommitConflictError(
            f"Cannot commit to {store.name}: the hash index of partition {_partition_name(store, change.partition)} "
            "changed since this writer loaded it (another writer of this dynamic-bucket table committed "
            "meanwhile, or its messages are in this commit; Paimon supports one writer per table, and two "
            "could give one new key two buckets); nothing was committed, write again"
        )
    verified.add((change.partition, change.view))


def _partition_name(store: FileStore, partition: bytes) -> str:
    return store.partition_path_of(partition).rstrip("/") or "(unpartitioned)"


def _conflict(store: FileStore, change: IndexChange, index_type: str) -> CommitConflictError:
    if index_type == HASH_INDEX:
        return CommitConflictError(
            f"Cannot commit to {store.name}: the hash index of bucket {change.bucket} changed since this writer "
            "loaded it (another writer of this dynamic-bucket table committed meanwhile; Paimon supports one "
            "writer per table); nothing was committed, write again"
        )
    if keeps_append_vectors(store.schema):
        where = f"partition {_partition_name(store, change.partition)}"
        if per_bucket_vectors(store.schema):
            where = f"bucket {change.bucket} of {where}"
        return CommitConflictError(
            f"Cannot commit to {store.name}: an index file holding deletion vectors this commit changes was "
            f"replaced in {where} by a concurrent delete or compaction since they were read; nothing was "
            "committed, delete or compact again"
        )
    return CommitConflictError(
        f"Cannot commit to {store.name}: the deletion vectors of bucket {change.bucket} changed since "
        "this compaction was planned (a concurrent compaction?); giving up this commit"
    )


def next_index_manifest(
    store: FileStore,
    mio: ManifestIO,
    latest: Snapshot | None,
    changes: Sequence[IndexChange],
    overwritten: Callable[[bytes], bool] | None,
    written: list[str],
) -> str | None:
    """The ``indexManifest`` of the snapshot following ``latest``: its name carried forward when
    nothing changes, else a new manifest (its name appended to ``written``).

    ``overwritten`` tells which partitions (serialized) an OVERWRITE replaces: their index files
    go with their data files. Raises `CommitConflictError` when a bucket's files of a type a change
    replaces are not the ones it names in ``before``.
    """
    current = list(store.index_entries(latest.index_manifest)) if latest is not None and latest.index_manifest else []
    live = [e for e in current if e.kind == FileKind.ADD]
    # an overwrite writer starts the replaced partitions' buckets empty: ``before`` is empty there
    kept = _Kept(e for e in live if overwritten is None or not overwritten(e.partition))
    verified: set[tuple[bytes, str]] = set()  # (partition, view) of HASH changes found current
    # append tables' vectors: a change names only the index files it replaces (Java's delta), the
    # per data file check is `append_vectors.check_vector_targets`
    # (unaware bucket only: a fixed-bucket table's bucket keeps one index file, replaced whole)
    delta_vectors = keeps_append_vectors(store.schema) and not per_bucket_vectors(store.schema)
    for change in changes:
        for index_type in change.index_types:
            slot = kept.slot(change.partition, change.bucket, index_type)
            replaced = {_identity(e) for e in change.before if e.index_type == index_type}
            if not (replaced <= slot if delta_vectors and index_type == DELETION_VECTORS_INDEX else replaced == slot):
                raise _conflict(store, change, index_type)
        if HASH_INDEX in change.index_types:
            _check_view(store, change, kept, verified)
        for e in change.before:
            kept.remove(e)
        for e in change.after:
            kept.add(e)
    keep = kept.entries()
    if len(keep) == len(live) and {_identity(e) for e in keep} == {_identity(e) for e in live}:
        return latest.index_manifest if latest is not None else None
    if not keep and latest is not None and not latest.index_manifest:
        return None
    name = mio.new_name("index-manifest-")
    data = encode_index_manifest(keep, mio.codec)
    written.append(name)  # before the write: a partial file is cleaned up with the rest
    store.file_io.write_bytes(store.paths.manifest_file(name), data)
    store.remember_index_entries(name, keep)  # the next snapshot's commit and writers start from it
    return name


__all__ = ["IndexChange", "hash_index_view", "index_changes", "next_index_manifest", "split_hash_changes"]
