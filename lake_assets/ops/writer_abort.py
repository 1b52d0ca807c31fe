"""What a table writer deletes when it is aborted or closed (`WriterCleanup`, which `TableWriter`
extends), and which of its commit messages landed: what `TableWriter.abort` must keep.

Paimon's ``TableWrite.abort`` deletes the files of the messages it is given without looking.
A caller that aborts after a commit whose outcome it does not know (a timeout, a
`CommitStateUnknownError`) would then delete files that a landed snapshot references. So abort
looks first. A message landed, and all its files are kept, when a snapshot added one of its files
(its data or changelog files, or an index file): a landed commit lands a message whole, and a
compaction that did not land with it was cleaned up by its committer (or is left to orphan
removal). The other messages' files are deleted. How it looks depends on whose the message is:

* This writer's own messages (every file of it came from this writer's `prepare_commit`): at the
  snapshots committed after the writer's base (the snapshot it read its state from before it
  wrote anything: none of its files can have landed in or before it). When that look is
  impossible - a snapshot after the base has expired, so it may have added the files and been
  compacted away since, or metadata cannot be read - nothing is deleted.
* Any other message (a Spark driver aborting its tasks' messages, a job aborting a crashed
  attempt's, a message read back from JSON): its writer's base is unknown and may be older than
  this writer's, so a snapshot at or before this writer's base may have landed it. Its files are
  looked up in everything retained: a file a retained snapshot (its whole file list and its
  delta), tag or long-lived changelog names is never deleted. That is decided even when older
  snapshots expired: a file an expired snapshot added is still named by the earliest retained
  snapshot while it is live, by the retained snapshot whose delta removed it, or by nothing once
  expiry has (or would have) deleted it. Metadata that cannot be read decides nothing.

When it cannot be decided, `CommitStateUnknownError` says so, nothing is deleted, and orphan
removal collects the files once no snapshot references them. A commit still in flight for the
messages must have ended before abort looks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence, Set
from typing import TYPE_CHECKING

from lake_assets.errors import CommitStateUnknownError, LakeError
from lake_assets.ops.commit_cleanup import written_paths
from lake_assets.ops.commit_message import validate_messages
from lake_assets.spec.manifest import FileKind

if TYPE_CHECKING:
    from lake_assets.ops.bucket_router import BucketRouter
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.ops.kept_pool import KeptThreadPool
    from lake_assets.ops.prepared_names import PreparedNames
    from lake_assets.ops.write_spill import WriteBufferSpill
    from lake_assets.ops.writer_state import BucketBuffer, BucketKey
    from lake_assets.store.file_store import FileStore

# the writer's logger: its warnings keep the name they had before this part moved here
log = logging.getLogger("lake_assets.ops.write")

_LEAVE_TO_ORPHANS = ("nothing was deleted: leave the files to orphan removal (remove_orphan_files deletes them "
                     "once no snapshot references them), or retry the commit with the same commit user and "
                     "identifier to settle it")


def message_files(message: CommitMessage) -> set[str]:
    """Names of the files the message's writer created (what an abort would delete)."""
    return {f.file_name for f in message.all_written_files()} | {e.file_name for e in message.index_after}


def landed_messages(store: FileStore, messages: Sequence[CommitMessage], since: int | None) -> list[bool]:
    """For each message, whether a snapshot after ``since`` (None: every snapshot) added one of its
    files. Raises `CommitStateUnknownError` when one of those snapshots expired or cannot be read."""
    return landed_names(store, [message_files(m) for m in messages], since)[0]


def landed_names(store: FileStore, names: Sequence[Set[str]], since: int | None) -> tuple[list[bool], int | None]:
    """`landed_messages` of the messages of file names ``names``, and the latest snapshot id looked
    at (None: the table has none): none of the others landed up to it."""
    landed = [False] * len(names)
    open_ = {i for i, n in enumerate(names) if n}  # a message of no files has nothing to delete
    sm = store.snapshot_manager
    try:
        latest = sm.latest_id()
    except (OSError, LakeError) as exc:
        raise CommitStateUnknownError(
            f"Cannot abort a write to {store.name}: whether its messages landed cannot be known (reading the "
            f"latest snapshot failed: {exc}); {_LEAVE_TO_ORPHANS}") from exc
    if latest is None or not open_:
        return landed, latest
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
    return landed, latest


def referenced_messages(store: FileStore, messages: Sequence[CommitMessage]) -> list[bool]:
    """For each message, whether a retained snapshot, tag or long-lived changelog names one of its
    files (see the module docstring: decided whatever expired). Raises `CommitStateUnknownError`
    when the metadata cannot be read."""
    from lake_assets.ops.orphans import referenced_files  # orphans imports the scan stack

    if not messages:
        return []
    try:
        live = referenced_files(store)
    except (OSError, LakeError) as exc:
        raise CommitStateUnknownError(
            f"Cannot abort a write to {store.name}: whether the messages of another writer landed cannot be "
            f"known (reading the retained snapshots, tags and changelogs failed: {exc}); {_LEAVE_TO_ORPHANS}"
        ) from exc
    return [not live.isdisjoint(written_paths(store, [m])) for m in messages]


def split_landed(store: FileStore, messages: Iterable[CommitMessage], since: int | None,
                 own: Set[str] = frozenset()) -> tuple[list[CommitMessage], list[CommitMessage]]:
    """A writer's abort of ``messages``: validated (`InvalidCommitMessageError`, nothing deleted),
    then (landed, not landed): a message all of whose files are in ``own`` (the names the writer's
    `prepare_commit` returned) by `landed_messages` after ``since``, its base; any other by
    `referenced_messages`. Logs a warning naming what is kept."""
    messages = list(messages)
    if not messages:
        return [], []
    validate_messages(store, messages, "abort a write to")
    mine = [i for i, m in enumerate(messages) if message_files(m) <= own]
    others = [i for i, m in enumerate(messages) if not message_files(m) <= own]
    found = dict(zip(mine, landed_messages(store, [messages[i] for i in mine], since) if mine else [],
                     strict=True))
    found.update(zip(others, referenced_messages(store, [messages[i] for i in others]), strict=True))
    landed = [m for i, m in enumerate(messages) if found[i]]
    if landed:
        log.warning("Not deleting the files of %d message(s) of %s given to abort: a snapshot committed "
                    "them (e.g. %s)", len(landed), store.name, written_paths(store, landed)[0])
    return landed, [m for i, m in enumerate(messages) if not found[i]]


class WriterCleanup:
    """The end of a `TableWriter`'s rounds: `abort` (files written but not committed) and `close`."""

    store: FileStore
    _router: BucketRouter
    _buffers: dict[BucketKey, BucketBuffer]
    _spill: WriteBufferSpill | None
    _threads: KeptThreadPool | None
    _closed: bool
    # names of the files this writer's `prepare_commit` returned, not seen landed: its own messages
    prepared: PreparedNames

    def abort(self, messages: Iterable[CommitMessage] = ()) -> list[CommitMessage]:
        """Delete files written but not committed: those written since the last `prepare_commit`
        (buffered rows are dropped) and those of ``messages`` that did not land.

        Unlike Paimon's abort, it looks first (`split_landed`): a message of this writer that a
        snapshot committed after the writer's base added a file of - an abort after a commit whose
        outcome was unknown, that landed - keeps its files, as does a message of another writer
        (its base may be older) one of whose files a retained snapshot, tag or changelog names.
        Returns those landed messages (and logs a warning); the files of the others are deleted.
        When the look is impossible (a snapshot after the base expired, metadata unreadable) it
        raises `CommitStateUnknownError` and deletes nothing. A commit that may still be in flight
        for the messages must have ended first.

        ``messages`` are validated first, as `TableCommitter.abort` does: a message that is not one,
        or names a file outside the table, raises `InvalidCommitMessageError` and nothing is deleted."""
        base = self._router.first_base_id if self._router.based else None
        landed, messages = split_landed(self.store, messages, self.prepared.since(base), self.prepared.names)
        # HASH and DV index files too; their directories proven inside the table before anything goes
        doomed = self.store.paths.ensure_inside(written_paths(self.store, messages),
                                                resolve_links=self.store.file_io.has_symlinks)
        paths = self._unprepared_files()
        self._drop_buffered()
        self.store.file_io.delete_many(paths + doomed)
        # settled: the landed ones stay landed, the deleted ones can never land (`PreparedNames`)
        self.prepared.forget([*landed, *messages])
        return landed

    def _unprepared_files(self) -> list[str]:
        """The files written since the last `prepare_commit` (level-0 flushes of a full buffer),
        forgotten: no commit message names them, so no commit can have landed them."""
        paths = []
        for buf in self._buffers.values():
            if buf.writer is not None:
                paths += [f"{buf.writer.bucket_dir}/{name}" for f in (*buf.new_files, *buf.new_changelog)
                          for name in (f.file_name, *f.extra_files)]
            buf.new_files = []
            buf.new_changelog = []
        return paths

    def _drop_buffered(self) -> None:
        """Forget every bucket's buffered rows and spilled runs, and remove the local spill files."""
        for buf in self._buffers.values():
            buf.tables.clear()
            buf.nbytes = 0
            buf.runs = []
        self._router.buffered_bytes = 0
        if self._spill is not None:
            self._spill.cleanup()

    def close(self) -> None:
        """Drop buffered rows and delete the files written since the last `prepare_commit` (as
        Paimon's writers do when closed: no message names them); files already returned by
        `prepare_commit` are left to the committer (`TableCommitter.abort` deletes a round never
        committed), as are the files of a process killed mid-commit (orphan removal's)."""
        self.store.file_io.delete_many(self._unprepared_files())
        self._drop_buffered()
        if self._router.cross_router is not None:  # its spill files and lease; once (a refusal closes first)
            self._router.cross_router.close()
            self._router.cross_router = None
        if self._threads is not None:
            self._threads.shutdown()
            self._threads = None
        self._closed = True
