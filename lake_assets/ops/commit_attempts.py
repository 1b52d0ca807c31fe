"""How the committer lands one snapshot (`SnapshotAttempts`, which `TableCommitter` extends).

Each attempt reads the latest snapshot, checks the commit against it (conflicts, deletion-vector
targets, row-id updates, racing cross-partition writers), writes the snapshot's manifests and puts
``snapshot-<id>`` only if absent (`put_snapshot`, the one atomic step); a lost race for the id
deletes the attempt's manifests and retries after a randomized, growing wait, up to
``commit.max-retries``. An interrupted put leaves the outcome in doubt: nothing is cleaned up then.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_assets.errors import CommitConflictError, CommitStateUnknownError, NoSuchTableError
from lake_assets.ops.append_vectors import check_vector_targets, keeps_append_vectors
from lake_assets.ops.commit_conflicts import check_conflicts
from lake_assets.ops.commit_snapshot import write_snapshot_files
from lake_assets.ops.key_index_race import check_key_index_race
from lake_assets.ops.overwrite import overwritten_entries
from lake_assets.spec.snapshot import CommitKind

if TYPE_CHECKING:
    from lake_assets.io.file_io import PreparedCreate
    from lake_assets.ops.commit_ahead import SnapshotAhead
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.ops.index_commit import IndexChange
    from lake_assets.ops.overwrite import Overwrite
    from lake_assets.options import CoreOptions
    from lake_assets.spec.manifest import ManifestEntry
    from lake_assets.spec.snapshot import Snapshot
    from lake_assets.store.file_store import FileStore
    from lake_assets.store.manifest_io import ManifestIO


def _adds_real_buckets_of_postpone_table(store: FileStore, delta: Sequence[ManifestEntry]) -> bool:
    """Whether an APPEND delta adds real-bucket files to a postpone-bucket table (a batch write
    into real buckets): Paimon commits those with ``appendCommitCheckConflict``, so that two
    writers choosing different bucket counts for a new partition cannot both land."""
    return (bool(store.primary_keys) and store.schema.core_options.bucket == -2
            and any(e.bucket >= 0 for e in delta))


class SnapshotAttempts:
    """The committer's attempts at one snapshot, and what they leave known: `_landed` (snapshots
    that landed) and `_in_doubt` (a put whose outcome is open)."""

    store: FileStore
    commit_user: str
    options: CoreOptions
    _landed: list[int]
    _in_doubt: bool
    _key_index_messages: Sequence[CommitMessage]
    _key_race_cleared: dict[int, str]
    _row_ids_read_at: int | None
    _updates_rows: bool

    def _commit_with_retry(
        self,
        kind: CommitKind,
        entries: list[ManifestEntry],
        changelog: list[ManifestEntry],
        identifier: int,
        overwrite: Overwrite | None,
        properties: dict[str, str] | None,
        indexes: Sequence[IndexChange] = (),
        *,
        start_ahead: SnapshotAhead | None = None,
        prepared_by: SnapshotAhead | None = None,
        hint: bool = True,
    ) -> int | None:
        """``start_ahead`` writes the next snapshot's files beside this one's; ``prepared_by``
        holds this one's, used if written on top of the latest. ``hint``: write the LATEST hint."""
        sm = self.store.snapshot_manager
        mio = self.store.manifest_io()
        max_retries = self.options.commit_max_retries
        wait_ms = self.options.commit_min_retry_wait_ms
        attempt = 0
        while True:
            # Written ahead on top of this commit's APPEND (the first attempt only): checked
            # against it, and its put finds out by itself whether a commit came in between.
            ahead = prepared_by.appended if prepared_by is not None and attempt == 0 else None
            latest = ahead if ahead is not None else sm.latest()
            prepared = prepared_by.take(latest) if prepared_by is not None and attempt == 0 else None
            delta = list(entries)
            if overwrite is not None:
                # an overwrite that replaces and adds nothing still lands (an empty OVERWRITE), as
                # Java's static overwrite, truncate and partition drop (tryOverwrite) always do
                delta = overwritten_entries(self.store, latest, overwrite) + delta
            if prepared is None and (kind != CommitKind.APPEND
                                     or _adds_real_buckets_of_postpone_table(self.store, delta)):
                check_conflicts(self.store, latest, delta, kind)
                if keeps_append_vectors(self.store.schema):  # vectors of live, unchanged files only
                    check_vector_targets(self.store, latest, delta, indexes, overwrite=overwrite is not None)
            if kind == CommitKind.APPEND and self._updates_rows:
                from lake_assets.ops.column_update import check_row_id_updates

                check_row_id_updates(self.store, latest, delta, self._row_ids_read_at)
            if kind != CommitKind.COMPACT and self._key_index_messages:
                check_key_index_race(self.store, latest, self._key_index_messages, self.commit_user,
                                     self._key_race_cleared)
            written: list[str] = [] if prepared is None else prepared.written
            try:
                if prepared is None:
                    sid = self._try_commit_once(mio, latest, kind, delta, changelog, identifier, properties,
                                                written, indexes, overwrite, start_ahead)
                else:
                    for step in prepared.faults:  # the steps its files passed, in order, on this thread
                        self.store.fault_point(step)
                    sid = self.put_snapshot(prepared.snapshot, prepared.put)
            except BaseException:
                if prepared is not None and prepared.put is not None:
                    prepared.put.discard()  # never made (a no-op once it was)
                # Manifests go only when the snapshot put is proven not to have happened.
                if not self._in_doubt:
                    mio.delete(written)
                raise
            if sid is not None:
                # The snapshot landed: from here on nothing this commit wrote may be cleaned up.
                self._landed.append(sid)
                self._in_doubt = False
                self.store.fault_point("commit.after_snapshot")
                if hint:
                    sm.write_latest_hint(sid)
                return sid
            mio.delete(written)
            attempt += 1
            if attempt > max_retries:
                raise CommitConflictError(
                    f"Cannot commit to {self.store.name}: gave up after {max_retries} retries "
                    "racing other committers for the next snapshot id"
                )
            time.sleep(min(wait_ms, self.options.commit_max_retry_wait_ms) / 1000 * (1 + random.random()))
            wait_ms *= 2

    def _try_commit_once(
        self,
        mio: ManifestIO,
        latest: Snapshot | None,
        kind: CommitKind,
        delta: list[ManifestEntry],
        changelog: list[ManifestEntry],
        identifier: int,
        properties: dict[str, str] | None,
        written: list[str],
        indexes: Sequence[IndexChange] = (),
        overwrite: Overwrite | None = None,
        ahead: SnapshotAhead | None = None,
    ) -> int | None:
        if ahead is not None:  # the next snapshot's files, written while this one's are written and put
            ahead.start(latest, base_changes_index=bool(indexes))
        snapshot = write_snapshot_files(
            self.store, mio, latest, kind, delta, changelog, identifier=identifier, commit_user=self.commit_user,
            properties=properties, written=written, indexes=indexes, overwrite=overwrite,
            fault=self.store.fault_point)
        if ahead is not None:
            ahead.follow(snapshot)
        return self.put_snapshot(snapshot)

    def put_snapshot(self, snapshot: Snapshot, prepared: PreparedCreate | None = None) -> int | None:
        """Create ``snapshot``'s file (``prepared``: its put prepared ahead) if its id is free: its
        id, None when another committer took it. The one atomic step of every commit (also
        `ops.rollback_as_latest`'s): an open outcome is settled by looking or raises
        `CommitStateUnknownError`."""
        if not self.store.file_io.exists(self.store.paths.schema_file(self.store.schema.id)):
            raise NoSuchTableError(f"Cannot commit to {self.store.name}: the table was dropped")
        self.store.fault_point("commit.before_snapshot")
        # From here until the put answers, an interrupt leaves the snapshot's existence open.
        self._in_doubt = True
        try:
            created = self.store.snapshot_manager.try_commit(snapshot) if prepared is None else prepared.create()
        except CommitStateUnknownError as exc:
            raise CommitStateUnknownError(
                f"Commit to {self.store.name} may or may not have created snapshot {snapshot.id}: {exc}. "
                "Retry with the same commit user and identifier to resolve it."
            ) from exc
        except Exception:
            # try_create settles every open outcome by looking (raising CommitStateUnknownError
            # otherwise): any other error means the snapshot was not created.
            self._in_doubt = False
            raise
        if not created:
            self._in_doubt = False  # proven: another committer owns this id
            return None
        return snapshot.id  # still "in doubt" until the caller has recorded it as landed
