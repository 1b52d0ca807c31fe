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
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
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
from lake_assets.spec.manifest import ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore
    from lake_assets.store.manifest_io import ManifestIO


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


class SnapshotAhead:
    """Writes one COMPACT snapshot's files beside the APPEND snapshot before it; see the module."""

    def __init__(
        self,
        store: FileStore,
        mio: ManifestIO,
        entries: list[ManifestEntry],
        changelog: list[ManifestEntry],
        *,
        identifier: int,
        commit_user: str,
        properties: dict[str, str] | None,
        indexes: Sequence[IndexChange],
    ) -> None:
        self._store = store
        self._mio = mio
        self._entries = entries
        self._changelog = changelog
        self._identifier = identifier
        self._commit_user = commit_user
        self._properties = properties
        self._indexes = indexes
        self._thread: threading.Thread | None = None
        self._handoff: _Handoff | None = None
        self._appended: Snapshot | None = None  # the APPEND snapshot handed over
        self._written: list[str] = []
        self._faults: list[str] = []
        self._result: PreparedSnapshot | None = None

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
        return SnapshotAhead(store, mio, entries, changelog, identifier=identifier, commit_user=commit_user,
                             properties=properties, indexes=indexes)

    def start(self, base: Snapshot | None, *, base_changes_index: bool) -> None:
        """Start beside an APPEND attempt on top of ``base`` (dropping what an earlier start
        wrote); ``base_changes_index``: the APPEND carries index files (HASH), so the index
        manifest waits for it. `follow` hands the APPEND snapshot over."""
        self.discard()
        handoff = self._handoff = _Handoff()
        self._thread = threading.Thread(target=self._run, args=(base, handoff, base_changes_index),
                                        name="lake-commit-ahead", daemon=True)
        self._thread.start()

    def follow(self, appended: Snapshot) -> None:
        """The APPEND snapshot the COMPACT follows: its files are written (not yet put)."""
        if self._handoff is not None:
            self._appended = appended
            self._handoff.give(appended)

    @property
    def appended(self) -> Snapshot | None:
        """The APPEND snapshot handed over by `follow` (None before, and after `take`): the
        snapshot the COMPACT's files were written on. Once it landed, the COMPACT's put needs no
        look at the latest snapshot first: the put-if-absent of the next id fails if another
        commit came in between, and the committer then retries the usual way."""
        return self._appended

    def _run(self, base: Snapshot | None, handoff: _Handoff, base_changes_index: bool) -> None:
        try:
            self._result = self._prepare(base, handoff, base_changes_index)
        except BaseException:
            self._result = None

    def _prepare(self, base: Snapshot | None, handoff: _Handoff, base_changes_index: bool) -> PreparedSnapshot | None:
        store, mio, written = self._store, self._mio, self._written
        index_manifest = None
        if not base_changes_index:  # the APPEND's index manifest is ``base``'s: start from it now
            index_manifest = next_index_manifest(store, mio, base, self._indexes, None, written)
        files = write_delta_files(mio, self._entries, self._changelog, written)
        appended = handoff.wait()
        if appended is None:
            return None  # the APPEND attempt failed: `discard` deletes what was written
        if base_changes_index:
            index_manifest = next_index_manifest(store, mio, appended, self._indexes, None, written)
        elif appended.index_manifest != (base.index_manifest if base is not None else None):
            raise CommitConflictError("the APPEND snapshot changed the index manifest")  # written the usual way
        check_conflicts(store, appended, self._entries, CommitKind.COMPACT)
        base_list = write_base_list(store, mio, appended, written)
        snapshot = snapshot_record(store, appended, CommitKind.COMPACT, self._entries, self._changelog, files,
                                   base_list=base_list, index_manifest=index_manifest, identifier=self._identifier,
                                   commit_user=self._commit_user, properties=self._properties)
        self._faults += [*MANIFEST_STEPS, *([CHANGELOG_LIST_STEP] if files.changelog_list is not None else [])]
        # stamped now, after the APPEND's stamp; its put's slow part done here
        return PreparedSnapshot(snapshot, written, self._faults, store.snapshot_manager.prepare_commit(snapshot))

    def take(self, latest: Snapshot | None) -> PreparedSnapshot | None:
        """The prepared snapshot if it was written on top of ``latest`` exactly; its files (and
        prepared put) are the caller's from here on. Else None, and what was written is deleted."""
        self._join()
        result, appended = self._result, self._appended
        if (result is None or appended is None or latest is None or latest.id != appended.id
                or latest.uuid != appended.uuid):
            self.discard()
            return None
        schema_id = self._store.latest_schema_id()
        if schema_id != result.snapshot.schema_id:
            # a schema change landed meanwhile: the record names it, as the committer's own would
            if result.put is not None:
                result.put.discard()
            result = dataclasses.replace(result, snapshot=dataclasses.replace(result.snapshot, schema_id=schema_id),
                                         put=None)
        self._reset()
        return result

    def discard(self) -> None:
        """Wait for the thread and delete what it wrote (never put: nothing references it)."""
        self._join()
        written, result = self._written, self._result
        self._reset()
        if result is not None and result.put is not None:
            result.put.discard()
        if written:
            self._mio.delete(written)

    def _join(self) -> None:
        if self._handoff is not None:
            self._handoff.give(None)  # never followed (the APPEND attempt failed): stop waiting
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _reset(self) -> None:
        self._handoff = None
        self._appended = None
        self._result = None
        self._written = []
        self._faults = []


__all__ = ["PreparedSnapshot", "SnapshotAhead"]
