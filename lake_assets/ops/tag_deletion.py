"""Deleting a tag together with the files only it kept (Paimon's ``TagManager.deleteTag`` with
``TagDeletion``).

A tag keeps its snapshot's files after expiry removed the snapshot. Deleting such a tag frees the
data files live in the tagged snapshot, its base and delta manifest lists and their manifests, its
index manifest and index files and its statistics file, wherever nothing else uses them, as
Paimon does. Changelog files stay: Paimon leaves them to changelog expiry, and so do we (orphan
removal collects what nobody references).

What "nothing else" means is where we differ from Paimon on purpose. Paimon spares the data files
live in two neighbours (the nearest older tag and the nearest newer tag or earliest snapshot) and
relies on files flowing between neighbours. We spare, by file name, every data file live in any
retained snapshot or other tag, every file any changelog names, and everything a long-lived
changelog names: a superset of Paimon's set that needs no argument about how files flow.
Manifests, lists, index and statistics files are spared when any holder names them
(`referenced_files`, the set orphan removal keeps). A data file that retained manifests name only
as deleted (a DELETE entry, or an ADD that a later DELETE cancels) is not spared: no reader opens
it, and snapshot expiry would delete it too (deleting a missing file is a no-op there).

Order and failure, as in the rest of the maintenance plane:

* every file the tag holds and every reference is read before anything changes; metadata that
  cannot be read raises `CorruptMetadataError` and the tag stays (nothing deleted);
* the tag file goes first: a crash after it leaves files nothing references, which
  `remove_orphan_files` collects; never a tag naming deleted files;
* the references are read again after the tag file is gone (a rollback to another tag or a new
  tag may have made files live meanwhile) and the union is spared;
* every path is checked to lie inside the table before the first delete.

A tag whose snapshot is still retained, or whose snapshot another tag also names, frees nothing
(the snapshot or the other tag keeps the files), exactly as in Paimon. Nor does a tag of a table
that refuses snapshot expiry (e.g. one with branches, which may share the tag's files): the tag
goes, its files stay, and the result says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.ops.expire_files import ensure_inside, extra_paths
from lake_assets.ops.orphans import index_file_paths, referenced_files
from lake_assets.spec.snapshot import Snapshot
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

__all__ = ["TagDeletionResult", "delete_tag"]


@dataclass
class TagDeletionResult:
    """What deleting a tag removed: the tag, and the files only it kept."""

    tag: str
    snapshot_id: int
    deleted_data_files: list[str] = field(default_factory=list)
    deleted_index_files: list[str] = field(default_factory=list)
    deleted_manifests: list[str] = field(default_factory=list)
    files_kept: str | None = None  # why the tag's files were left in place (the table refuses expiry)

    def summary(self) -> dict[str, object]:
        return {
            "tag": self.tag,
            "snapshot_id": self.snapshot_id,
            "deleted_data_files": len(self.deleted_data_files),
            "deleted_index_files": len(self.deleted_index_files),
            "deleted_manifests": len(self.deleted_manifests),
            "files_kept": self.files_kept,
        }


@dataclass
class _Held:
    """Paths of what a tagged snapshot holds, by kind (data first: deleted in this order)."""

    data: list[str] = field(default_factory=list)
    index: list[str] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)


def delete_tag(store: FileStore, name: str) -> TagDeletionResult:
    """Delete tag ``name`` and the files that only it kept alive.

    Raises `SnapshotNotFoundError` when the table has no such tag and `CorruptMetadataError` (with
    the tag kept and nothing deleted) when the tag's files or the table's references cannot be read.
    """
    tags = store.tag_manager()
    tag = tags.get(name)
    snap = tag.snapshot
    result = TagDeletionResult(name, snap.id)
    if store.snapshot_manager.exists(snap.id):
        tags.delete(name)  # the retained snapshot keeps every file
        return result
    if any(n != name and t.snapshot.id == snap.id for n, t in tags.tags().items()):
        tags.delete(name)  # another tag of the same snapshot keeps every file
        return result
    try:
        # Freeing files is an expiry of the tagged snapshot: whatever refuses expiry (branches that
        # may share the files, path layouts we cannot compute) keeps them; the tag still goes.
        store.require(Op.EXPIRE)
    except UnsupportedFeatureError as exc:
        tags.delete(name)
        result.files_kept = str(exc)
        return result
    try:
        held = _held_by(store, snap)
        spared = _Spared.of(store, ignore_tag=name)
    except CorruptMetadataError as exc:
        raise CorruptMetadataError(
            f"Cannot delete tag {name!r} of {store.name}: {exc}; the tag was kept and nothing was deleted"
        ) from exc
    tags.delete(name)
    store.fault_point("tag_delete.after_tag_file")
    try:
        spared.add(_Spared.of(store))  # again: what changed while we read (a rollback, a new tag)
    except CorruptMetadataError as exc:
        raise CorruptMetadataError(
            f"Deleted tag {name!r} of {store.name} but kept its files: the table's references cannot be "
            f"read again ({exc}); remove_orphan_files collects them once the metadata is readable"
        ) from exc
    result.deleted_data_files = _doomed(held.data, spared.data_names)
    result.deleted_index_files = _doomed(held.index, spared.meta_names)
    result.deleted_manifests = _doomed(held.manifests, spared.meta_names)
    ensure_inside(store, result.deleted_data_files, result.deleted_index_files, result.deleted_manifests)
    fio = store.file_io
    fio.delete_many(result.deleted_data_files)
    store.fault_point("tag_delete.after_data")
    fio.delete_many(result.deleted_index_files)
    fio.delete_many(result.deleted_manifests)
    if store.schema.core_options.clean_empty_directories:
        for d in {p.rsplit("/", 1)[0] for p in result.deleted_data_files}:
            fio.delete_dir_if_empty(d)
    return result


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _doomed(paths: list[str], spared_names: set[str]) -> list[str]:
    # File names are unique per table (uuid based): a name is spared wherever a reference puts it.
    return list(dict.fromkeys(p for p in paths if _name(p) not in spared_names))


@dataclass
class _Spared:
    """Names of files something other than the tag being deleted still needs."""

    data_names: set[str]
    meta_names: set[str]

    @classmethod
    def of(cls, store: FileStore, ignore_tag: str | None = None) -> _Spared:
        """What every retained snapshot, every tag but ``ignore_tag`` and every long-lived
        changelog needs (see the module doc)."""
        scan = store.file_store_scan()
        mio = scan.manifest_io
        names: set[str] = set()

        def named_in(list_name: str | None, *, may_be_gone: bool) -> None:
            if not list_name or (may_be_gone and not store.file_io.exists(store.paths.manifest_file(list_name))):
                return
            for entries in mio.read_manifests(mio.read_manifest_list(list_name)):
                for e in entries:
                    names.add(e.file.file_name)
                    names.update(e.file.extra_files)

        def live_in(snap: Snapshot) -> None:
            for e in scan.live_entries(snap):
                names.add(e.file.file_name)
                names.update(e.file.extra_files)

        for snap in store.snapshot_manager.snapshots():
            live_in(snap)
            named_in(snap.changelog_manifest_list, may_be_gone=False)
        for tag_name, tag in store.tag_manager().tags().items():
            if tag_name != ignore_tag:
                live_in(tag.snapshot)
                named_in(tag.snapshot.changelog_manifest_list, may_be_gone=True)
        changelogs = store.changelog_manager()
        for cid in changelogs.ids():
            changelog = changelogs.try_changelog(cid)
            if changelog is not None:
                for list_name in (changelog.base_manifest_list, changelog.delta_manifest_list,
                                  changelog.changelog_manifest_list):
                    named_in(list_name, may_be_gone=True)
        meta = referenced_files(store, ignore_tags=() if ignore_tag is None else {ignore_tag})
        return cls(names, {_name(p) for p in meta})

    def add(self, other: _Spared) -> None:
        self.data_names |= other.data_names
        self.meta_names |= other.meta_names


def _held_by(store: FileStore, snap: Snapshot) -> _Held:
    """Everything the tagged snapshot ``snap`` holds that tag deletion may free (see the module doc)."""
    scan = store.file_store_scan()
    mio = scan.manifest_io
    paths = store.paths
    held = _Held()
    entries = scan.live_entries(snap)
    store.check_scanned(Op.EXPIRE, snap, entries)
    for e in entries:
        held.data.append(store.data_file_path(e.partition, e.bucket, e.file))
        held.data.extend(extra_paths(store, e))
    for list_name in (snap.base_manifest_list, snap.delta_manifest_list):
        if list_name:
            held.manifests.extend(paths.manifest_file(m.file_name) for m in mio.read_manifest_list(list_name))
            held.manifests.append(paths.manifest_file(list_name))
    if snap.index_manifest:
        held.index.extend(index_file_paths(store, snap.index_manifest, may_be_gone=False))
        held.manifests.append(paths.manifest_file(snap.index_manifest))
    if snap.statistics:
        held.manifests.append(paths.statistics_file(snap.statistics))
    return held
