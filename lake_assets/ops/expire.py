"""Snapshot and changelog expiration: pure planners (which ids go) and the code that deletes their files.

Deletion order (Paimon's): data files that only expired snapshots reference, then changelog files,
then index files, manifests, manifest lists and statistics files, then the snapshot files, then
the EARLIEST hint. Every retained snapshot, tag and consumer position keeps all its files (a
long-lived writer's lease is a consumer position until its end, ops/writer_lease.py); a crash
leaves the expiring snapshots in place, and re-running the expiration completes it (deletes are
idempotent).

When a ``changelog.*`` retention setting exceeds the snapshot one, the changelog lifecycle is
*decoupled*: expiring a snapshot keeps what a stream needs to read its changes (changelog manifests
and files; for ``changelog-producer = none`` the base and delta lists and the data files writers
added) and copies the snapshot JSON to ``changelog/changelog-<id>``. `expire_changelogs` later removes
those per the changelog retention, with the same protections for tags and consumers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from lake_assets.errors import InvalidArgumentError
from lake_assets.ops.expire_changelog import expire_changelogs
from lake_assets.ops.expire_files import (
    Protection,
    Restorations,
    appended_by_writer,
    changelog_files_of,
    ensure_inside,
    files_deleted_by,
    lists_of,
    manifests_kept_by,
    unused_manifests,
)
from lake_assets.ops.expire_index import index_files_to_expire, statistics_to_expire
from lake_assets.ops.expire_plan import ExpirePlan, ExpireResult, plan_expire
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.consumers import min_position
from lake_assets.store.read_once import reads_once
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

# The planner and the changelog expiry live in their own modules; callers import them from here too.
__all__ = ["ExpirePlan", "ExpireResult", "expire_changelogs", "expire_snapshots", "plan_expire"]


@reads_once
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
    # the positions the plan starts from: a writer lease past its end (its writer crashed) pins
    # nothing and is dropped (ops/writer_lease.py), its listing's live leases and readers kept
    # like a reader's (one listing of consumer/ for both)
    first_min = min_position(consumers.drop_lapsed_leases_listing(now_ms) if not dry_run else consumers.consumers(),
                             now_ms)
    candidate_hi = min(latest - retain_min + 1, earliest + limit)
    time_of = {}
    time_checked_from = max(latest - retain_max + 1, earliest)  # below it ids go regardless of time
    for sid in range(earliest + 1, max(candidate_hi, earliest) + 1):
        snap = sm.try_snapshot(sid)
        if snap is not None:
            time_of[sid] = snap.time_millis
        if sid - 1 >= time_checked_from and (snap is None or snap.time_millis >= cutoff):
            break  # the plan stops at sid - 1: later snapshots need no reading (each commit runs this)

    def make_plan(protected_min: int | None, consumer_min: int | None) -> ExpirePlan:
        return plan_expire(
            earliest=earliest, latest=latest, retain_min=retain_min, retain_max=retain_max, expire_limit=limit,
            older_than_ms=cutoff, time_of=time_of, consumer_min=consumer_min, protected_min=protected_min,
        )

    plan = make_plan(None, first_min)
    marker = None
    if plan and not dry_run:
        # Announce the expiration, then read consumers (here) and tags (in _apply) again: a tag or
        # consumer position published before the marker is seen and kept; one published after it
        # sees the marker and withdraws (SnapshotManager's expiry handshake). Never past the marker.
        marker = sm.begin_expiry(plan.end)
        plan = make_plan(plan.end, consumers.min_next_snapshot(now_ms))  # read again: the handshake
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
    protection = Protection(store, plan.end)
    restored = Restorations(store, plan.end)  # rollbacks as latest re-add files by name
    # Decoupled with changelog-producer=none: the data files writers added are the changelog, so they
    # and the base/delta lists naming them stay until the changelog expires.
    changelog_in_data = decoupled and store.schema.core_options.changelog_producer == "none"
    # 1. data files deleted by snapshots (begin, end]: live only in expired snapshots
    deleting = [s for s in (sm.try_snapshot(i) for i in range(plan.begin + 1, plan.end + 1)) if s is not None]
    data_paths = files_deleted_by(store, deleting, appended_by_writer if changelog_in_data else None)
    doomed_data = [p for p in data_paths if p not in protection.files and p not in restored.files]
    # 2. changelog files of expired snapshots (kept while a long-lived changelog needs them)
    doomed_changelog = [] if decoupled else changelog_files_of(store, expired)
    # 4. manifests and lists of expired snapshots that the new earliest or a tag does not use
    keep = protection.manifests | manifests_kept_by(store, end_snapshot)

    def lists_to_drop(snap: Snapshot) -> list[str]:
        if changelog_in_data:
            return []
        if decoupled:
            return [n for n in (snap.base_manifest_list, snap.delta_manifest_list) if n]
        return lists_of(snap)

    doomed_manifests = unused_manifests(store, expired, lists_to_drop, keep)
    # 3. index files and index manifests (deletion vectors, hash indexes) only expired snapshots use
    tagged = protection.tagged + restored.snapshots
    doomed_index, index_manifests = ([], []) if decoupled else index_files_to_expire(
        store, expired, end_snapshot, tagged)
    # statistics files only expired snapshots name; decoupled too, as Java's SnapshotDeletion: a
    # changelog copy keeps the name, but nothing reads a changelog's statistics
    doomed_stats = statistics_to_expire(store, expired, end_snapshot, tagged)
    # what a branch's snapshot, tag or changelog names stays (`Protection`)
    doomed_data, doomed_changelog, doomed_manifests, index_manifests, doomed_index, doomed_stats = (
        protection.unused_by_branches(group) for group in (
            doomed_data, doomed_changelog, doomed_manifests, index_manifests, doomed_index, doomed_stats))
    result.deleted_index_files = doomed_index
    result.deleted_statistics_files = doomed_stats
    result.deleted_data_files = doomed_data
    result.deleted_changelog_files = doomed_changelog
    # index manifests are manifest files too (manifest/index-manifest-*): counted and listed with them
    result.deleted_manifests = doomed_manifests + [p.rsplit("/", 1)[-1] for p in index_manifests]
    result.expired_snapshots = list(plan.snapshot_ids)
    if decoupled:
        result.long_lived_changelogs = [s.id for s in expired]
    if dry_run:
        return
    fio = store.file_io
    delete = delete_files or fio.delete_many
    manifest_paths = [store.paths.manifest_file(n) for n in doomed_manifests] + index_manifests
    ensure_inside(store, doomed_data, doomed_changelog, manifest_paths, doomed_index, doomed_stats)
    result.deletion_started = True
    delete(doomed_data)
    store.fault_point("expire.after_data")
    delete(doomed_changelog)
    store.fault_point("expire.after_changelog")
    delete(doomed_index)
    delete(manifest_paths)
    delete(doomed_stats)
    store.fault_point("expire.after_manifests")
    changelogs = store.changelog_manager()
    expired_by_id = {s.id: s for s in expired}
    for sid in plan.snapshot_ids:
        snap = expired_by_id.get(sid)
        if decoupled and snap is not None:
            # the copy exists before the snapshot goes: a crash in between leaves both, never neither
            changelogs.write(snap)
            store.fault_point("expire.after_changelog_copy")
        sm.delete(sid)
        store.fault_point("expire.after_snapshot_file")
    if decoupled and expired:
        changelogs.write_latest_hint(expired[-1].id)
        if changelogs.read_hint("EARLIEST") is None:
            changelogs.write_earliest_hint(changelogs.earliest_id() or expired[0].id)
    sm.write_earliest_hint(plan.end)
    if store.schema.core_options.clean_empty_directories:
        for p in {d.rsplit("/", 1)[0] for d in doomed_data}:
            fio.delete_dir_if_empty(p)
