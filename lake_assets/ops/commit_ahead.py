"""The second snapshot of a commit, written ahead on a helper thread (issue 14).

A writer's commit makes two snapshots, as Paimon's ``FileStoreCommitImpl.commit`` does: APPEND
(the new level-0 files), then COMPACT (its inline compaction, deletion vectors included). The
COMPACT snapshot's files depend only on the APPEND snapshot before it, which is known in memory
once its own files are written: `SnapshotAhead` writes them on a thread while the committer puts
the APPEND snapshot (an fsync and a link: the calling thread mostly waits on storage).

They are used only if the APPEND snapshot is, when the COMPACT commit starts, exactly the latest
(same id and uuid): the conflict check then ran against the very snapshot it would run against,
and the fault points the files passed are replayed on the calling thread before the put, in
their order. Otherwise (the APPEND lost a race and was retried, another commit came in between,
anything failed on the thread) they are deleted - nothing references files of a snapshot that
was never put - and the committer writes the COMPACT snapshot the usual way.

The thread starts once its base's files are written (only the base's snapshot file, which it
does not read, is still to come). A run that is dropped is waited for before its files are
deleted; if that wait is interrupted, the thread deletes them itself when it has written the
last. A process that cannot start a thread commits without one.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_assets.ops.commit_conflicts import check_conflicts
from lake_assets.ops.commit_snapshot import write_snapshot_files
from lake_assets.ops.index_commit import IndexChange
from lake_assets.spec.manifest import ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore
    from lake_assets.store.manifest_io import ManifestIO

log = logging.getLogger(__name__)


@dataclass
class PreparedSnapshot:
    """A snapshot whose files are written, the names written and the fault points they passed."""

    snapshot: Snapshot
    written: list[str]
    faults: list[str]


class _AheadRun:
    """One start of the ahead writer: its thread, the files it wrote and its snapshot.

    Each run has its own lists, so a run that is still going can never add to another one's. A
    dropped run's files are deleted by whoever sees it finished last: the dropping caller once
    the thread ended, or the thread itself if it was still writing (the caller's wait for it was
    interrupted) - never before the last file is written, never a file of another run."""

    def __init__(self, mio: ManifestIO, base: Snapshot,
                 prepare: Callable[[Snapshot, list[str], Callable[[str], None]], Snapshot]) -> None:
        self.base = base
        self.written: list[str] = []
        self.faults: list[str] = []
        self.result: Snapshot | None = None
        self._mio = mio
        self._prepare = prepare
        self._lock = threading.Lock()
        self._finished = False
        self._dropped = False
        self.thread = threading.Thread(target=self._main, name="lake-commit-ahead", daemon=True)

    def start(self) -> bool:
        """Start the thread; False (and nothing written) when the process cannot start one."""
        try:
            self.thread.start()
        except RuntimeError:  # "can't start new thread": the committer writes the snapshot itself
            self._finished = True
            return False
        return True

    def _main(self) -> None:
        try:
            self.result = self._prepare(self.base, self.written, self.faults.append)
        except BaseException:
            self.result = None
        finally:
            with self._lock:
                self._finished = True
                dropped = self._dropped
            if dropped:  # dropped while it was writing: its files go now that the last is written
                self._delete()

    def wait(self) -> None:
        self.thread.join()

    def drop(self) -> None:
        """Delete what the run wrote (never put: nothing references it), waiting for it to end."""
        with self._lock:
            self._dropped = True
            finished = self._finished
        if finished:
            self._delete()
        else:
            self.thread.join()  # it deletes them itself as it ends (also if this wait is interrupted)

    def _delete(self) -> None:
        # Best effort: files no snapshot references are orphans at worst (remove_orphan_files),
        # while an error here would replace the commit's own outcome, landed or not.
        try:
            self._mio.delete(self.written)
        except Exception as exc:
            log.warning("Could not delete the %d unused file(s) of a snapshot written ahead, e.g. %s: %r",
                        len(self.written), self.written[:1], exc)


class SnapshotAhead:
    """Writes one COMPACT snapshot's files on top of a snapshot not yet put; see the module."""

    def __init__(
        self,
        store: FileStore,
        mio: ManifestIO,
        prepare: Callable[[Snapshot, list[str], Callable[[str], None]], Snapshot],
    ) -> None:
        """``prepare(base, written, fault)`` writes the snapshot's files on top of ``base``."""
        self._store = store
        self._mio = mio
        self._prepare = prepare
        self._run: _AheadRun | None = None

    @staticmethod
    def for_compact(
        store: FileStore,
        mio: ManifestIO,
        entries: list[ManifestEntry],
        changelog: list[ManifestEntry],
        *,
        identifier: int,
        commit_user: str,
        properties: dict[str, str] | None,
        indexes: Sequence[IndexChange],
    ) -> SnapshotAhead:
        """The ahead writer of a COMPACT snapshot of ``entries`` (checked for conflicts first)."""
        def prepare(base: Snapshot, written: list[str], fault: Callable[[str], None]) -> Snapshot:
            check_conflicts(store, base, entries, CommitKind.COMPACT)
            return write_snapshot_files(store, mio, base, CommitKind.COMPACT, entries, changelog,
                                        identifier=identifier, commit_user=commit_user, properties=properties,
                                        written=written, indexes=indexes, fault=fault)
        return SnapshotAhead(store, mio, prepare)

    def start(self, base: Snapshot) -> None:
        """Start writing on top of ``base``, whose files are written (its snapshot not yet put),
        dropping what an earlier start wrote. Without a thread to run on, nothing is started:
        `take` then finds nothing and the committer writes the snapshot the usual way."""
        self.discard()
        run = _AheadRun(self._mio, base, self._prepare)
        if run.start():
            self._run = run

    def take(self, latest: Snapshot | None) -> PreparedSnapshot | None:
        """The prepared snapshot if it was written on top of ``latest`` exactly; its files are the
        caller's from here on. Else None, and what was written is deleted."""
        run = self._run
        if run is None:
            return None
        run.wait()
        base, result = run.base, run.result
        if result is None or latest is None or latest.id != base.id or latest.uuid != base.uuid:
            self.discard()
            return None
        self._run = None  # the caller's now: a later discard must not delete them
        # stamped as of its put, as the committer stamps a snapshot it writes itself
        snapshot = dataclasses.replace(result, schema_id=self._store.latest_schema_id(),
                                       time_millis=int(time.time() * 1000))
        return PreparedSnapshot(snapshot, run.written, run.faults)

    def discard(self) -> None:
        """Wait for the thread and delete what it wrote (never put: nothing references it)."""
        run, self._run = self._run, None
        if run is not None:
            run.drop()


__all__ = ["PreparedSnapshot", "SnapshotAhead"]
