"""Orphan files: files in Paimon's directories of a table that no snapshot, tag or changelog of any
branch references.

They come from failed or killed writers and commits, aborted Spark tasks and interrupted
expirations. Only files older than a bound are considered, so files of commits in flight are safe.
Which directories are looked at is Paimon's choice (`lake_assets.ops.orphan_scope`): files other
tools keep in the table directory (Flink's ``_SUCCESS``, a README) are never touched.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from lake_assets.durations import duration_text
from lake_assets.errors import CorruptMetadataError, InvalidArgumentError, UnsupportedFeatureError
from lake_assets.formats.manifest_codec import decode_index_manifest
from lake_assets.ops.orphan_scope import list_scope
from lake_assets.store.read_once import reads_once
from lake_assets.store.snapshot_manager import snapshot_ids_of
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.io.file_io import FileStatus
    from lake_assets.spec.snapshot import Snapshot
    from lake_assets.store.branches import BranchHolder, HolderKind
    from lake_assets.store.file_store import FileStore

# The youngest files orphan removal may delete unless told ``allow_recent``. Files a writer has
# written but not yet committed are unreferenced until its commit lands: a Spark batch job's from
# its tasks until the driver commits at the end of the job (bounded only by the job's run time:
# under Dagster, ``spark.timeout``), a streaming micro-batch's until that batch commits, a
# ``write-only`` or cross-partition round's until its committer lands it, a Flink job's until its
# next checkpoint. A bound below an hour (a typo such as ``10min``, or a guess) is far more likely
# to delete such files, and break that commit, than to find orphans worth the hurry. Paimon's
# procedure defaults to 1 day and enforces nothing.
ORPHAN_AGE_FLOOR = timedelta(hours=1)


def check_orphan_age(older_than: timedelta, *, allow_recent: bool, dry_run: bool = False) -> None:
    """The one rule on orphan removal's age bound (core API, Spark job and lake.yaml alike): a
    delete needs ``older_than`` of at least `ORPHAN_AGE_FLOOR` unless ``allow_recent`` (for tables
    no writer can be writing to meanwhile). A dry run deletes nothing: any bound may look.
    `InvalidArgumentError` naming the bound, the floor and the override otherwise."""
    if dry_run or allow_recent or older_than >= ORPHAN_AGE_FLOOR:
        return
    raise InvalidArgumentError(
        f"orphan removal's older_than ({duration_text(older_than)}) is below its floor of "
        f"{duration_text(ORPHAN_AGE_FLOOR)}: a file that "
        "young may belong to a write still in flight (a Spark job's or streaming micro-batch's files before "
        "its commit, a write-only writer's round), and deleting it breaks that commit. Use a bound longer than "
        "your longest write (Paimon's default is 1 day), or, only if nothing can be writing to the table, "
        "allow it explicitly: allow_recent=True, the job's --allow-recent, lake.yaml's orphans.allow_recent"
    )


@dataclass
class OrphanResult:
    """Orphans found (and removed unless ``dry_run``)."""

    paths: list[str] = field(default_factory=list)
    bytes: int = 0
    dry_run: bool = True
    # directories Paimon's clean would remove once the files are gone (only if they are empty then):
    # listed ones found empty and old enough, and the bucket directories of the files found
    empty_dirs: list[str] = field(default_factory=list)
    bucket_dirs: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        return {"orphan_files": len(self.paths), "orphan_bytes": self.bytes, "dry_run": self.dry_run}


def referenced_files(
    store: FileStore, *, ignore_tags: Collection[str] = (), data_files: bool = True, main: bool = True,
    skip_branch: str | None = None, snapshot_listing: list[FileStatus] | None = None,
) -> set[str]:
    """Every file path a retained snapshot, tag (other than ``ignore_tags``) or long-lived changelog
    may reference (data, changelog, manifests, lists), of the main branch and of every branch (their
    snapshots, tags and changelogs name files in the table's directories, `lake_assets.store.branches`).
    ``data_files=False``: the metadata files only (manifests, lists, index and statistics files), which
    reads no manifest. ``main=False``: what the branches reference, the main branch left out;
    ``skip_branch``: that branch left out (what the rest of the table references, for its expiry).
    ``snapshot_listing``: ``snapshot/`` as the caller just listed it (`retained_snapshots`).

    A superset: files named by ADD entries that a later DELETE cancelled count too, which only
    keeps more (snapshot expiration removes those). Lists that expiration removed on purpose are
    skipped when missing: a long-lived changelog's base and delta lists (changelog producers other
    than ``none``) and a tagged snapshot's changelog list. Anything present but unreadable raises.

    The retained snapshots must be contiguous (`retained_snapshots`, `CorruptMetadataError`
    otherwise): a later one's base then names nothing that the earliest one's base and delta and
    the later deltas do not, so the entries of those bases are not read (their lists are).
    """
    changelogs = store.changelog_manager()
    scan = store.file_store_scan()
    mio = scan.manifest_io
    fio = store.file_io
    refs: set[str] = set()
    seen_manifests: set[str] = set()
    seen_indexes: set[str] = set()  # index manifests read (holders share them: read each once)

    def add_list(list_name: str, *, may_be_gone: bool, entries: bool = True) -> None:
        path = store.paths.manifest_file(list_name)
        refs.add(path)
        if may_be_gone and not fio.exists(path):
            return
        for meta in mio.read_manifest_list(list_name):
            refs.add(store.paths.manifest_file(meta.file_name))
            if not data_files or not entries or meta.file_name in seen_manifests:
                continue
            seen_manifests.add(meta.file_name)
            if may_be_gone and not fio.exists(store.paths.manifest_file(meta.file_name)):
                continue
            for e in mio.read_manifest(meta.file_name, meta.file_size):
                path = store.data_file_path(e.partition, e.bucket, e.file)
                refs.add(path)
                ppath = store.partition_path_of(e.partition)
                refs.update(store.paths.data_file(ppath, e.bucket, x) for x in e.file.extra_files)

    # A snapshot's base list holds its parent's files (base and delta, merged): in a contiguous
    # range, every file a retained snapshot's base names is in the earliest one's base or in a
    # retained delta (the rule Paimon's expiry relies on too). Only the earliest base's manifests
    # are read then: with 500 snapshots, a fifth of the entries (bench/RESULTS.md, session 18).
    retained = retained_snapshots(store, snapshot_listing) if main else []
    earliest = retained[0].id if retained else None

    def _add_references(snap: Snapshot, kind: HolderKind, *, main_snapshot: bool = False) -> None:
        for list_name in (snap.base_manifest_list, snap.delta_manifest_list):
            if list_name:
                implied = main_snapshot and snap.id != earliest and list_name == snap.base_manifest_list
                add_list(list_name, may_be_gone=kind == "changelog", entries=not implied)
        if snap.changelog_manifest_list:
            add_list(snap.changelog_manifest_list, may_be_gone=kind != "snapshot")
        if snap.index_manifest and snap.index_manifest not in seen_indexes:
            refs.add(store.paths.manifest_file(snap.index_manifest))
            named = index_file_paths(store, snap.index_manifest, may_be_gone=kind != "snapshot")
            refs.update(named)
            if named or kind == "snapshot":  # read (an empty answer of a holder that may lack it: maybe gone)
                seen_indexes.add(snap.index_manifest)
        if snap.statistics:
            refs.add(store.paths.statistics_file(snap.statistics))

    # (snapshot, kind, the branch holding it: None for the main branch)
    holders: list[tuple[Snapshot, HolderKind, BranchHolder | None]] = []
    if main:
        holders += [(s, "snapshot", None) for s in retained]
        holders += [(t.snapshot, "tag", None) for n, t in store.tag_manager().tags().items() if n not in ignore_tags]
        holders += [(c, "changelog", None) for c in (changelogs.try_changelog(i) for i in changelogs.ids())
                    if c is not None]
    # A branch's files are the table's: its lists, manifests and data files are resolved in the
    # table's directories (a branch has none of its own). Its snapshots are read like tags: the
    # first one of a branch made from a tag is a copy of the tag's snapshot, whose changelog list
    # and files the main branch's expiry removes (Java's too, which keeps a tag's data only).
    holders += [(h.snapshot, "tag" if h.kind == "snapshot" else h.kind, h) for h in store.branch_holders()
                if h.branch != skip_branch]
    for snap, kind, branch in holders:
        if branch is None:
            _add_references(snap, kind, main_snapshot=kind == "snapshot")
            continue
        try:
            _add_references(snap, kind)
        except CorruptMetadataError as exc:
            raise CorruptMetadataError(
                f"{exc} (named by {branch.label} of {store.name}: the branch is damaged - another engine's "
                "expiry may have deleted its files -, so nothing was deleted; repair or delete the branch)"
            ) from exc
    return refs


def retained_snapshots(store: FileStore, listing: list[FileStatus] | None = None) -> list[Snapshot]:
    """Every retained snapshot, oldest first, proven contiguous: ids from the earliest to the latest
    with none missing between them. Expiry deletes from the earliest up and rollback from the latest
    down, so a hole in the middle is damaged metadata, and the files only that snapshot named would
    look unreferenced. A hole seen in one listing is looked at again (an expiry running meanwhile, or
    a paged listing, shows one that the next listing no longer has); one still there raises
    `CorruptMetadataError`, so that nothing is deleted on its strength. ``listing``: ``snapshot/``
    as the caller just listed it, the first listing (a second one is made for a hole)."""
    sm = store.snapshot_manager
    for attempt in range(2):
        # one that vanishes after the listing is skipped: at either end, expiry's or rollback's
        # work; in the middle, the hole check below sees it
        listed = (snapshot_ids_of([posixpath.basename(st.path) for st in listing])
                  if listing is not None and attempt == 0 else sm.snapshot_ids())
        snaps = [s for s in (sm.try_snapshot(sid) for sid in listed) if s is not None]
        ids = [s.id for s in snaps]
        missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids)) if ids else []
        if not missing:
            return snaps
    shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
    raise CorruptMetadataError(
        f"Table {store.name}: snapshot(s) {shown} are missing between the earliest retained snapshot {ids[0]} and "
        f"the latest {ids[-1]} (damaged metadata: expiry removes the oldest first): the files only they name "
        "cannot be told from orphans, so nothing is deleted; restore the snapshot files"
    )


def index_file_paths(store: FileStore, name: str, *, may_be_gone: bool) -> list[str]:
    """Paths of the index files (``index/``: hash indexes, deletion vectors) an index manifest names.

    Written by Paimon engines for modes lake_assets does not write; they are still referenced by
    the snapshot and must never be collected as orphans."""
    try:
        data = store.file_io.read_bytes(store.paths.manifest_file(name))
    except FileNotFoundError:
        if may_be_gone:
            return []
        raise CorruptMetadataError(f"Table {store.name}: index manifest {name} is missing") from None
    out = []
    for e in decode_index_manifest(data, name):
        if e.external_path:
            raise UnsupportedFeatureError(
                f"Table {store.name}: index file {e.file_name} has an external path {e.external_path!r}; "
                "external paths are not supported"
            )
        out.append(store.paths.index_file(e.file_name))
    return out


@reads_once
def remove_orphan_files(
    store: FileStore,
    *,
    older_than: timedelta = timedelta(days=1),
    dry_run: bool = True,
    now_ms: int | None = None,
    allow_recent: bool = False,
) -> OrphanResult:
    """Find the files in Paimon's directories of the table (`lake_assets.ops.orphan_scope`) that
    nothing references and that are older than ``older_than``; unless a dry run, delete them and
    then the data directories they leave empty, as Paimon's orphan clean does.

    A delete with ``older_than`` below `ORPHAN_AGE_FLOOR` is refused unless ``allow_recent``
    (`check_orphan_age`): such young files may be a write's in flight.

    If any manifest cannot be read, nothing is deleted (a file that only an unreadable manifest
    names would otherwise look like an orphan).
    """
    fio = store.file_io
    # schema/ and snapshot/ are listed once where the listing that finds candidates can be the one
    # that reads (no symlinks to leave out): schema/ says the table still exists, snapshot/ which
    # snapshots are retained; candidates listed before the references are read only miss files
    # made since, too young to delete
    listed = {} if fio.has_symlinks else {"schema": fio.list_status(store.paths.schema_dir),
                                          "snapshot": fio.list_status(store.paths.snapshot_dir)}
    store.require_exists(None if fio.has_symlinks else [posixpath.basename(st.path) for st in listed["schema"]])
    check_orphan_age(older_than, allow_recent=allow_recent, dry_run=dry_run)
    store.require(Op.ORPHANS)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now_ms - int(older_than.total_seconds() * 1000)
    # raises CorruptMetadataError: then we delete nothing
    refs = referenced_files(store, snapshot_listing=listed.get("snapshot"))
    # File names (uuid-based, unique per table) that manifests name, wherever the file sits: a path
    # rebuilt from partition values can miss a live file (e.g. a partition directory written under
    # another partition.default-name); never delete a file a manifest names, whatever its directory.
    referenced_names = {p.rsplit("/", 1)[-1] for p in refs}
    root = store.paths.root.rstrip("/")
    scope = list_scope(store, listed)
    result = OrphanResult(dry_run=dry_run)
    for st in scope.files:
        if not st.path.startswith(root + "/"):
            continue  # a listing that names something outside the table: never ours to delete
        if st.path in refs or st.path.rsplit("/", 1)[-1] in referenced_names:
            continue
        if st.modified_ms is None or st.modified_ms >= cutoff:
            continue  # Paimon's oldEnough is strict: modificationTime < olderThanMillis
        result.paths.append(st.path)
        result.bytes += st.size
    result.empty_dirs = [d.path for d in scope.empty_dirs
                         if d.path.startswith(root + "/") and d.modified_ms is not None and d.modified_ms < cutoff]
    result.bucket_dirs = sorted({p.rsplit("/", 1)[0] for p in result.paths} & scope.bucket_dirs)
    if not dry_run:
        # Only paths proven inside the table (through symlinks too, on a local disk) are deleted.
        store.paths.ensure_inside(result.paths, resolve_links=store.file_io.has_symlinks)
        # in batches, so that an interrupted cleanup has made progress and a re-run finishes it
        for i in range(0, len(result.paths), 100):
            store.file_io.delete_many(result.paths[i : i + 100])
            store.fault_point("orphans.after_delete_batch")
        remove_empty_directories(store, result)
    return result


def remove_empty_directories(store: FileStore, found: OrphanResult) -> list[str]:
    """After ``found``'s files were deleted: remove the directories Paimon's clean removes, each only
    when it holds nothing (a directory is never removed with anything in it). Returns those removed.

    As ``LocalOrphanFilesClean`` (HEAD): the listed directories that were empty and old enough, and
    each removed one's parents up to (never) the table directory; then the bucket directories whose
    files were deleted, and their partition directories, as many levels as the table has partition keys.
    """
    root = store.paths.root.rstrip("/")
    fio = store.file_io
    store.paths.ensure_inside([*found.empty_dirs, *found.bucket_dirs], resolve_links=fio.has_symlinks)
    removed: list[str] = []

    def remove(path: str) -> bool:
        if path == root or not path.startswith(root + "/") or not fio.delete_dir_if_empty(path):
            return False
        removed.append(path)
        return True

    level = set(found.empty_dirs)
    while level:
        level = {d.rsplit("/", 1)[0] for d in level if remove(d)}
    parents = {d.rsplit("/", 1)[0] for d in found.bucket_dirs if remove(d)}
    for _ in range(len(store.schema.partition_keys)):
        parents = {d.rsplit("/", 1)[0] for d in parents if remove(d)}
    return removed


__all__ = [
    "ORPHAN_AGE_FLOOR", "OrphanResult", "check_orphan_age", "referenced_files", "remove_empty_directories",
    "remove_orphan_files", "retained_snapshots",
]
