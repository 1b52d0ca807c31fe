"""Snapshot and changelog expiration: pure planners (which ids go) and the code that deletes their files.

Deletion order (Paimon's): data files that only expired snapshots reference, then changelog files,
then manifests and manifest lists, then the snapshot files, then the EARLIEST hint. Every retained
snapshot, tag and consumer position keeps all its files; a crash leaves the expiring snapshots in
place, and re-running the expiration completes it (deletes are idempotent).

When a ``changelog.*`` retention setting exceeds the snapshot one, the changelog lifecycle is
*decoupled*: expiring a snapshot keeps what a stream needs to read its changes (changelog manifests
and files; for ``changelog-producer = none`` the base and delta lists and the data files writers
added) and copies the snapshot JSON to ``changelog/changelog-<id>``. `expire_changelogs` later removes
those per the changelog retention, with the same protections for tags and consumers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError, InvalidArgumentError
from lake_assets.formats.data_file import FILE_SOURCE_APPEND
from lake_assets.ops.expire_index import index_files_to_expire
from lake_assets.spec.manifest import FileKind, ManifestEntry
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.changelog_manager import snapshot_or_changelog
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


@dataclass(frozen=True)
class ExpirePlan:
    """Snapshots ``[begin, end)`` expire; ``end`` becomes the earliest."""

    begin: int
    end: int

    @property
    def snapshot_ids(self) -> range:
        return range(self.begin, self.end)

    def __bool__(self) -> bool:
        return self.end > self.begin


def plan_expire(
    *,
    earliest: int,
    latest: int,
    retain_min: int,
    retain_max: int,
    expire_limit: int,
    older_than_ms: int,
    time_of: dict[int, int] | None = None,
    consumer_min: int | None = None,
    protected_min: int | None = None,
    own_time: bool = False,
) -> ExpirePlan:
    """Which snapshots (or changelogs) expire (pure). ``time_of`` maps id → commit time for the time rule.

    A snapshot ``id`` may only expire when the one after it was committed before ``older_than_ms``
    (so that every snapshot newer than the cut-off stays reachable by time travel). With
    ``own_time`` (changelogs, as Paimon) an id's own commit time decides. Ids below
    ``latest - retain_max + 1`` go regardless of time; ``protected_min`` and ``consumer_min`` cap the range.
    """
    lo = max(latest - retain_max + 1, earliest)
    hi = latest - retain_min + 1
    if consumer_min is not None:
        hi = min(hi, consumer_min)
    if protected_min is not None:
        hi = min(hi, protected_min)
    hi = min(hi, earliest + expire_limit)
    end = hi
    # snapshots below `lo` are beyond retain_max: they go regardless of time
    for sid in range(max(lo, earliest), hi):
        t = (time_of or {}).get(sid if own_time else sid + 1)
        if t is None or t >= older_than_ms:
            end = sid
            break
    end = max(end, min(lo, hi))
    return ExpirePlan(earliest, max(end, earliest))


@dataclass
class ExpireResult:
    """What an expiration removed (or would remove, for a dry run)."""

    expired_snapshots: list[int] = field(default_factory=list)
    long_lived_changelogs: list[int] = field(default_factory=list)
    expired_changelogs: list[int] = field(default_factory=list)
    deleted_data_files: list[str] = field(default_factory=list)
    deleted_changelog_files: list[str] = field(default_factory=list)
    deleted_manifests: list[str] = field(default_factory=list)
    deleted_index_files: list[str] = field(default_factory=list)
    earliest: int | None = None
    dry_run: bool = False
    deletion_started: bool = False  # whether a failure may have left snapshots without files

    def summary(self) -> dict[str, object]:
        return {
            "expired_snapshots": len(self.expired_snapshots),
            "first_expired": self.expired_snapshots[0] if self.expired_snapshots else None,
            "last_expired": self.expired_snapshots[-1] if self.expired_snapshots else None,
            "long_lived_changelogs": len(self.long_lived_changelogs),
            "expired_changelogs": len(self.expired_changelogs),
            "deleted_data_files": len(self.deleted_data_files),
            "deleted_changelog_files": len(self.deleted_changelog_files),
            "deleted_manifests": len(self.deleted_manifests),
            "earliest": self.earliest,
            "dry_run": self.dry_run,
        }


def _lists_of(snap: Snapshot) -> list[str]:
    return [n for n in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list) if n]


def _appended_by_writer(e: ManifestEntry) -> bool:
    # Files without a recorded source predate _FILE_SOURCE and count as writer output (Paimon's default).
    return e.file.file_source is None or e.file.file_source == FILE_SOURCE_APPEND


def expire_snapshots(
    store: FileStore,
    *,
    retain_min: int | None = None,
    retain_max: int | None = None,
    older_than_ms: int | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    now_ms: int | None = None,
    delete_files: Callable[[list[str]], object] | None = None,
) -> ExpireResult:
    """Expire old snapshots of ``table`` per its retention options (arguments override them), then
    the long-lived changelogs per the changelog retention (see `expire_changelogs`).

    ``delete_files`` replaces the batched deletes of data, changelog and manifest files (a Spark
    job spreads them over executors); it must delete all it is given before returning.
    """
    store.require(Op.EXPIRE)
    opts = store.schema.core_options
    sm = store.snapshot_manager
    result = ExpireResult(dry_run=dry_run)
    latest = sm.latest_id()
    earliest = sm.earliest_id()
    if latest is None or earliest is None:
        return result
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    retain_min = opts.snapshot_num_retained_min if retain_min is None else retain_min
    retain_max = opts.snapshot_num_retained_max if retain_max is None else retain_max
    if retain_min < 1:
        raise InvalidArgumentError("retain_min must be at least 1: the latest snapshot is never expired")
    cutoff = now_ms - opts.snapshot_time_retained_ms if older_than_ms is None else older_than_ms
    limit = opts.snapshot_expire_limit if limit is None else limit
    consumers = store.consumer_manager()
    if opts.consumer_expiration_ms is not None and not dry_run:
        consumers.expire(opts.consumer_expiration_ms, now_ms)
    candidate_hi = min(latest - retain_min + 1, earliest + limit)
    time_of = {}
    for sid in range(earliest + 1, max(candidate_hi, earliest) + 1):
        snap = sm.try_snapshot(sid)
        if snap is not None:
            time_of[sid] = snap.time_millis

    def make_plan(protected_min: int | None) -> ExpirePlan:
        return plan_expire(
            earliest=earliest, latest=latest, retain_min=retain_min, retain_max=retain_max, expire_limit=limit,
            older_than_ms=cutoff, time_of=time_of, consumer_min=consumers.min_next_snapshot(),
            protected_min=protected_min,
        )

    plan = make_plan(None)
    marker = None
    if plan and not dry_run:
        # Announce the expiration, then read consumers (here) and tags (in _apply) again: a tag or
        # consumer position published before the marker is seen and kept; one published after it
        # sees the marker and withdraws (SnapshotManager's expiry handshake). Never past the marker.
        marker = sm.begin_expiry(plan.end)
        plan = make_plan(plan.end)
    snapshot_time_ms = now_ms - cutoff
    decoupled = opts.changelog_decoupled(
        retain_min=retain_min, retain_max=retain_max, time_retained_ms=snapshot_time_ms
    )
    result.earliest = earliest
    try:
        if plan:
            _apply(store, plan, result, dry_run, delete_files, decoupled=decoupled)
            result.earliest = plan.end
        elif not dry_run and sm.read_hint("EARLIEST") is None:
            sm.write_earliest_hint(earliest)
    except BaseException:
        if marker is not None and not result.deletion_started:
            sm.end_expiry(marker)  # stopped before deleting anything: the snapshots are whole
        raise  # otherwise the marker stays: those snapshots may have lost files
    if marker is not None:
        sm.end_expiry(marker, completed_below=plan.end if plan else None)
    cmin, cmax, ctime = opts.changelog_retention(
        retain_min=retain_min, retain_max=retain_max, time_retained_ms=snapshot_time_ms
    )
    expire_changelogs(
        store, retain_min=cmin, retain_max=cmax, older_than_ms=now_ms - ctime, limit=limit, dry_run=dry_run,
        delete_files=delete_files, result=result,
    )
    return result


class _Protection:
    """What tags keep: every tag's lists and data manifests, and the live files of tags below an id."""

    def __init__(self, store: FileStore, below: int) -> None:
        scan = store.file_store_scan()
        mio = scan.manifest_io
        self.files: set[str] = set()
        self.manifests: set[str] = set()
        for tag in store.tag_manager().tags().values():
            tsnap = tag.snapshot
            self.manifests.update(_lists_of(tsnap))
            for meta in mio.read_manifest_list(tsnap.base_manifest_list) + mio.read_manifest_list(
                tsnap.delta_manifest_list
            ):
                self.manifests.add(meta.file_name)
            # A superset of Paimon's nearest-earlier-tag rule: any tag below keeps its files.
            if tsnap.id < below:
                for e in scan.live_entries(tsnap):
                    self.files.add(store.data_file_path(e.partition, e.bucket, e.file))
                    self.files.update(_extra_paths(store, e))


def _files_deleted_by(
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
            names = [store.data_file_path(e.partition, e.bucket, e.file), *_extra_paths(store, e)]
            if e.kind == FileKind.DELETE:
                if keep_entry is not None and keep_entry(e):
                    continue
                paths.update(dict.fromkeys(names))
            else:
                for p in names:
                    paths.pop(p, None)  # re-added (level upgrade): still live
    return paths


def _changelog_files_of(store: FileStore, snaps: list[Snapshot]) -> list[str]:
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


def _manifests_kept_by(store: FileStore, snap: Snapshot, *, lists_may_be_gone: bool = False) -> set[str]:
    """``snap``'s lists and every manifest they name.

    ``snap`` is the first retained snapshot: expired snapshots share manifests with it, and only its
    lists tell which. A list that cannot be read therefore stops the expiration before anything is
    deleted. Only a long-lived changelog (``lists_may_be_gone``) may lack lists expiry removed on purpose.
    """
    mio = store.file_store_scan().manifest_io
    keep = set(_lists_of(snap))
    for name in _lists_of(snap):
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


def _unused_manifests(
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


def _apply(
    store: FileStore,
    plan: ExpirePlan,
    result: ExpireResult,
    dry_run: bool,
    delete_files: Callable[[list[str]], object] | None = None,
    *,
    decoupled: bool = False,
) -> None:
    sm = store.snapshot_manager
    end_snapshot = sm.snapshot(plan.end)
    expired = [s for s in (sm.try_snapshot(i) for i in plan.snapshot_ids) if s is not None]
    protection = _Protection(store, plan.end)
    # Decoupled with changelog-producer=none: the data files writers added are the changelog, so they
    # and the base/delta lists naming them stay until the changelog expires.
    changelog_in_data = decoupled and store.schema.core_options.changelog_producer == "none"
    # 1. data files deleted by snapshots (begin, end]: live only in expired snapshots
    deleting = [s for s in (sm.try_snapshot(i) for i in range(plan.begin + 1, plan.end + 1)) if s is not None]
    data_paths = _files_deleted_by(store, deleting, _appended_by_writer if changelog_in_data else None)
    doomed_data = [p for p in data_paths if p not in protection.files]
    # 2. changelog files of expired snapshots (kept while a long-lived changelog needs them)
    doomed_changelog = [] if decoupled else _changelog_files_of(store, expired)
    # 4. manifests and lists of expired snapshots that the new earliest or a tag does not use
    keep = protection.manifests | _manifests_kept_by(store, end_snapshot)

    def lists_to_drop(snap: Snapshot) -> list[str]:
        if changelog_in_data:
            return []
        if decoupled:
            return [n for n in (snap.base_manifest_list, snap.delta_manifest_list) if n]
        return _lists_of(snap)

    doomed_manifests = _unused_manifests(store, expired, lists_to_drop, keep)
    # 3. index files and index manifests (deletion vectors, hash indexes) only expired snapshots use
    doomed_index, index_manifests = ([], []) if decoupled else index_files_to_expire(
        store, expired, end_snapshot, [t.snapshot for t in store.tag_manager().tags().values()])
    result.deleted_index_files = doomed_index
    result.deleted_data_files = doomed_data
    result.deleted_changelog_files = doomed_changelog
    result.deleted_manifests = doomed_manifests
    result.expired_snapshots = list(plan.snapshot_ids)
    if decoupled:
        result.long_lived_changelogs = [s.id for s in expired]
    if dry_run:
        return
    fio = store.file_io
    delete = delete_files or fio.delete_many
    manifest_paths = [store.paths.manifest_file(n) for n in doomed_manifests] + index_manifests
    _ensure_inside(store, doomed_data, doomed_changelog, manifest_paths, doomed_index)
    result.deletion_started = True
    delete(doomed_data)
    store.fault_point("expire.after_data")
    delete(doomed_changelog)
    store.fault_point("expire.after_changelog")
    delete(doomed_index)
    delete(manifest_paths)
    store.fault_point("expire.after_manifests")
    changelogs = store.changelog_manager()
    expired_by_id = {s.id: s for s in expired}
    for sid in plan.snapshot_ids:
        snap = expired_by_id.get(sid)
        if decoupled and snap is not None:
            # the copy exists before the snapshot goes: a crash in between leaves both, never neither
            changelogs.write(snap)
            store.fault_point("expire.after_changelog_copy")
        fio.delete(store.paths.snapshot_file(sid))
        store.fault_point("expire.after_snapshot_file")
    if decoupled and expired:
        changelogs.write_latest_hint(expired[-1].id)
        if changelogs.read_hint("EARLIEST") is None:
            changelogs.write_earliest_hint(changelogs.earliest_id() or expired[0].id)
    sm.write_earliest_hint(plan.end)
    if store.schema.core_options.clean_empty_directories:
        for p in {d.rsplit("/", 1)[0] for d in doomed_data}:
            fio.delete_dir_if_empty(p)


def expire_changelogs(
    store: FileStore,
    *,
    retain_min: int | None = None,
    retain_max: int | None = None,
    older_than_ms: int | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    now_ms: int | None = None,
    delete_files: Callable[[list[str]], object] | None = None,
    result: ExpireResult | None = None,
) -> ExpireResult:
    """Expire long-lived changelogs (``changelog/changelog-<id>``) per ``changelog.num-retained.*``
    and ``changelog.time-retained`` (arguments override; each falls back to the snapshot setting).

    Only ids below the earliest snapshot are long-lived, so only those go here; retention counts
    from the latest snapshot. Tags and live consumers protect them as they protect snapshots. Deletes
    the changelog files (or, for ``changelog-producer = none``, the writer-added data files that
    later snapshots deleted), then unused lists and manifests, then the changelog files, then the hint.
    ``expire_snapshots`` calls this after expiring snapshots.
    """
    store.require(Op.EXPIRE)
    result = result if result is not None else ExpireResult(dry_run=dry_run)
    opts = store.schema.core_options
    changelogs = store.changelog_manager()
    earliest = changelogs.earliest_id()
    sm = store.snapshot_manager
    latest_snapshot = sm.latest_id()
    earliest_snapshot = sm.earliest_id()
    if earliest is None or latest_snapshot is None or earliest_snapshot is None:
        return result
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cmin, cmax, ctime = opts.changelog_retention()
    retain_min = cmin if retain_min is None else retain_min
    retain_max = cmax if retain_max is None else retain_max
    older_than_ms = now_ms - ctime if older_than_ms is None else older_than_ms
    limit = opts.snapshot_expire_limit if limit is None else limit
    hi = min(latest_snapshot - retain_min + 1, earliest_snapshot, earliest + limit)
    time_of = {}
    for cid in range(earliest, max(hi, earliest)):
        snap = changelogs.try_changelog(cid)
        if snap is not None:
            time_of[cid] = snap.time_millis

    def make_plan(protected_min: int) -> ExpirePlan:
        return plan_expire(
            earliest=earliest, latest=latest_snapshot, retain_min=retain_min, retain_max=retain_max,
            expire_limit=limit, older_than_ms=older_than_ms, time_of=time_of,
            consumer_min=store.consumer_manager().min_next_snapshot(), protected_min=protected_min,
            own_time=True,
        )

    plan = make_plan(earliest_snapshot)
    if not plan:
        return result
    marker = None
    if not dry_run:
        # the handshake of expire_snapshots: consumers and tags are read again after the marker
        marker = sm.begin_expiry(plan.end)
        plan = make_plan(plan.end)
        if not plan:
            sm.end_expiry(marker)
            return result
    started = result.deletion_started
    result.deletion_started = False
    try:
        _expire_changelog_plan(store, plan, result, dry_run, delete_files)
    except BaseException:
        if marker is not None and not result.deletion_started:
            sm.end_expiry(marker)
        raise
    finally:
        result.deletion_started = started or result.deletion_started
    if marker is not None:
        sm.end_expiry(marker)
    return result


def _expire_changelog_plan(
    store: FileStore,
    plan: ExpirePlan,
    result: ExpireResult,
    dry_run: bool,
    delete_files: Callable[[list[str]], object] | None,
) -> None:
    opts = store.schema.core_options
    changelogs = store.changelog_manager()
    sm = store.snapshot_manager
    end = snapshot_or_changelog(sm, changelogs, plan.end)
    expired = [s for s in (changelogs.try_changelog(i) for i in plan.snapshot_ids) if s is not None]
    protection = _Protection(store, plan.end)
    doomed_changelog = _changelog_files_of(store, expired)
    doomed_data: list[str] = []
    if opts.changelog_producer == "none":
        # snapshot expiration skipped the writer-added files that later snapshots deleted
        deleting = [
            s for s in (snapshot_or_changelog(sm, changelogs, i) for i in range(plan.begin + 1, plan.end + 1))
            if s is not None
        ]
        paths = _files_deleted_by(store, deleting, lambda e: not _appended_by_writer(e))
        doomed_data = [p for p in paths if p not in protection.files]
    # Without the first retained id's lists, shared manifests cannot be told apart: keep them all.
    # A long-lived changelog's base/delta lists may be gone, so they alone do not name what the
    # retained snapshots share with expired ones: the earliest snapshot's lists do.
    earliest_id = sm.earliest_id()
    earliest = sm.try_snapshot(earliest_id) if earliest_id is not None else None
    doomed_manifests = (
        [] if end is None
        else _unused_manifests(
            store, expired, _lists_of,
            protection.manifests | _manifests_kept_by(store, end, lists_may_be_gone=not sm.exists(end.id))
            | (_manifests_kept_by(store, earliest) if earliest is not None else set()),
        )
    )
    result.expired_changelogs = list(plan.snapshot_ids)
    result.deleted_data_files = [*result.deleted_data_files, *doomed_data]
    result.deleted_changelog_files = [*result.deleted_changelog_files, *doomed_changelog]
    result.deleted_manifests = [*result.deleted_manifests, *doomed_manifests]
    if dry_run:
        return
    fio = store.file_io
    delete = delete_files or fio.delete_many
    manifest_paths = [store.paths.manifest_file(n) for n in doomed_manifests]
    _ensure_inside(store, doomed_data, doomed_changelog, manifest_paths)
    result.deletion_started = True
    delete(doomed_data)
    delete(doomed_changelog)
    store.fault_point("expire_changelog.after_files")
    delete(manifest_paths)
    store.fault_point("expire_changelog.after_manifests")
    for cid in plan.snapshot_ids:
        changelogs.delete(cid)
    changelogs.write_earliest_hint(plan.end)


def _ensure_inside(store: FileStore, *groups: list[str]) -> None:
    """Raise `UnsafePathError` before any delete unless every path is inside the table (on a
    local disk also through symlinked directories)."""
    for group in groups:
        store.paths.ensure_inside(group, resolve_links=store.file_io.has_symlinks)


def _extra_paths(store: FileStore, e: ManifestEntry) -> list[str]:
    if not e.file.extra_files:
        return []
    ppath = store.partition_path_of(e.partition)
    return [store.paths.data_file(ppath, e.bucket, x) for x in e.file.extra_files]
