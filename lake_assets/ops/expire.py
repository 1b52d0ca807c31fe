"""Snapshot expiration: a pure planner (which snapshots go) and the code that deletes their files.

Deletion order (Paimon's): data files that only expired snapshots reference, then changelog files,
then manifests and manifest lists, then the snapshot files, then the EARLIEST hint. Every retained
snapshot, tag and consumer position keeps all its files; a crash leaves the expiring snapshots in
place, and re-running the expiration completes it (deletes are idempotent).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError
from lake_assets.spec.manifest import FileKind
from lake_assets.spec.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_assets.table import Table


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
) -> ExpirePlan:
    """Which snapshots expire (pure). ``time_of`` maps snapshot id → commit time for the time rule.

    A snapshot ``id`` may only expire when the one after it was committed before ``older_than_ms``
    (so that every snapshot newer than the cut-off stays reachable by time travel).
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
        t = (time_of or {}).get(sid + 1)
        if t is None or t >= older_than_ms:
            end = sid
            break
    end = max(end, min(lo, hi))
    return ExpirePlan(earliest, max(end, earliest))


@dataclass
class ExpireResult:
    """What an expiration removed (or would remove, for a dry run)."""

    expired_snapshots: list[int] = field(default_factory=list)
    deleted_data_files: list[str] = field(default_factory=list)
    deleted_changelog_files: list[str] = field(default_factory=list)
    deleted_manifests: list[str] = field(default_factory=list)
    earliest: int | None = None
    dry_run: bool = False

    def summary(self) -> dict[str, object]:
        return {
            "expired_snapshots": len(self.expired_snapshots),
            "first_expired": self.expired_snapshots[0] if self.expired_snapshots else None,
            "last_expired": self.expired_snapshots[-1] if self.expired_snapshots else None,
            "deleted_data_files": len(self.deleted_data_files),
            "deleted_changelog_files": len(self.deleted_changelog_files),
            "deleted_manifests": len(self.deleted_manifests),
            "earliest": self.earliest,
            "dry_run": self.dry_run,
        }


def _lists_of(snap: Snapshot) -> list[str]:
    return [n for n in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list) if n]


def expire_snapshots(
    table: Table,
    *,
    retain_min: int | None = None,
    retain_max: int | None = None,
    older_than_ms: int | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    now_ms: int | None = None,
    delete_files: Callable[[list[str]], object] | None = None,
) -> ExpireResult:
    """Expire old snapshots of ``table`` per its retention options (arguments override them).

    ``delete_files`` replaces the batched deletes of data, changelog and manifest files (a Spark
    job spreads them over executors); it must delete all it is given before returning.
    """
    opts = table.schema.core_options
    sm = table.snapshot_manager
    result = ExpireResult(dry_run=dry_run)
    latest = sm.latest_id()
    earliest = sm.earliest_id()
    if latest is None or earliest is None:
        return result
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    retain_min = opts.snapshot_num_retained_min if retain_min is None else retain_min
    retain_max = opts.snapshot_num_retained_max if retain_max is None else retain_max
    if retain_min < 1:
        raise ValueError("retain_min must be at least 1: the latest snapshot is never expired")
    cutoff = now_ms - opts.snapshot_time_retained_ms if older_than_ms is None else older_than_ms
    limit = opts.snapshot_expire_limit if limit is None else limit
    consumers = table.consumer_manager()
    if opts.consumer_expiration_ms is not None and not dry_run:
        consumers.expire(opts.consumer_expiration_ms, now_ms)
    consumer_min = consumers.min_next_snapshot()
    candidate_hi = min(latest - retain_min + 1, earliest + limit)
    time_of = {}
    for sid in range(earliest + 1, max(candidate_hi, earliest) + 1):
        snap = sm.try_snapshot(sid)
        if snap is not None:
            time_of[sid] = snap.time_millis
    plan = plan_expire(
        earliest=earliest, latest=latest, retain_min=retain_min, retain_max=retain_max, expire_limit=limit,
        older_than_ms=cutoff, time_of=time_of, consumer_min=consumer_min,
    )
    result.earliest = earliest
    if not plan:
        if not dry_run and sm._read_hint("EARLIEST") is None:
            sm.write_earliest_hint(earliest)
        return result
    _apply(table, plan, result, dry_run, delete_files)
    result.earliest = plan.end
    return result


def _apply(
    table: Table,
    plan: ExpirePlan,
    result: ExpireResult,
    dry_run: bool,
    delete_files: Callable[[list[str]], object] | None = None,
) -> None:
    sm = table.snapshot_manager
    scan = table.file_store_scan()
    mio = scan.manifest_io
    end_snapshot = sm.snapshot(plan.end)
    tags = table.tag_manager().tags()
    # Files any tag still references are kept (a superset of Paimon's nearest-earlier-tag rule).
    tagged_files: set[str] = set()
    tagged_manifests: set[str] = set()
    for tag in tags.values():
        tsnap = tag.snapshot
        tagged_manifests.update(_lists_of(tsnap))
        for meta in mio.read_manifest_list(tsnap.base_manifest_list) + mio.read_manifest_list(
            tsnap.delta_manifest_list
        ):
            tagged_manifests.add(meta.file_name)
        if tsnap.id < plan.end:
            for e in scan.live_entries(tsnap):
                tagged_files.add(table.data_file_path(e.partition, e.bucket, e.file))
                tagged_files.update(_extra_paths(table, e))
    # 1. data files deleted by snapshots (begin, end]: live only in expired snapshots
    data_paths: dict[str, None] = {}
    for sid in range(plan.begin + 1, plan.end + 1):
        snap = sm.try_snapshot(sid)
        if snap is None:
            continue
        try:
            entries = scan.delta_entries(snap)
        except CorruptMetadataError:
            continue  # cannot tell what it deleted: keep the files (orphan cleanup may remove them)
        for e in entries:
            paths = [table.data_file_path(e.partition, e.bucket, e.file), *_extra_paths(table, e)]
            for p in paths:
                if e.kind == FileKind.DELETE:
                    data_paths[p] = None
                else:
                    data_paths.pop(p, None)  # re-added (level upgrade): still live
    doomed_data = [p for p in data_paths if p not in tagged_files]
    # 2. changelog files of expired snapshots
    doomed_changelog: list[str] = []
    for sid in plan.snapshot_ids:
        snap = sm.try_snapshot(sid)
        if snap is None or not snap.changelog_manifest_list:
            continue
        try:
            for e in scan.changelog_entries(snap):
                doomed_changelog.append(table.data_file_path(e.partition, e.bucket, e.file))
        except CorruptMetadataError:
            continue
    # 4. manifests and lists of expired snapshots that the new earliest or a tag does not use
    keep = set(tagged_manifests) | set(_lists_of(end_snapshot))
    for meta in mio.read_manifest_list(end_snapshot.base_manifest_list) + mio.read_manifest_list(
        end_snapshot.delta_manifest_list
    ):
        keep.add(meta.file_name)
    if end_snapshot.changelog_manifest_list:
        keep.update(m.file_name for m in mio.read_manifest_list(end_snapshot.changelog_manifest_list))
    doomed_manifests: dict[str, None] = {}
    for sid in plan.snapshot_ids:
        snap = sm.try_snapshot(sid)
        if snap is None:
            continue
        for list_name in _lists_of(snap):
            try:
                metas = mio.read_manifest_list(list_name)
            except CorruptMetadataError:
                metas = []
            for meta in metas:
                if meta.file_name not in keep:
                    doomed_manifests[meta.file_name] = None
            if list_name not in keep:
                doomed_manifests[list_name] = None
    result.deleted_data_files = doomed_data
    result.deleted_changelog_files = doomed_changelog
    result.deleted_manifests = list(doomed_manifests)
    result.expired_snapshots = list(plan.snapshot_ids)
    if dry_run:
        return
    fio = table.file_io
    delete = delete_files or fio.delete_many
    delete(doomed_data)
    table.fault_point("expire.after_data")
    delete(doomed_changelog)
    table.fault_point("expire.after_changelog")
    delete([table.paths.manifest_file(n) for n in doomed_manifests])
    table.fault_point("expire.after_manifests")
    for sid in plan.snapshot_ids:
        fio.delete(table.paths.snapshot_file(sid))
        table.fault_point("expire.after_snapshot_file")
    sm.write_earliest_hint(plan.end)
    if table.schema.core_options.clean_empty_directories:
        for p in {d.rsplit("/", 1)[0] for d in doomed_data}:
            fio.delete_dir_if_empty(p)


def _extra_paths(table: Table, e) -> list[str]:
    if not e.file.extra_files:
        return []
    base = table.data_file_path(e.partition, e.bucket, e.file).rsplit("/", 1)[0]
    return [f"{base}/{x}" for x in e.file.extra_files]
