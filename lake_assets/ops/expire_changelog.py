"""Expiry of long-lived changelogs (``changelog/changelog-<id>``), per the changelog retention.

Snapshot expiry (`lake_assets.ops.expire`) leaves these behind when the changelog lifecycle is
decoupled; this removes them with the same protections for tags and consumers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

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
from lake_assets.ops.expire_plan import ExpirePlan, ExpireResult, plan_expire
from lake_assets.store.changelog_manager import snapshot_or_changelog
from lake_assets.store.read_once import reads_once
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


@reads_once
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
    if earliest is None:  # no long-lived changelog (most tables): the snapshot hints need no reading
        return result
    sm = store.snapshot_manager
    latest_snapshot = sm.latest_id()
    earliest_snapshot = sm.earliest_id()
    if latest_snapshot is None or earliest_snapshot is None:
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
    protection = Protection(store, plan.end)
    doomed_changelog = changelog_files_of(store, expired)
    doomed_data: list[str] = []
    if opts.changelog_producer == "none":
        # snapshot expiration skipped the writer-added files that later snapshots deleted
        deleting = [
            s for s in (snapshot_or_changelog(sm, changelogs, i) for i in range(plan.begin + 1, plan.end + 1))
            if s is not None
        ]
        paths = files_deleted_by(store, deleting, lambda e: not appended_by_writer(e))
        restored = Restorations(store, plan.end)  # rollbacks as latest re-add files by name
        doomed_data = [p for p in paths if p not in protection.files and p not in restored.files]
    # Without the first retained id's lists, shared manifests cannot be told apart: keep them all.
    # A long-lived changelog's base/delta lists may be gone, so they alone do not name what the
    # retained snapshots share with expired ones: the earliest snapshot's lists do.
    earliest_id = sm.earliest_id()
    earliest = sm.try_snapshot(earliest_id) if earliest_id is not None else None
    doomed_manifests = (
        [] if end is None
        else unused_manifests(
            store, expired, lists_of,
            protection.manifests | manifests_kept_by(store, end, lists_may_be_gone=not sm.exists(end.id))
            | (manifests_kept_by(store, earliest) if earliest is not None else set()),
        )
    )
    # what a branch's snapshot, tag or changelog names stays (`Protection`)
    doomed_data, doomed_changelog, doomed_manifests = (
        protection.unused_by_branches(group) for group in (doomed_data, doomed_changelog, doomed_manifests))
    result.expired_changelogs = list(plan.snapshot_ids)
    result.deleted_data_files = [*result.deleted_data_files, *doomed_data]
    result.deleted_changelog_files = [*result.deleted_changelog_files, *doomed_changelog]
    result.deleted_manifests = [*result.deleted_manifests, *doomed_manifests]
    if dry_run:
        return
    fio = store.file_io
    delete = delete_files or fio.delete_many
    manifest_paths = [store.paths.manifest_file(n) for n in doomed_manifests]
    ensure_inside(store, doomed_data, doomed_changelog, manifest_paths)
    result.deletion_started = True
    delete(doomed_data)
    delete(doomed_changelog)
    store.fault_point("expire_changelog.after_files")
    delete(manifest_paths)
    store.fault_point("expire_changelog.after_manifests")
    for cid in plan.snapshot_ids:
        changelogs.delete(cid)
    changelogs.write_earliest_hint(plan.end)
