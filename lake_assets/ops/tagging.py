"""Tags and rollback: tag a snapshot (with the expiry handshake), remove a tag, roll back."""

from __future__ import annotations

import contextlib

from lake_assets.errors import InvalidArgumentError, SnapshotNotFoundError
from lake_assets.ops.row_tracking import row_tracking_enabled
from lake_assets.spec.snapshot import Snapshot, Tag
from lake_assets.store.file_store import FileStore


def create_tag(store: FileStore, name: str, snap: Snapshot | None, time_retained_s: float | None = None) -> Tag:
    """Tag ``snap``; `SnapshotNotFoundError` (and no tag left) when an expiration is removing, or
    has removed, the snapshot; `AlreadyExistsError` when another tag has the name."""
    if snap is None:
        raise SnapshotNotFoundError(f"Cannot tag {store.name}: the table has no snapshot yet")
    tags = store.tag_manager()
    tag = tags.create(name, snap, time_retained_s)
    try:
        # The tag is published; now make sure no expiration is removing the snapshot's files
        # (the expiry handshake in SnapshotManager). If one is, or we cannot tell, withdraw it.
        store.snapshot_manager.check_retained(snap.id, f"tag snapshot {snap.id} as {name!r}")
    except BaseException:
        with contextlib.suppress(Exception):
            tags.delete(name)
        raise
    store.fault_point("tag.after_create")
    return tag


def rollback_to(store: FileStore, *, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
    """Make a snapshot (or a tag's snapshot) the latest again; newer snapshots are removed.

    On a row-tracking table the rollback moves ``nextRowId`` back to the target's, so the next
    commit gives out the ids of the removed snapshots' rows again. Paimon's ``rollback_to`` deletes
    the tags newer than its target too (``RollbackHelper.cleanTags``), so no retained tag holds
    such an id; lake_assets keeps tags, and refuses the rollback (`InvalidArgumentError`, nothing
    changed) while a newer tag holds rows with ids from the target's ``nextRowId`` on."""
    sm = store.snapshot_manager
    if tag is not None:
        target = store.tag_manager().get(tag).snapshot
    else:
        assert snapshot_id is not None  # the caller passes exactly one
        target = sm.snapshot(snapshot_id)
    if row_tracking_enabled(store.schema.options):
        _check_no_newer_tag_holds_ids(store, target)
    if tag is not None and not sm.exists(target.id):
        # the tagged snapshot was expired: bring its file back from the tag
        sm.file_io.try_create(store.paths.snapshot_file(target.id), target.to_json().encode())
    latest = sm.latest_id() or target.id
    # newest first, so a crash leaves a contiguous range ending at a valid snapshot
    for sid in range(latest, target.id, -1):
        store.file_io.delete(store.paths.snapshot_file(sid))
        store.fault_point("rollback.after_snapshot_delete")
    sm.write_latest_hint(target.id)
    earliest_hint = sm.read_hint("EARLIEST")
    if earliest_hint is not None and earliest_hint > target.id:
        sm.write_earliest_hint(target.id)
    return target


def _check_no_newer_tag_holds_ids(store: FileStore, target: Snapshot) -> None:
    """Refuse a rollback of a row-tracking table to ``target`` while a tag of a newer snapshot
    holds row ids from ``target``'s ``nextRowId`` on: commits after the rollback would give those
    ids to other rows, and reads of the tag and of the table would show two rows under one id."""
    start = target.next_row_id or 0
    holding = sorted((t.snapshot.id, name, t.snapshot.next_row_id) for name, t in store.tag_manager().tags().items()
                     if t.snapshot.id > target.id and (t.snapshot.next_row_id or 0) > start)
    if holding:
        tags = ", ".join(f"{name!r} (snapshot {sid}, row ids up to {(nxt or 0) - 1})" for sid, name, nxt in holding)
        raise InvalidArgumentError(
            f"Cannot roll {store.name} back to snapshot {target.id}: it is a row-tracking table, and the rollback "
            f"would move nextRowId back to {start}, so new rows would get ids that tags {tags} hold for other "
            "rows. Delete those tags first (Paimon's rollback_to deletes tags newer than its target)")
