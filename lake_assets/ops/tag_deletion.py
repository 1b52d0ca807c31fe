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

Cost: each distinct manifest is read at most once per call (`_Needed`), not once per holder
that lists it (retained snapshots share most manifests), and only while some file of the tag is
still without a holder: the latest snapshot is asked first, and a tag whose files it all keeps
reads no other holder's manifests. Every holder's manifest lists, index manifests and statistics
are still read (what spares the metadata files, `referenced_files`).

Order and failure, as in the rest of the maintenance plane:

* every file the tag holds and every reference that could keep one of them is read before
  anything changes; metadata that cannot be read raises `CorruptMetadataError` and the tag stays
  (nothing deleted). A manifest left unread once every data file of the tag has a holder could
  only name more holders of those files: it cannot change what is deleted;
* the tag file goes first: a crash after it leaves files nothing references, which
  `remove_orphan_files` collects; never a tag naming deleted files;
* the references are read again after the tag file is gone (a rollback to another tag or a new
  tag may have made files live meanwhile) and the union is spared;
* every path is checked to lie inside the table before the first delete.

A tag whose snapshot is still retained, or whose snapshot another tag also names, frees nothing
(the snapshot or the other tag keeps the files), exactly as in Paimon. Nor does a tag of a table
that refuses snapshot expiry: the tag goes, its files stay, and the result says why.

Branches (``branch/branch-<name>``) are holders too: every data file live in a branch's snapshot
or tag and every metadata file a branch names is spared. Deleting a tag of a branch
(``db.t$branch_b1``) spares likewise what the main branch and every other branch name. The tag a
branch was created from is not deleted at all while it is the only one on its snapshot
(`_refuse_branch_base`): Paimon's expiry of the main branch keeps the branch's files only through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError, InvalidArgumentError, UnsupportedFeatureError
from lake_assets.ops.expire_files import ensure_inside, extra_paths
from lake_assets.ops.orphans import index_file_paths, referenced_files
from lake_assets.ops.scan import FileStoreScan, merge_entries
from lake_assets.spec.manifest import ManifestEntry, ManifestFileMeta
from lake_assets.spec.snapshot import Snapshot, Tag
from lake_assets.store.read_once import reads_once
from lake_assets.store.snapshot_identity import same_snapshot
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


@reads_once
def delete_tag(store: FileStore, name: str) -> TagDeletionResult:
    """Delete tag ``name`` and the files that only it kept alive.

    Raises `SnapshotNotFoundError` when the table has no such tag and `CorruptMetadataError` (with
    the tag kept and nothing deleted) when the tag's files or the table's references cannot be read.
    """
    tags = store.tag_manager()
    tag = tags.get(name)
    snap = tag.snapshot
    every_tag = tags.tags()  # read once for both checks; `_Needed.look` reads them again after
    _refuse_branch_base(store, name, snap, every_tag)
    result = TagDeletionResult(name, snap.id)
    current = store.snapshot_manager.try_snapshot(snap.id)
    # by identity: after a rollback the id may name another commit (`discarded_by_rollback`)
    if current is not None and same_snapshot(current, snap):
        tags.delete(name)  # the retained snapshot keeps every file
        return result
    if any(n != name and same_snapshot(t.snapshot, snap) for n, t in every_tag.items()):
        tags.delete(name)  # another tag of the same snapshot keeps every file
        return result
    try:
        # Freeing files is an expiry of the tagged snapshot: whatever refuses expiry (path layouts
        # we cannot compute) keeps them; the tag still goes.
        store.require(Op.EXPIRE)
    except UnsupportedFeatureError as exc:
        tags.delete(name)
        result.files_kept = str(exc)
        return result
    try:
        held, needed = _held_by(store, snap)
        meta_names = needed.look(store, ignore_tag=name)
    except CorruptMetadataError as exc:
        raise CorruptMetadataError(
            f"Cannot delete tag {name!r} of {store.name}: {exc}; the tag was kept and nothing was deleted"
        ) from exc
    tags.delete(name)
    store.fault_point("tag_delete.after_tag_file")
    try:
        meta_names |= needed.look(store)  # again: what changed while we read (a rollback, a new tag)
    except CorruptMetadataError as exc:
        raise CorruptMetadataError(
            f"Deleted tag {name!r} of {store.name} but kept its files: the table's references cannot be "
            f"read again ({exc}); remove_orphan_files collects them once the metadata is readable"
        ) from exc
    result.deleted_data_files = list(dict.fromkeys(p for p in held.data if _name(p) in needed.unneeded))
    result.deleted_index_files = _doomed(held.index, meta_names)
    result.deleted_manifests = _doomed(held.manifests, meta_names)
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


def _refuse_branch_base(store: FileStore, name: str, snap: Snapshot, tags: dict[str, Tag]) -> None:
    """`InvalidArgumentError` when a branch was made from tag ``name`` (its snapshot copies the
    tag's: Paimon's ``createBranch(branch, tag)``) and no other tag of the main branch names that
    snapshot. Paimon's expiry of the main branch (0.9 to HEAD) keeps a branch's files only through
    that tag (docs/format.md §9.5): once it is gone, any engine's next expiry deletes files the branch
    reads. Paimon's ``deleteTag`` does not check; lake_assets refuses and changes nothing."""
    if any(n != name and same_snapshot(t.snapshot, snap) for n, t in tags.items()):
        return  # another tag keeps the same files
    based = store.branches_based_on(snap)
    if based:
        raise InvalidArgumentError(
            f"Cannot delete tag {name!r} of {store.name}: branch{'es' if len(based) > 1 else ''} "
            f"{', '.join(repr(b) for b in based)} {'were' if len(based) > 1 else 'was'} created from its "
            f"snapshot {snap.id}, which no other tag holds, and Paimon's expiry of the main branch keeps a "
            "branch's files only through that tag: without it the next expiry (Flink's, Spark's, Java's) "
            "deletes files the branch reads. Delete the branch first, or tag the snapshot under another name "
            "first; nothing was changed")


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _doomed(paths: list[str], spared_names: set[str]) -> list[str]:
    # File names are unique per table (uuid based): a name is spared wherever a reference puts it.
    return list(dict.fromkeys(p for p in paths if _name(p) not in spared_names))


class _Needed:
    """Which of the tag's data files some other holder needs, found by reading each distinct
    manifest once per `delete_tag` call.

    Holders share most manifests (each snapshot's base list repeats its predecessor's), so a
    manifest is read once, reduced to its entries about files still ``unneeded``, and the reduction
    kept by name (manifests never change). A holder's live files are merged from the reductions of
    its manifests; what it keeps leaves ``unneeded``, and the reductions shrink with it. The latest
    snapshot is asked first (it keeps whatever of the tag is still live), and once nothing is left
    to find no further manifest is read. Merging only some files' entries gives those files
    exactly the liveness a full merge gives them: entries of different files never interact.
    """

    def __init__(self, scan: FileStoreScan, candidates: set[str]) -> None:
        self._scan = scan
        self._mio = scan.manifest_io
        self.unneeded = set(candidates)  # file names no holder was found to need (yet)
        # manifest name -> (len(unneeded) when reduced, its entries about unneeded files)
        self._reduced: dict[str, tuple[int, list[ManifestEntry]]] = {}

    def _about_unneeded(self, e: ManifestEntry) -> bool:
        extra = e.file.extra_files
        return e.file.file_name in self.unneeded or (bool(extra) and not self.unneeded.isdisjoint(extra))

    def reduce(self, name: str, entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
        """Keep ``entries`` (manifest ``name``'s, or a reduction of them) about unneeded files."""
        reduced = [e for e in entries if self._about_unneeded(e)]
        self._reduced[name] = (len(self.unneeded), reduced)  # ``unneeded`` only shrinks: its size dates it
        return reduced

    def _entry_lists(self, metas: Sequence[ManifestFileMeta]) -> list[list[ManifestEntry]]:
        """The reduced entries of each of ``metas``; manifests not read yet are read now (in
        parallel on remote storage), once each."""
        unseen = list({m.file_name: m for m in metas if m.file_name not in self._reduced}.values())
        for meta, entries in zip(unseen, self._mio.read_manifests(unseen), strict=True):
            self.reduce(meta.file_name, entries)
        out = []
        for meta in metas:
            size, reduced = self._reduced[meta.file_name]
            out.append(reduced if size == len(self.unneeded) else self.reduce(meta.file_name, reduced))
        return out

    def _needed(self, entries: Iterable[ManifestEntry]) -> None:
        for e in entries:
            self.unneeded.discard(e.file.file_name)
            self.unneeded.difference_update(e.file.extra_files)

    def _live_in(self, snap: Snapshot) -> None:
        if self.unneeded:
            entry_lists = self._entry_lists(self._scan.data_manifests(snap))
            self._needed(merge_entries(entry_lists, self._scan.table_name))

    def _named_in(self, store: FileStore, list_name: str | None, *, may_be_gone: bool) -> None:
        if not self.unneeded or not list_name:
            return
        if may_be_gone and not store.file_io.exists(store.paths.manifest_file(list_name)):
            return
        for entries in self._entry_lists(self._mio.read_manifest_list(list_name)):
            self._needed(entries)

    def look(self, store: FileStore, ignore_tag: str | None = None) -> set[str]:
        """Take out of ``unneeded`` what every retained snapshot, tag but ``ignore_tag`` and
        long-lived changelog needs (see the module doc); returns the names of the metadata files
        they reference."""
        sm = store.snapshot_manager
        for sid in reversed(sm.snapshot_ids()):
            snap = sm.try_snapshot(sid) if self.unneeded else None  # None: expired while listing
            if snap is not None:
                self._live_in(snap)
                self._named_in(store, snap.changelog_manifest_list, may_be_gone=False)
        for tag_name, tag in store.tag_manager().tags().items():
            if tag_name != ignore_tag:
                self._live_in(tag.snapshot)
                self._named_in(store, tag.snapshot.changelog_manifest_list, may_be_gone=True)
        changelogs = store.changelog_manager()
        for cid in changelogs.ids() if self.unneeded else ():
            changelog = changelogs.try_changelog(cid)
            if changelog is not None:
                for list_name in (changelog.base_manifest_list, changelog.delta_manifest_list,
                                  changelog.changelog_manifest_list):
                    self._named_in(store, list_name, may_be_gone=True)
        # every other branch's (on a branch, main's too) snapshots, tags and changelogs name files
        # in the table's directories
        for holder in store.outside_holders() if self.unneeded else ():
            held = holder.snapshot
            if holder.kind == "changelog":
                for list_name in (held.base_manifest_list, held.delta_manifest_list, held.changelog_manifest_list):
                    self._named_in(store, list_name, may_be_gone=True)
            else:
                self._live_in(held)
                self._named_in(store, held.changelog_manifest_list, may_be_gone=True)
        branch = store.paths.branch
        meta = referenced_files(store, ignore_tags=() if ignore_tag is None else {ignore_tag}, data_files=False,
                                skip_branch=branch)  # its own history: the tag left out
        if branch is not None:
            meta |= referenced_files(store.main_store(), data_files=False, skip_branch=branch)
        return {_name(p) for p in meta}


def _held_by(store: FileStore, snap: Snapshot) -> tuple[_Held, _Needed]:
    """Everything the tagged snapshot ``snap`` holds that tag deletion may free (see the module
    doc), and the search for its data files in other holders, which starts from the manifests
    read here."""
    scan = store.file_store_scan()
    mio = scan.manifest_io
    paths = store.paths
    held = _Held()
    metas = scan.data_manifests(snap)
    entry_lists = mio.read_manifests(metas)
    entries = merge_entries(entry_lists, store.name)
    store.check_scanned(Op.EXPIRE, snap, entries)
    for e in entries:
        held.data.append(store.data_file_path(e.partition, e.bucket, e.file))
        held.data.extend(extra_paths(store, e))
    needed = _Needed(scan, {_name(p) for p in held.data})
    for meta, listed in zip(metas, entry_lists, strict=True):
        needed.reduce(meta.file_name, listed)
    for list_name in (snap.base_manifest_list, snap.delta_manifest_list):
        if list_name:
            held.manifests.extend(paths.manifest_file(m.file_name) for m in mio.read_manifest_list(list_name))
            held.manifests.append(paths.manifest_file(list_name))
    if snap.index_manifest:
        held.index.extend(index_file_paths(store, snap.index_manifest, may_be_gone=False))
        held.manifests.append(paths.manifest_file(snap.index_manifest))
    if snap.statistics:
        held.manifests.append(paths.statistics_file(snap.statistics))
    return held, needed
