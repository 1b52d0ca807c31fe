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
"""

from __future__ import annotations

import dataclasses
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


@dataclass
class PreparedSnapshot:
    """A snapshot whose files are written, the names written and the fault points they passed."""

    snapshot: Snapshot
    written: list[str]
    faults: list[str]


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
        self._thread: threading.Thread | None = None
        self._base: Snapshot | None = None
        self._written: list[str] = []
        self._faults: list[str] = []
        self._result: Snapshot | None = None

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
        """Start writing on top of ``base`` (dropping what an earlier start wrote)."""
        self.discard()
        self._base = base
        self._thread = threading.Thread(target=self._run, args=(base,), name="lake-commit-ahead", daemon=True)
        self._thread.start()

    def _run(self, base: Snapshot) -> None:
        try:
            self._result = self._prepare(base, self._written, self._faults.append)
        except BaseException:
            self._result = None

    def take(self, latest: Snapshot | None) -> PreparedSnapshot | None:
        """The prepared snapshot if it was written on top of ``latest`` exactly; its files are the
        caller's from here on. Else None, and what was written is deleted."""
        self._join()
        base, result = self._base, self._result
        if (result is None or base is None or latest is None or latest.id != base.id
                or latest.uuid != base.uuid):
            self.discard()
            return None
        # stamped as of its put, as the committer stamps a snapshot it writes itself
        snapshot = dataclasses.replace(result, schema_id=self._store.latest_schema_id(),
                                       time_millis=int(time.time() * 1000))
        prepared = PreparedSnapshot(snapshot, self._written, self._faults)
        self._reset()
        return prepared

    def discard(self) -> None:
        """Wait for the thread and delete what it wrote (never put: nothing references it)."""
        self._join()
        written = self._written
        self._reset()
        if written:
            self._mio.delete(written)

    def _join(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _reset(self) -> None:
        self._base = None
        self._result = None
        self._written = []
        self._faults = []


__all__ = ["PreparedSnapshot", "SnapshotAhead"]
