"""What an expiration may delete and what it must keep: the file sets shared by snapshot expiry
(`lake_assets.ops.expire`) and changelog expiry (`lake_assets.ops.expire_changelog`).

Every function here only reads; the callers delete, after `ensure_inside`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.data_file import FILE_SOURCE_APPEND
from lake_assets.ops.orphans import referenced_files
from lake_assets.spec.manifest import FileKind, ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


def lists_of(snap: Snapshot) -> list[str]:
    return [n for n in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list) if n]


def appended_by_writer(e: ManifestEntry) -> bool:
    # Files without a recorded source predate _FILE_SOURCE and count as writer output (Paimon's default).
    return e.file.file_source is None or e.file.file_source == FILE_SOURCE_APPEND


class Protection:
    """What tags keep: every tag's lists and data manifests, and the live files of tags below an id;
    and what branches keep: every file a branch's snapshot, tag or changelog names (`unused_by_branches`).

    Branches: Paimon's expiry of the main branch (0.9 to HEAD) knows nothing of them and keeps a
    branch's files only while the tag the branch was made from keeps them on the main branch; a
    branch made empty, or whose tag was deleted, loses files its snapshots name. lake_assets keeps
    every file any branch names, by name (file names are unique per table), tag or no tag. On a
    branch (`lake_assets.store.branch_table`) ``branch_files`` are what the rest of the table names."""

    def __init__(self, store: FileStore, below: int) -> None:
        scan = store.file_store_scan()
        mio = scan.manifest_io
        self.files: set[str] = set()
        self.manifests: set[str] = set()
        # damaged branch metadata raises: the expiry stops before deleting anything. The expiry of a
        # branch keeps what the main branch (snapshots, tags, changelogs) and every other branch name:
        # the branch started on main's files, and Java 0.9's expiry of a branch keeps main's tags only
        branch = store.paths.branch
        referenced = (referenced_files(store, main=False) if branch is None
                      else referenced_files(store.main_store(), skip_branch=branch))
        self.branch_files = {p.rsplit("/", 1)[-1] for p in referenced}
        # the tags as read after the expiry's marker (the handshake's re-check): read once, the
        # callers' index and statistics checks take them from here
        self.tagged: list[Snapshot] = [tag.snapshot for tag in store.tag_manager().tags().values()]
        for tsnap in self.tagged:
            # Paimon's skipping set (0.9 ``FileDeletionBase.manifestSkippingSet``): a tag keeps its
            # base and delta lists, not its changelog list - the changelog's manifests and files
            # go with the expired snapshot (step 2), and a kept list would name deleted manifests.
            self.manifests.update(n for n in (tsnap.base_manifest_list, tsnap.delta_manifest_list) if n)
            for meta in mio.read_manifest_list(tsnap.base_manifest_list) + mio.read_manifest_list(
                tsnap.delta_manifest_list
            ):
                self.manifests.add(meta.file_name)
            # A superset of Paimon's nearest-earlier-tag rule: any tag below keeps its files.
            if tsnap.id < below:
                for e in scan.live_entries(tsnap):
                    self.files.add(store.data_file_path(e.partition, e.bucket, e.file))
                    self.files.update(extra_paths(store, e))


    def unused_by_branches(self, paths: list[str]) -> list[str]:
        """``paths`` (or manifest names) without those a branch names."""
        if not self.branch_files:
            return paths
        return [p for p in paths if p.rsplit("/", 1)[-1] not in self.branch_files]


class Restorations:
    """What retained OVERWRITE snapshots re-add: a rollback as latest (Paimon HEAD's
    ``rollbackToAsLatest``, `ops/rollback_as_latest.py`) lists, by name, files, an index manifest
    and a statistics file that snapshots it is newer than deleted or stopped naming.

    Paimon's expiry keeps them only through the tag the rollback puts on its target; a tag deleted
    early would let an expiry of the snapshots in between delete files a retained snapshot lists.
    lake_assets' expiry keeps them without the tag: every retained OVERWRITE snapshot (rare: a
    plain overwrite adds new files only, so nothing is kept that would not be anyway) is read
    like a tag for index manifests and statistics, and the files its delta adds are kept."""

    def __init__(self, store: FileStore, first_kept: int) -> None:
        self.files: set[str] = set()
        self.snapshots: list[Snapshot] = []
        sm = store.snapshot_manager
        latest = sm.latest_id()
        if latest is None:
            return
        scan = store.file_store_scan()
        for i in range(first_kept + 1, latest + 1):
            snap = sm.try_snapshot(i)
            if snap is None or snap.commit_kind != CommitKind.OVERWRITE:
                continue
            self.snapshots.append(snap)
            for e in scan.delta_entries(snap):  # damaged metadata raises: expiry stops
                if e.kind == FileKind.ADD:
                    self.files.add(store.data_file_path(e.partition, e.bucket, e.file))
                    self.files.update(extra_paths(store, e))


def files_deleted_by(
    store: FileStore, snaps: list[Snapshot], keep_entry: Callable[[ManifestEntry], bool] | None = None
) -> dict[str, None]:
    """Data files the deltas of ``snaps`` (in id order) deleted and did not add back.

    A file deleted in snapshot k was last live in k-1, so once every snapshot before k is gone no
    retained snapshot needs it. ``keep_entry`` exempts DELETE entries whose file must stay anyway.
    """
    scan = store.file_store_scan(Op.EXPIRE)  # refuses files it must not delete (external paths)
    paths: dict[str, None] = {}
    for snap in snaps:
        try:
            entries = scan.delta_entries(snap)
        except CorruptMetadataError:
            continue  # cannot tell what it deleted: keep the files (orphan cleanup may remove them)
        for e in entries:
            names = [store.data_file_path(e.partition, e.bucket, e.file), *extra_paths(store, e)]
            if e.kind == FileKind.DELETE:
                if keep_entry is not None and keep_entry(e):
                    continue
                paths.update(dict.fromkeys(names))
            else:
                for p in names:
                    paths.pop(p, None)  # re-added (level upgrade): still live
    return paths


def changelog_files_of(store: FileStore, snaps: list[Snapshot]) -> list[str]:
    scan = store.file_store_scan()
    out: list[str] = []
    for snap in snaps:
        if not snap.changelog_manifest_list:
            continue
        try:
            out.extend(store.data_file_path(e.partition, e.bucket, e.file) for e in scan.changelog_entries(snap))
        except CorruptMetadataError:
            continue
    return out


def manifests_kept_by(store: FileStore, snap: Snapshot, *, lists_may_be_gone: bool = False) -> set[str]:
    """``snap``'s lists and every manifest they name.

    ``snap`` is the first retained snapshot: expired snapshots share manifests with it, and only its
    lists tell which. A list that cannot be read therefore stops the expiration before anything is
    deleted. Only a long-lived changelog (``lists_may_be_gone``) may lack lists expiry removed on purpose.
    """
    mio = store.file_store_scan().manifest_io
    keep = set(lists_of(snap))
    for name in lists_of(snap):
        if lists_may_be_gone and not store.file_io.exists(store.paths.manifest_file(name)):
            continue
        try:
            keep.update(m.file_name for m in mio.read_manifest_list(name))
        except CorruptMetadataError as exc:
            raise CorruptMetadataError(
                f"Cannot expire snapshots of {store.name}: manifest list {name} of snapshot {snap.id}, "
                f"the first one kept, cannot be read ({exc}); without it the manifests it shares with "
                "expired snapshots cannot be told apart, so nothing was deleted"
            ) from exc
    return keep


def unused_manifests(
    store: FileStore, snaps: list[Snapshot], lists_of: Callable[[Snapshot], list[str]], keep: set[str]
) -> list[str]:
    mio = store.file_store_scan().manifest_io
    doomed: dict[str, None] = {}
    for snap in snaps:
        for list_name in lists_of(snap):
            try:
                metas = mio.read_manifest_list(list_name)
            except CorruptMetadataError:
                metas = []  # already gone (or unreadable): its manifests stay for orphan cleanup
            for meta in metas:
                if meta.file_name not in keep:
                    doomed[meta.file_name] = None
            if list_name not in keep:
                doomed[list_name] = None
    return list(doomed)


def ensure_inside(store: FileStore, *groups: list[str]) -> None:
    """Raise `UnsafePathError` before any delete unless every path is inside the table (on a
    local disk also through symlinked directories)."""
    for group in groups:
        store.paths.ensure_inside(group, resolve_links=store.file_io.has_symlinks)


def extra_paths(store: FileStore, e: ManifestEntry) -> list[str]:
    if not e.file.extra_files:
        return []
    ppath = store.partition_path_of(e.partition)
    return [store.paths.data_file(ppath, e.bucket, x) for x in e.file.extra_files]
