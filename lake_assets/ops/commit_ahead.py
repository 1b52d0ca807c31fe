"""The second snapshot of a commit, written ahead on a helper thread (issue 14).

A writer's commit makes two snapshots, as Paimon's ``FileStoreCommitImpl.commit`` does: APPEND
(the new level-0 files), then COMPACT (its inline compaction, deletion vectors included).
`SnapshotAhead` writes the COMPACT snapshot's files on a thread while the committer writes and
puts the APPEND snapshot:

- from the start of the APPEND's attempt, what depends only on the COMPACT's own entries and on
  the snapshot the APPEND follows: its index manifest (the APPEND changes no index unless it
  carries HASH files; then this waits for the APPEND), its manifests and their lists;
- once the APPEND snapshot's files are written (`follow`; in memory, not yet put): the conflict
  check against it, the base list (the APPEND's manifests), the snapshot record, and its put
  prepared (`FileIO.prepare_create`: on local disk the fsync'd temporary file), so that the
  COMPACT's own put is a link.

They are used only if the APPEND snapshot is, when the COMPACT commit starts, exactly the latest
(same id and uuid): the conflict check then ran against the very snapshot it would run against,
and the fault points the files passed are replayed on the calling thread before the put, in
Paimon's order. Otherwise (the APPEND lost a race and was retried, another commit came in
between, anything failed on the thread) they are deleted - nothing references files of a
snapshot that was never put - and the committer writes the COMPACT snapshot the usual way.

Each start is a run of its own (`AheadRun`: its hand-over, files and result), so a run still
going never adds to another's lists. Runs go to the process's kept threads (`ops.kept_threads`:
starting a thread per commit put its start-up on the commit's critical path). A dropped run is
waited for before its files are deleted; if that wait is interrupted, the thread deletes them
itself once it has written the last. A process that cannot start a thread commits without one.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_assets.errors import CommitConflictError
from lake_assets.io.file_io import PreparedCreate
from lake_assets.ops.commit_conflicts import check_conflicts
from lake_assets.ops.commit_snapshot import (
    CHANGELOG_LIST_STEP,
    MANIFEST_STEPS,
    snapshot_record,
    write_base_list,
    write_delta_files,
)
from lake_assets.ops.index_commit import IndexChange, next_index_manifest
from lake_assets.ops.kept_threads import run_on_kept_thread
from lake_assets.spec.manifest import ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore
    from lake_assets.store.manifest_io import ManifestIO

log = logging.getLogger(__name__)

AHEAD_THREAD_NAME = "lake-commit-ahead"  # the name (-<n>) of a kept thread while it runs an ahead run


@dataclass
class PreparedSnapshot:
    """A snapshot whose files are written, the names written, the fault points they passed, and
    its put prepared (None: put it the usual way)."""

    snapshot: Snapshot
    written: list[str]
    faults: list[str]
    put: PreparedCreate | None = None


class _Handoff:
    """The APPEND snapshot, handed from the committer to the helper thread once (None: abandoned)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._value: Snapshot | None = None

    def give(self, value: Snapshot | None) -> None:
        if not self._event.is_set():
            self._value = value
            self._event.set()

    def wait(self) -> Snapshot | None:
        self._event.wait()
        return self._value


class AheadRun:
    """One start of the ahead writer: the APPEND snapshot handed to it, the files it wrote, the
    fault points they passed and its result; it runs on a helper thread (`start`).

    A dropped run's files are deleted by whoever sees it finished last: the dropping caller once
    the thread ended, or the thread itself if it was still writing (the caller's wait for it was
    interrupted) - never before the last file is written, never a file of another run."""

    def __init__(self, mio: ManifestIO, work: Callable[[AheadRun], PreparedSnapshot | None]) -> None:
        self.written: list[str] = []
        self.faults: list[str] = []
        self.result: PreparedSnapshot | None = None
        self.appended: Snapshot | None = None  # the APPEND snapshot handed over (`follow`)
        self._mio = mio
        self._work = work
        self._handoff = _Handoff()
        self._lock = threading.Lock()
        self._finished = False
        self._dropped = False
        self._ended = threading.Event()  # set as `_main` returns, its files deleted if it was dropped

    def start(self) -> bool:
        """Run on a kept thread (`ops.kept_threads`: one idle since an earlier job, else a new
        one); False (and nothing written) when the process cannot start one."""
        try:
            run_on_kept_thread(self._main, AHEAD_THREAD_NAME)
        except RuntimeError:  # "can't start new thread": the committer writes the snapshot itself
            self._finished = True
            self._ended.set()
            return False
        return True

    def follow(self, appended: Snapshot) -> None:
        self.appended = appended
        self._handoff.give(appended)

    def wait_appended(self) -> Snapshot | None:
        """On the thread: the APPEND snapshot once its files are written; None if it never will be."""
        return self._handoff.wait()

    def _main(self) -> None:
        try:
            self.result = self._work(self)
        except BaseException:
            self.result = None
        finally:
            with self._lock:
                self._finished = True
                dropped = self._dropped
            if dropped:  # dropped while it was writing: its files go now that the last is written
                self._delete()
            self._ended.set()

    def wait(self) -> None:
        self._handoff.give(None)  # never followed (the APPEND attempt failed): stop waiting
        self._wait_ended()

    def _wait_ended(self) -> None:
        """Until `_main` has returned (an interrupt may end the wait first: see `drop`)."""
        self._ended.wait()

    def drop(self) -> None:
        """Delete what the run wrote (never put: nothing references it), waiting for it to end."""
        self._handoff.give(None)
        with self._lock:
            self._dropped = True
            finished = self._finished
        if finished:
            self._delete()
        else:
            self._wait_ended()  # it deletes them itself as it ends (also if this wait is interrupted)

    def _delete(self) -> None:
        # Best effort: files no snapshot references are orphans at worst (remove_orphan_files),
        # while an error here would replace the commit's own outcome, landed or not.
        try:
            if self.result is not None and self.result.put is not None:
                self.result.put.discard()
            if self.written:
                self._mio.delete(self.written)
        except Exception as exc:
            log.warning("Could not delete the %d unused file(s) of a snapshot written ahead, e.g. %s: %r",
                        len(self.written), self.written[:1], exc)


# prepare(run, base, base_changes_index): the snapshot's files, written on the run's thread
Prepare = Callable[[AheadRun, "Snapshot | None", bool], "PreparedSnapshot | None"]


class SnapshotAhead:
    """Writes one COMPACT snapshot's files beside the APPEND snapshot before it; see the module."""

    def __init__(self, store: FileStore, mio: ManifestIO, prepare: Prepare) -> None:
        self._store = store
        self._mio = mio
        self._prepare = prepare
        self._run: AheadRun | None = None

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

        def prepare(run: AheadRun, base: Snapshot | None, base_changes_index: bool) -> PreparedSnapshot | None:
            written = run.written
            index_manifest = None
            if not base_changes_index:  # the APPEND's index manifest is ``base``'s: start from it now
                index_manifest = next_index_manifest(store, mio, base, indexes, None, written)
            files = write_delta_files(mio, entries, changelog, written)
            appended = run.wait_appended()
            if appended is None:
                return None  # the APPEND attempt failed: the run is dropped, its files deleted
            if base_changes_index:
                index_manifest = next_index_manifest(store, mio, appended, indexes, None, written)
            elif appended.index_manifest != (base.index_manifest if base is not None else None):
                raise CommitConflictError("the APPEND snapshot changed the index manifest")  # the usual way
            check_conflicts(store, appended, entries, CommitKind.COMPACT)
            base_list = write_base_list(store, mio, appended, written)
            snapshot = snapshot_record(store, appended, CommitKind.COMPACT, entries, changelog, files,
                                       base_list=base_list, index_manifest=index_manifest, identifier=identifier,
                                       commit_user=commit_user, properties=properties)
            run.faults += [*MANIFEST_STEPS, *([CHANGELOG_LIST_STEP] if files.changelog_list is not None else [])]
            # stamped now, after the APPEND's stamp; its put's slow part done here
            return PreparedSnapshot(snapshot, written, run.faults, store.snapshot_manager.prepare_commit(snapshot))

        return SnapshotAhead(store, mio, prepare)

    def start(self, base: Snapshot | None, *, base_changes_index: bool) -> None:
        """Start beside an APPEND attempt on top of ``base`` (dropping what an earlier start
        wrote); ``base_changes_index``: the APPEND carries index files (HASH), so the index
        manifest waits for it. `follow` hands the APPEND snapshot over. Without a thread to run
        on, nothing is started: `take` then finds nothing and the committer writes the snapshot
        the usual way."""
        self.discard()
        prepare = self._prepare
        run = AheadRun(self._mio, lambda r: prepare(r, base, base_changes_index))
        if run.start():
            self._run = run

    def follow(self, appended: Snapshot) -> None:
        """The APPEND snapshot the COMPACT follows: its files are written (not yet put)."""
        if self._run is not None:
            self._run.follow(appended)

    @property
    def appended(self) -> Snapshot | None:
        """The APPEND snapshot handed over by `follow` (None before, and after `take`): the
        snapshot the COMPACT's files were written on. Once it landed, the COMPACT's put needs no
        look at the latest snapshot first: the put-if-absent of the next id fails if another
        commit came in between, and the committer then retries the usual way."""
        return self._run.appended if self._run is not None else None

    def take(self, latest: Snapshot | None) -> PreparedSnapshot | None:
        """The prepared snapshot if it was written on top of ``latest`` exactly; its files (and
        prepared put) are the caller's from here on. Else None, and what was written is deleted."""
        run = self._run
        if run is None:
            return None
        run.wait()
        result, appended = run.result, run.appended
        if (result is None or appended is None or latest is None or latest.id != appended.id
                or latest.uuid != appended.uuid):
            self.discard()
            return None
        self._run = None  # the caller's now: a later discard must not delete them
        schema_id = self._store.latest_schema_id()
        if schema_id != result.snapshot.schema_id:
            # a schema change landed meanwhile: the record names it, as the committer's own would
            if result.put is not None:
                result.put.discard()
            result = dataclasses.replace(result, snapshot=dataclasses.replace(result.snapshot, schema_id=schema_id),
                                         put=None)
        return result

    def discard(self) -> None:
        """Wait for the thread and delete what it wrote (never put: nothing references it)."""
        run, self._run = self._run, None
        if run is not None:
            run.drop()


__all__ = ["AheadRun", "PreparedSnapshot", "SnapshotAhead"]
