"""Whether a snapshot record is the commit its id names today.

Snapshot ids are reused after a rollback (the next commits take the discarded ones' ids), so a
record held elsewhere (a tag's copy, a reader's position) is told apart by its identity, not its
id. Kept apart from the tag verbs (`ops/tagging.py`) because stream workers need it too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.spec.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


def discarded_by_rollback(store: FileStore, held: Snapshot) -> bool:
    """Whether ``held``, a tag's snapshot, belongs to a history a rollback discarded: the snapshot
    now at its id is another commit, or its id is beyond the latest. Such a tag still reads as it
    did (it holds its snapshot), but nothing may take its id for a position in today's history.
    An expired id (below the earliest) cannot be told: taken as this history."""
    sm = store.snapshot_manager
    current = sm.try_snapshot(held.id)
    if current is not None:
        return not same_snapshot(current, held)
    latest_id = sm.latest_id()
    return latest_id is not None and held.id > latest_id


def same_snapshot(a: Snapshot, b: Snapshot) -> bool:
    """Whether two snapshot records of one id are the same commit (manifest list names are unique)."""
    return (a.base_manifest_list, a.delta_manifest_list, a.commit_user, a.commit_identifier) == (
        b.base_manifest_list, b.delta_manifest_list, b.commit_user, b.commit_identifier)
