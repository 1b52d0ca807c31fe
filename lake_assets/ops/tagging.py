"""Tags and rollback: tag a snapshot (with the expiry handshake), remove a tag, roll back."""

from __future__ import annotations

import contextlib

from lake_assets.errors import InvalidArgumentError, SnapshotNotFoundError
from lake_assets.spec.snapshot import Snapshot, Tag
from lake_assets.store.file_store import FileStore
from lake_assets.store.read_once import reads_once
from lake_assets.store.snapshot_identity import discarded_by_rollback


@reads_once
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


@reads_once
def rollback_to(store: FileStore, *, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
    """Make a snapshot (or a tag's snapshot) the latest again, as Paimon's ``rollbackTo`` with its
    ``RollbackHelper.cleanLargerThan``: newer snapshots, the long-lived changelogs and the tags of
    newer ids are removed (their files stay for `remove_orphan_files`).

    The next commits reuse the removed ids, so anything left naming them would name another
    history: a newer tag would roll "forward" onto a snapshot it never tagged (or leave a gap in
    the snapshot ids), a long-lived changelog would be streamed as the change of a snapshot not
    yet committed. Unlike Java, which deletes the snapshots first, the newer tags and changelogs
    go first: a crash part way leaves the table at its old latest snapshot, or at one between it
    and the target, never with a tag beyond the latest; running the rollback again finishes it.
    A tag of a discarded history (left by Java's rollback cut short, or by an older lake_assets,
    which kept newer tags: `discarded_by_rollback`) is refused as a rollback target:
    `InvalidArgumentError`, nothing changed. So is a rollback that would delete the tag a branch
    was created from (Paimon's does, and its expiry then deletes files the branch reads: §9.5)."""
    sm = store.snapshot_manager
    tags = store.tag_manager()
    if tag is not None:
        target = tags.get(tag).snapshot
        if discarded_by_rollback(store, target):
            raise InvalidArgumentError(
                f"Cannot roll back {store.name} to tag {tag!r}: its snapshot {target.id} belongs to a history an "
                f"earlier rollback discarded (snapshot ids from there on name other commits now); the tag still "
                "reads as it did: read it and overwrite the table with its rows to restore them")
        if sm.try_snapshot(target.id) is None:
            # the tagged snapshot was expired: bring its file back from the tag
            sm.file_io.try_create(store.paths.snapshot_file(target.id), target.to_json().encode())
    else:
        assert snapshot_id is not None  # the caller passes exactly one
        target = sm.snapshot(snapshot_id)
    newer = {name: held for name, held in tags.tags().items() if held.snapshot.id > target.id}
    store.branch_holders()  # a branch with damaged metadata stops it before anything is deleted, as expiry
    _refuse_deleting_branch_bases(store, target, newer)
    for name in newer:
        tags.delete(name)
        store.fault_point("rollback.after_tag_delete")
    changelogs = store.changelog_manager()
    newer_changelogs = [cid for cid in changelogs.ids() if cid > target.id]
    for cid in reversed(newer_changelogs):
        changelogs.delete(cid)
    if newer_changelogs:
        older = [cid for cid in changelogs.ids() if cid <= target.id]
        # -1 when none is left, as Java: its reader trusts a LATEST hint whose successor is missing
        changelogs.write_latest_hint(older[-1] if older else -1)
    latest = sm.latest_id() or target.id
    # newest first, so a crash leaves a contiguous range ending at a valid snapshot (a re-run finishes)
    for sid in range(latest, target.id, -1):
        sm.delete(sid)
        store.fault_point("rollback.after_snapshot_delete")
    sm.write_latest_hint(target.id)
    earliest_hint = sm.read_hint("EARLIEST")
    if earliest_hint is not None and earliest_hint > target.id:
        sm.write_earliest_hint(target.id)
    return target




def _refuse_deleting_branch_bases(store: FileStore, target: Snapshot, newer: dict[str, Tag]) -> None:
    """`InvalidArgumentError` (nothing changed) when one of the ``newer`` tags a rollback to
    ``target`` deletes is the tag a branch was created from: other engines' expiry of the main
    branch keeps the branch's files only through it (docs/format.md §9.5)."""
    for name, tag in newer.items():
        based = store.branches_based_on(tag.snapshot)
        if based:
            raise InvalidArgumentError(
                f"Cannot roll back {store.name} to snapshot {target.id}: it deletes tag {name!r} (snapshot "
                f"{tag.snapshot.id}), and branch {', '.join(repr(b) for b in based)} was created from it; Paimon's "
                "expiry of the main branch keeps a branch's files only through that tag. Delete the branch first, "
                "or roll back with rollback_to_as_latest, which keeps every tag; nothing was changed")
