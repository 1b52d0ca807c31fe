"""Which of a writer's commit messages landed: what `TableWriter.abort` must keep.

Paimon's ``TableWrite.abort`` deletes the files of the messages it is given without looking.
A caller that aborts after a commit whose outcome it does not know (a timeout, a
`CommitStateUnknownError`) would then delete files that a landed snapshot references. So abort
looks first, at the snapshots committed after the writer's base (the snapshot it read its state
from before it wrote anything: none of its files can have landed in or before it). A message one
of whose files such a snapshot added (its data or changelog files, or an index file) landed, and
all its files are kept: a landed commit lands a message whole, and a compaction that did not land
with it was cleaned up by its committer (or is left to orphan removal). The other messages'
files are deleted.

When the look is impossible - a snapshot after the base has expired, so it may have added the
files and been compacted away since, or metadata cannot be read - nothing is deleted:
`CommitStateUnknownError` says so, and orphan removal collects the files once no snapshot
references them. A commit still in flight for the messages must have ended before abort looks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_assets.errors import CommitStateUnknownError, LakeError
from lake_assets.spec.manifest import FileKind

if TYPE_CHECKING:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.store.file_store import FileStore

_LEAVE_TO_ORPHANS = ("nothing was deleted: leave the files to orphan removal (remove_orphan_files deletes them "
                     "once no snapshot references them), or retry the commit with the same commit user and "
                     "identifier to settle it")


def _message_files(message: CommitMessage) -> set[str]:
    """Names of the files the message's writer created (what an abort would delete)."""
    return {f.file_name for f in message.all_written_files()} | {e.file_name for e in message.index_after}


def landed_messages(store: FileStore, messages: Sequence[CommitMessage], since: int | None) -> list[bool]:
    """For each message, whether a snapshot after ``since`` (None: every snapshot) added one of its
    files. Raises `CommitStateUnknownError` when one of those snapshots expired or cannot be read."""
    names = [_message_files(m) for m in messages]
    landed = [False] * len(messages)
    open_ = {i for i, n in enumerate(names) if n}  # a message of no files has nothing to delete
    sm = store.snapshot_manager
    try:
        latest = sm.latest_id()
    except (OSError, LakeError) as exc:
        raise CommitStateUnknownError(
            f"Cannot abort a write to {store.name}: whether its messages landed cannot be known (reading the "
            f"latest snapshot failed: {exc}); {_LEAVE_TO_ORPHANS}") from exc
    if latest is None or not open_:
        return landed
    scan = store.file_store_scan()
    first = 1 if since is None else since + 1
    for sid in range(first, latest + 1):
        try:
            snap = sm.try_snapshot(sid)
            if snap is None:
                raise CommitStateUnknownError(
                    f"Cannot abort a write to {store.name}: snapshot {sid}, committed after the writer's base "
                    f"(snapshot {since}), has expired, so whether the messages landed in it cannot be known; "
                    f"{_LEAVE_TO_ORPHANS}")
            added = {e.file.file_name for e in scan.delta_entries(snap) if e.kind == FileKind.ADD}
            added |= {e.file.file_name for e in scan.changelog_entries(snap)}
            if snap.index_manifest:  # the index files every snapshot holds: new ones among them
                added |= {e.file_name for e in store.index_entries(snap.index_manifest)}
        except (OSError, LakeError) as exc:
            if isinstance(exc, CommitStateUnknownError):
                raise
            raise CommitStateUnknownError(
                f"Cannot abort a write to {store.name}: whether its messages landed cannot be known (reading "
                f"snapshot {sid} failed: {exc}); {_LEAVE_TO_ORPHANS}") from exc
        for i in [i for i in open_ if not names[i].isdisjoint(added)]:
            landed[i] = True
            open_.discard(i)
        if not open_:
            break
    return landed
