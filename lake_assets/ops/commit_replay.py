"""Replay detection of the committer: was this commit already landed?

A writer that restarts from a checkpoint hands the committer messages it may have committed
before. Three checks make that a no-op instead of a second commit of the same files (Paimon's
``filterCommitted``, and what it cannot see once snapshots expire):

* the commit identifier: a retained snapshot of the same commit user with this identifier or a
  later one (`CommitReplay.is_committed`);
* files gone: a message adding a file that is no longer in storage was committed, compacted away
  and expired (`check_files_exist` raises `CommitFileMissingError`);
* files referenced although no snapshot of the commit user is retained: the snapshot that
  committed them expired, a retained snapshot or tag still holds them
  (`CommitReplay.landed_before_expiry`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_assets.errors import CommitFileMissingError
from lake_assets.ops.commit_message import CommitMessage

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

# The committer's logger: its warnings keep the name they had before this module was split off.
log = logging.getLogger("lake_assets.ops.commit")

# Files written up to this long after the earliest retained snapshot still get the (costly) look
# for an expired commit of theirs: clocks of writers and committers differ.
_REPLAY_MARGIN_MS = 15 * 60 * 1000


class CommitReplay:
    """What one commit user has committed to a table, looked up in its snapshots and files."""

    def __init__(self, store: FileStore, commit_user: str) -> None:
        self.store = store
        self.commit_user = commit_user
        # (latest snapshot id scanned, the highest identifier found up to it): later lookups scan
        # only the snapshots committed since.
        self._checked_upto: tuple[int, int | None] | None = None

    def last_committed_identifier(self) -> int | None:
        """The highest commit identifier this commit user has committed, scanning back from latest."""
        sm = self.store.snapshot_manager
        latest = sm.latest_id()
        if latest is None:
            return None
        earliest = sm.earliest_id() or 1
        found: int | None = None
        stop = earliest
        if self._checked_upto is not None:
            # Snapshots up to this id were scanned already: only look at the new ones.
            stop = self._checked_upto[0] + 1
            found = self._checked_upto[1]
        for sid in range(latest, stop - 1, -1):
            snap = sm.try_snapshot(sid)
            if snap is None:
                continue  # expired while we were looking
            if snap.commit_user == self.commit_user:
                found = snap.commit_identifier if found is None else max(found, snap.commit_identifier)
                break
        self._checked_upto = (latest, found)
        return found

    def is_committed(self, commit_identifier: int) -> bool:
        """Whether this commit user already committed ``commit_identifier`` (or a later one)."""
        last = self.last_committed_identifier()
        return last is not None and last >= commit_identifier

    def landed_before_expiry(self, messages: Sequence[CommitMessage]) -> bool:
        """Whether these messages were committed by a snapshot that has since expired.

        Identifier dedup only sees retained snapshots. When none of this commit user is retained
        but some snapshots expired, a replayed checkpoint whose files still exist (a retained
        snapshot or tag still holds them) would be committed twice. Files written before the
        earliest retained snapshot are the only candidates (a replay's files are always older
        than it); for those, look for them in what the table references.
        """
        from lake_assets.formats.data_file import local_now_ms
        from lake_assets.ops.orphans import referenced_files  # orphans imports the scan stack

        sm = self.store.snapshot_manager
        earliest_id = sm.earliest_id()
        if earliest_id is None or earliest_id <= 1 or self.last_committed_identifier() is not None:
            return False
        earliest = sm.try_snapshot(earliest_id)
        files = [
            (m, f) for m in messages
            for f in (*m.new_files, *m.new_changelog, *m.compact_after, *m.compact_changelog)
        ]
        if earliest is None or not files:
            return bool(files)  # the earliest expired while we looked: be safe, look anyway
        # creation times are the writer's local wall clock as if UTC; compare on that clock, with
        # a margin for writers in other time zones or with skewed clocks (a wider net only costs a look)
        local_offset_ms = local_now_ms() - int(time.time() * 1000)
        cutoff = earliest.time_millis + local_offset_ms + _REPLAY_MARGIN_MS
        if all(f.creation_time_ms is not None and f.creation_time_ms >= cutoff for _, f in files):
            return False
        live = referenced_files(self.store)
        landed = [f.file_name for m, f in files if self.store.data_file_path(m.partition, m.bucket, f) in live]
        if landed:
            log.warning("Not committing to %s: file %s is already referenced by the table (commit user %s "
                        "committed these messages in a snapshot that has since expired)",
                        self.store.name, landed[0], self.commit_user)
        return bool(landed)


def check_files_exist(store: FileStore, messages: Sequence[CommitMessage]) -> None:
    """Refuse messages adding a file that is gone: after its snapshot expired, a replayed
    checkpoint is no longer recognised as committed, and committing it again would name files
    that compaction replaced and expiry deleted - a snapshot that cannot be read.

    Raises `CommitFileMissingError` (nothing committed, nothing deleted)."""
    added = [
        store.data_file_path(m.partition, m.bucket, f)
        for m in messages
        for f in (*m.new_files, *m.new_changelog, *m.compact_after, *m.compact_changelog)
    ] + [store.paths.index_file(e.file_name) for m in messages for e in m.index_after]
    missing = store.file_io.missing(added)
    if missing:
        name = missing[0].rsplit("/", 1)[-1]
        raise CommitFileMissingError(
            f"Cannot commit to {store.name}: file {name} was already deleted (the checkpoint was "
            f"probably committed before and its snapshot expired); {len(missing)} file(s) missing, "
            "nothing committed, nothing deleted"
        )
