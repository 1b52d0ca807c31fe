"""Tags and rollback: tag a snapshot (with the expiry handshake), remove a tag, roll back."""

from __future__ import annotations

import contextlib

from lake_assets.errors import SnapshotNotFoundError
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
    """Make a snapshot (or a tag's snapshot) the latest again; newer snapshots are removed."""
    sm = store.snapshot_manager
    if tag is not None:
        target = store.tag_manager().get(tag).snapshot
        if not sm.exists(target.id):
            # the tagged snapshot was expired: bring its file back from the tag
            sm.file_io.try_create(store.paths.snapshot_file(target.id), target.to_json().encode())
    else:
        assert snapshot_id is not None  # the caller passes exactly one
        target = sm.snapshot(snapshot_id)
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
