"""The committer: turns commit messages into snapshots, atomically and exactly once.

Order of writes (Paimon's protocol): data files (already written by writers) → manifests →
manifest lists → ``snapshot-<id>`` created only if absent → the LATEST hint. Losing the race
for an id re-reads the latest snapshot and retries; a real conflict (a file this commit deletes
is already gone, overlapping levels) raises `CommitConflictError` after removing what it wrote.
Whether messages were committed before (a replayed checkpoint) is `commit_replay`'s question;
what runs after a landed commit (tags, partition expiry) is `commit_lifecycle`; the attempts at
each snapshot (checks against the latest, retries, the atomic put) are `commit_attempts`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_assets import arguments as args
from lake_assets.errors import (
    CommitConflictError,
    CommitFileMissingError,
    CommitStateUnknownError,
    InvalidArgumentError,
    UnsafePathError,
)
from lake_assets.ops.append_vectors import is_row_delete
from lake_assets.ops.commit_ahead import SnapshotAhead
from lake_assets.ops.commit_attempts import SnapshotAttempts
from lake_assets.ops.commit_cleanup import delete_compaction_outputs, delete_inside, delete_unreferenced
from lake_assets.ops.commit_empty import commits_empty_snapshot
from lake_assets.ops.commit_lifecycle import after_commit
from lake_assets.ops.commit_message import CommitMessage, validate_messages
from lake_assets.ops.commit_replay import CommitReplay, check_files_exist
from lake_assets.ops.index_commit import index_changes, split_hash_changes
from lake_assets.ops.key_index_race import key_index_base
from lake_assets.ops.overwrite import Overwrite
from lake_assets.ops.scan import merge_entries
from lake_assets.ops.visibility_wait import invisible_entries, wait_for_visibility, waits_for_visibility
from lake_assets.parallelism import usable_cpus
from lake_assets.spec.manifest import FileKind, ManifestEntry
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)


class TableCommitter(SnapshotAttempts):
    """Commits the messages of one commit user; see `commit`.

    ``write_only``: whether the commit-time lifecycle (automatic tags, tag and partition expiry) is
    left out, as Paimon's committer of a ``write-only`` table leaves it out. None (writers): the
    table's ``write-only``. False: a dedicated compaction, which Paimon commits through a copy of
    the table with ``write-only = false`` (its compact action and procedure), so it runs them."""

    def __init__(self, store: FileStore, commit_user: str, *, write_only: bool | None = None) -> None:
        self.store = store
        self.commit_user = commit_user
        self.options = store.schema.core_options
        self.write_only = self.options.write_only if write_only is None else write_only
        self._replay = CommitReplay(store, commit_user)
        # Outcome of the last `commit` call, for callers deciding whether they may clean up:
        # snapshots known to have landed, and whether a snapshot put was cut off mid-flight.
        self._landed: list[int] = []
        self._in_doubt = False
        # The last `commit` met messages that were committed before (their identifier, or files
        # already gone): their files may be live, so `abort` must not delete them.
        self._seen_committed = False
        # the messages of the current `commit` that a cross-partition upsert writer made
        self._key_index_messages: Sequence[CommitMessage] = []
        self._key_race_cleared: dict[int, str] = {}  # see `check_key_index_race`
        self._row_ids_read_at: int | None = None  # see `commit`
        self._updates_rows = False

    @property
    def may_have_landed(self) -> bool:
        """True if the last `commit` created a snapshot or may have (an interrupted snapshot put).

        Whoever handed messages to `commit` must then never delete their files, whatever the
        exception: a snapshot may reference them. Orphan removal collects them if none does.
        """
        return bool(self._landed) or self._in_doubt

    # ----------------------------------------------------------- idempotence
    def last_committed_identifier(self) -> int | None:
        """The highest commit identifier this commit user has committed, scanning back from latest."""
        return self._replay.last_committed_identifier()

    def is_committed(self, commit_identifier: int) -> bool:
        """Whether this commit user already committed ``commit_identifier`` (or a later one)."""
        args.integer("commit_identifier", commit_identifier, optional=False)
        return self._replay.is_committed(commit_identifier)

    # ---------------------------------------------------------------- commit
    def commit(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        *,
        overwrite: Overwrite | None = None,
        check_committed: bool = True,
        properties: dict[str, str] | None = None,
        row_ids_read_at: int | None = None,
    ) -> list[int]:
        """Commit ``messages``; returns the new snapshot ids (empty if nothing was committed).

        Committing the same (commit user, identifier) again is a no-op, also after a restart. The
        files of such a replayed commit are left alone (they may be the very files that landed);
        call `abort` for a replay whose files are new, or let orphan removal collect them.
        New files become an APPEND (or OVERWRITE) snapshot; compaction results a COMPACT snapshot
        with the same identifier. No changes make no snapshot, unless ``snapshot.ignore-empty-commit``
        or (streaming identifiers) ``commit.force-create-snapshot`` ask for an empty APPEND one.

        ``check_committed=False`` skips the look for an earlier landing of this identifier: only for
        messages that were never committed (a fresh writer's). An APPEND is not checked against the
        latest snapshot (as Paimon's APPEND commits are not), so new files committed twice that way
        would be added twice; a COMPACT or OVERWRITE replayed that way fails its conflict check and
        deletes none of the files a snapshot references.

        ``row_ids_read_at``: for new files that update existing rows of a data-evolution table
        (`ops.column_update`), the snapshot the update read; the commit fails on a later snapshot
        that wrote the same columns of those rows (`check_row_id_updates`).
        """
        args.integer("commit_identifier", commit_identifier, optional=False)
        args.integer("row_ids_read_at", row_ids_read_at)
        args.flag("check_committed", check_committed)
        args.mapping("properties", properties)
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidArgumentError(f"messages must be a list of CommitMessage, got {type(messages).__name__}")
        self._landed = []
        self._in_doubt = False
        self._seen_committed = False
        # Messages come from other processes: check them all before acting on any (raises
        # InvalidCommitMessageError; nothing committed, nothing deleted).
        validate_messages(self.store, messages, "commit to")
        if check_committed and self.is_committed(commit_identifier):
            self._seen_committed = True
            return []
        messages = [m for m in messages if not m.is_empty()]
        # no changes: an APPEND snapshot of no files if the table asks for one (commit_empty.py)
        empty = overwrite is None and not messages and commits_empty_snapshot(self.options, commit_identifier)
        # what the messages do must be allowed on this table (its writers and plans checked too);
        # no message at all is a write of no rows (not a compaction, which a table may refuse while
        # allowing writes: a compaction option of a newer Paimon, say)
        writes = (overwrite is not None or empty or not messages
                  or any(m.new_files or m.new_changelog or is_row_delete(self.store.schema, m) for m in messages))
        self.store.require(Op.WRITE if writes else Op.COMPACT)
        try:
            check_files_exist(self.store, messages)
        except CommitFileMissingError:
            # committed before (its snapshot expired): the files may be live, `abort` must keep them
            self._seen_committed = True
            raise
        if check_committed and self._replay.landed_before_expiry(messages):
            self._seen_committed = True
            return []
        # new files of existing row-id ranges (a column update): checked at each attempt
        self._row_ids_read_at = row_ids_read_at
        self._updates_rows = any(f.first_row_id is not None for m in messages for f in m.new_files)
        # a cross-partition upsert writer's messages: checked against racing writers at each attempt
        self._key_index_messages = messages if key_index_base(messages) is not None else []
        total = self.store.schema.core_options.bucket if self.store.primary_keys else -1
        append: list[ManifestEntry] = []
        changelog: list[ManifestEntry] = []
        compact: list[ManifestEntry] = []
        compact_changelog: list[ManifestEntry] = []
        for m in messages:
            tb = m.total_buckets if m.total_buckets else total
            append += [ManifestEntry(FileKind.ADD, m.partition, m.bucket, tb, f) for f in m.new_files]
            changelog += [ManifestEntry(FileKind.ADD, m.partition, m.bucket, tb, f) for f in m.new_changelog]
            compact += [ManifestEntry(FileKind.DELETE, m.partition, m.bucket, tb, f) for f in m.compact_before]
            compact += [ManifestEntry(FileKind.ADD, m.partition, m.bucket, tb, f) for f in m.compact_after]
            compact_changelog += [
                ManifestEntry(FileKind.ADD, m.partition, m.bucket, tb, f) for f in m.compact_changelog
            ]
        # a dynamic-bucket writer's HASH files go with its data (Paimon's APPEND snapshot), a
        # compaction's deletion vectors with its COMPACT snapshot
        # deleted rows of an append table (vectors marked, no file rewritten) are an OVERWRITE, as
        # Paimon 1.x commits a delta of deletion-vector changes (Java 0.9: a COMPACT)
        marks = [m for m in messages if is_row_delete(self.store.schema, m)]
        hash_changes, other_changes = split_hash_changes(index_changes([m for m in messages if m not in marks]))
        deletes = index_changes(marks)
        if overwrite is not None and (changelog or compact_changelog):
            # Paimon's FileStoreCommit commits no changelog with an overwrite ("Overwrite mode
            # currently does not commit any changelog"): streams see no change for it. Nothing
            # references these files then: remove them instead of leaving orphans.
            delete_inside(self.store, [  # a message's directories proven inside the table first
                p for m in messages for f in (*m.new_changelog, *m.compact_changelog)
                for p in self.store.written_file_paths(m.partition, m.bucket, f)
            ])
            changelog, compact_changelog = [], []
        compacts = bool(compact or compact_changelog or other_changes)
        # An APPEND followed by a COMPACT: the COMPACT's files are written beside the APPEND's (on
        # a second thread, with 2+ usable CPUs), and its LATEST hint covers both (a hint may lag:
        # readers, Java's too, look further); the APPEND's is written if the COMPACT does not land
        hint_owed = compacts and overwrite is None and bool(append or changelog or hash_changes)
        ahead = (SnapshotAhead.for_compact(self.store, self.store.manifest_io(), compact, compact_changelog,
                                           identifier=commit_identifier, commit_user=self.commit_user,
                                           properties=properties, indexes=other_changes)
                 if hint_owed and usable_cpus() > 1 else None)
        try:
            if overwrite is not None:
                self._commit_with_retry(CommitKind.OVERWRITE, append, changelog, commit_identifier, overwrite,
                                        properties, hash_changes)
            elif deletes:
                if append or changelog or hash_changes:
                    raise InvalidArgumentError(
                        f"Cannot commit to {self.store.name}: deleted rows (deletion vectors) and new data "
                        "go in separate commits")
                self._commit_with_retry(CommitKind.OVERWRITE, [], [], commit_identifier, None, properties, deletes)
            elif append or changelog or hash_changes or empty:
                self._commit_with_retry(CommitKind.APPEND, append, changelog, commit_identifier, None, properties,
                                        hash_changes, start_ahead=ahead, hint=not hint_owed)
            if compacts:
                landed_before = list(self._landed)
                try:
                    self._commit_with_retry(
                        CommitKind.COMPACT, compact, compact_changelog, commit_identifier, None, properties,
                        other_changes, prepared_by=ahead,
                    )
                except Exception as exc:
                    if not landed_before or self._in_doubt or isinstance(exc, CommitStateUnknownError):
                        raise
                    # The data landed; only the writer's inline compaction failed before its
                    # snapshot (lost against another compactor, or a storage error while writing
                    # its manifests). Its outputs are unreferenced: remove them, report the data.
                    log.warning("Data of %s landed as snapshot %s; its compaction did not: %s",
                                self.store.name, landed_before, exc)
                    delete_compaction_outputs(self.store, messages)
        except CommitConflictError:
            if self.may_have_landed:
                raise  # not reachable today (conflicts are found before a put); never clean up then
            # Files of a rejected commit are normally referenced by nothing: remove them. But the
            # messages may be a replay of a commit that landed (``check_committed=False``), whose
            # files a retained snapshot or tag references, and upgraded files keep their name and
            # are still referenced at their old level: delete only what nothing references.
            try:
                delete_unreferenced(self.store, messages)
            except UnsafePathError as exc:  # the conflict is the caller's news; nothing was deleted
                log.warning("Not deleting the files of a rejected commit to %s: %s", self.store.name, exc)
            raise
        except CommitStateUnknownError:
            raise
        except Exception as exc:
            if not self.may_have_landed:
                raise  # proven: no snapshot of this call exists; the caller may retry or abort
            raise CommitStateUnknownError(
                f"Commit to {self.store.name} failed after snapshot(s) {self._landed or '(in flight)'} "
                f"may have landed: {exc!r}. Retry with the same commit user and identifier; never "
                "clean up its files."
            ) from exc
        finally:
            if hint_owed and len(self._landed) == 1:  # the APPEND landed, the COMPACT did not
                self.store.snapshot_manager.write_latest_hint(self._landed[0])
            if ahead is not None:
                ahead.discard()  # files of a COMPACT snapshot never put (none once it was used)
        # KeyboardInterrupt / SystemExit pass through unchanged: callers check `may_have_landed`.
        if self._landed:
            after_commit(self.store, self._landed[-1], write_only=self.write_only)
            if writes and waits_for_visibility(self.store, commit_identifier):
                # visibility-callback.enabled: the commit stands; raises CommitNotVisibleError on timeout
                wait_for_visibility(self.store, self._landed, invisible_entries(self.store, append, compact))
        return list(self._landed)

    def abort(self, messages: Sequence[CommitMessage], commit_identifier: int | None = None) -> None:
        """Delete the files of messages that will never be committed (every message is validated
        first: a crafted file name must not make abort delete anything outside the table).

        Refuses (deletes nothing) after a `commit` of this committer that may have landed or found
        the messages committed before, and when ``commit_identifier`` is given and this commit user
        has committed it. Otherwise deletes only files that no retained snapshot or tag references
        (messages handed to a fresh committer may be the very ones a snapshot committed).
        """
        validate_messages(self.store, messages, "abort a commit to")
        if self.may_have_landed or self._seen_committed:
            log.warning("Not deleting files of %s: the last commit may have landed or had landed before",
                        self.store.name)
            return
        if commit_identifier is not None and self.is_committed(commit_identifier):
            log.warning("Not deleting files of %s: commit %s of %s was committed", self.store.name,
                        commit_identifier, self.commit_user)
            return
        delete_unreferenced(self.store, messages)


__all__ = ["Overwrite", "TableCommitter", "merge_entries"]
