"""The committer: turns commit messages into snapshots, atomically and exactly once.

Order of writes (Paimon's protocol): data files (already written by writers) → manifests →
manifest lists → ``snapshot-<id>`` created only if absent → the LATEST hint. Losing the race
for an id re-reads the latest snapshot and retries; a real conflict (a file this commit deletes
is already gone, overlapping levels) raises `CommitConflictError` after removing what it wrote.
Whether messages were committed before (a replayed checkpoint) is `commit_replay`'s question;
what runs after a landed commit (tags, partition expiry) is `commit_lifecycle`.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_assets import arguments as args
from lake_assets.errors import (
    CommitConflictError,
    CommitFileMissingError,
    CommitStateUnknownError,
    InvalidArgumentError,
    NoSuchTableError,
)
from lake_assets.ops.commit_conflicts import check_conflicts
from lake_assets.ops.commit_lifecycle import after_commit
from lake_assets.ops.commit_message import CommitMessage, validate_messages
from lake_assets.ops.commit_replay import CommitReplay, check_files_exist
from lake_assets.ops.index_commit import IndexChange, index_changes, next_index_manifest, split_hash_changes
from lake_assets.ops.overwrite import Overwrite, overwritten_entries
from lake_assets.ops.scan import merge_entries
from lake_assets.spec.hash_index import HASH_INDEX
from lake_assets.spec.manifest import FileKind, ManifestEntry, ManifestFileMeta
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore
    from lake_assets.store.manifest_io import ManifestIO

WRITER_VERSION = "lake_assets-0.1.0"
log = logging.getLogger(__name__)

def _abs_files(store: FileStore, messages: Sequence[CommitMessage]) -> list[str]:
    """Files the messages' writers created (upgraded files are not theirs to delete), with the
    index files they wrote (a dynamic-bucket writer's HASH files, a compaction's deletion vectors)."""
    return [p for m in messages for f in m.all_written_files()
            for p in store.written_file_paths(m.partition, m.bucket, f)] + [
        store.paths.index_file(e.file_name) for m in messages for e in m.index_after
    ]


def _adds_real_buckets_of_postpone_table(store: FileStore, delta: Sequence[ManifestEntry]) -> bool:
    """Whether an APPEND delta adds real-bucket files to a postpone-bucket table (a batch write
    into real buckets): Paimon commits those with ``appendCommitCheckConflict``, so that two
    writers choosing different bucket counts for a new partition cannot both land."""
    return (bool(store.primary_keys) and store.schema.core_options.bucket == -2
            and any(e.bucket >= 0 for e in delta))


class TableCommitter:
    """Commits the messages of one commit user; see `commit`."""

    def __init__(self, store: FileStore, commit_user: str) -> None:
        self.store = store
        self.commit_user = commit_user
        self.options = store.schema.core_options
        self._replay = CommitReplay(store, commit_user)
        # Outcome of the last `commit` call, for callers deciding whether they may clean up:
        # snapshots known to have landed, and whether a snapshot put was cut off mid-flight.
        self._landed: list[int] = []
        self._in_doubt = False
        # The last `commit` met messages that were committed before (their identifier, or files
        # already gone): their files may be live, so `abort` must not delete them.
        self._seen_committed = False

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
    ) -> list[int]:
        """Commit ``messages``; returns the new snapshot ids (empty if nothing was committed).

        Committing the same (commit user, identifier) again is a no-op, also after a restart. The
        files of such a replayed commit are left alone (they may be the very files that landed);
        call `abort` for a replay whose files are new, or let orphan removal collect them.
        New files become an APPEND (or OVERWRITE) snapshot; compaction results a COMPACT snapshot
        with the same identifier.

        ``check_committed=False`` skips the look for an earlier landing of this identifier: only for
        messages that were never committed (a fresh writer's). An APPEND is not checked against the
        latest snapshot (as Paimon's APPEND commits are not), so new files committed twice that way
        would be added twice; a COMPACT or OVERWRITE replayed that way fails its conflict check and
        deletes none of the files a snapshot references.
        """
        args.integer("commit_identifier", commit_identifier, optional=False)
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
        # what the messages do must be allowed on this table (its writers and plans checked too)
        writes = overwrite is not None or any(m.new_files or m.new_changelog for m in messages)
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
        hash_changes, other_changes = split_hash_changes(index_changes(messages))
        if overwrite is not None and (changelog or compact_changelog):
            # Paimon's FileStoreCommit commits no changelog with an overwrite ("Overwrite mode
            # currently does not commit any changelog"): streams see no change for it. Nothing
            # references these files then: remove them instead of leaving orphans.
            self.store.file_io.delete_many(
                p for m in messages for f in (*m.new_changelog, *m.compact_changelog)
                for p in self.store.written_file_paths(m.partition, m.bucket, f)
            )
            changelog, compact_changelog = [], []
        try:
            if overwrite is not None:
                self._commit_with_retry(CommitKind.OVERWRITE, append, changelog, commit_identifier, overwrite,
                                        properties, hash_changes)
            elif append or changelog or hash_changes:
                self._commit_with_retry(CommitKind.APPEND, append, changelog, commit_identifier, None, properties,
                                        hash_changes)
            if compact or compact_changelog or other_changes:
                landed_before = list(self._landed)
                try:
                    self._commit_with_retry(
                        CommitKind.COMPACT, compact, compact_changelog, commit_identifier, None, properties,
                        other_changes,
                    )
                except Exception as exc:
                    if not landed_before or self._in_doubt or isinstance(exc, CommitStateUnknownError):
                        raise
                    # The data landed; only the writer's inline compaction failed before its
                    # snapshot (lost against another compactor, or a storage error while writing
                    # its manifests). Its outputs are unreferenced: remove them, report the data.
                    log.warning("Data of %s landed as snapshot %s; its compaction did not: %s",
                                self.store.name, landed_before, exc)
                    self.store.file_io.delete_many(
                        p
                        for m in messages
                        for f in (*m.compact_after, *m.compact_changelog)
                        if f.file_name not in {b.file_name for b in m.compact_before}
                        for p in self.store.written_file_paths(m.partition, m.bucket, f)
                    )
                    self.store.file_io.delete_many(  # the compaction's; HASH files landed with the data
                        self.store.paths.index_file(e.file_name) for m in messages for e in m.index_after
                        if e.index_type != HASH_INDEX
                    )
        except CommitConflictError:
            if self.may_have_landed:
                raise  # not reachable today (conflicts are found before a put); never clean up then
            # Files of a rejected commit are normally referenced by nothing: remove them. But the
            # messages may be a replay of a commit that landed (``check_committed=False``), whose
            # files a retained snapshot or tag references, and upgraded files keep their name and
            # are still referenced at their old level: delete only what nothing references.
            self._delete_unreferenced(messages)
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
        # KeyboardInterrupt / SystemExit pass through unchanged: callers check `may_have_landed`.
        if self._landed:
            after_commit(self.store, self._landed[-1])
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
        self._delete_unreferenced(messages)

    def _delete_unreferenced(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the messages' files that no retained snapshot or tag references."""
        from lake_assets.ops.orphans import referenced_files  # orphans imports the scan stack

        files = _abs_files(self.store, messages)
        live = referenced_files(self.store) if files else set()
        kept = [f for f in files if f in live]
        if kept:
            log.warning("Not deleting %d file(s) of %s that a snapshot or tag references, e.g. %s",
                        len(kept), self.store.name, kept[0])
        self.store.file_io.delete_many(f for f in files if f not in live)

    # -------------------------------------------------------------- internals
    def _commit_with_retry(
        self,
        kind: CommitKind,
        entries: list[ManifestEntry],
        changelog: list[ManifestEntry],
        identifier: int,
        overwrite: Overwrite | None,
        properties: dict[str, str] | None,
        indexes: Sequence[IndexChange] = (),
    ) -> int | None:
        sm = self.store.snapshot_manager
        mio = self.store.manifest_io()
        max_retries = self.options.commit_max_retries
        wait_ms = self.options.commit_min_retry_wait_ms
        attempt = 0
        while True:
            latest = sm.latest()
            delta = list(entries)
            if overwrite is not None:
                delta = overwritten_entries(self.store, latest, overwrite) + delta
                if not delta and not changelog:
                    return None
            if kind != CommitKind.APPEND or _adds_real_buckets_of_postpone_table(self.store, delta):
                check_conflicts(self.store, latest, delta, kind)
            written: list[str] = []
            try:
                sid = self._try_commit_once(mio, latest, kind, delta, changelog, identifier, properties, written,
                                            indexes, overwrite)
            except BaseException:
                # Manifests go only when the snapshot put is proven not to have happened.
                if not self._in_doubt:
                    mio.delete(written)
                raise
            if sid is not None:
                # The snapshot landed: from here on nothing this commit wrote may be cleaned up.
                self._landed.append(sid)
                self._in_doubt = False
                self.store.fault_point("commit.after_snapshot")
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
    ) -> int | None:
        # the index manifest first: a conflict on a bucket's index is found before anything else is written
        scan = self.store.file_store_scan()
        overwritten = (None if overwrite is None
                       else lambda part: overwrite.matches(scan.partition_values(part)))
        index_manifest = next_index_manifest(self.store, mio, latest, indexes, overwritten, written)
        base_metas: list[ManifestFileMeta] = []
        if latest is not None:
            base_metas = mio.read_manifest_list(latest.base_manifest_list) + mio.read_manifest_list(
                latest.delta_manifest_list
            )
            base_metas, merged_names = mio.merge_manifests(base_metas, self.options.manifest_merge_min_count)
            written += merged_names
        delta_metas = mio.write_manifests(delta)
        written += [m.file_name for m in delta_metas]
        changelog_metas = mio.write_manifests(changelog)
        written += [m.file_name for m in changelog_metas]
        self.store.fault_point("commit.after_manifests")
        base_name, base_size = mio.write_manifest_list(base_metas)
        written.append(base_name)
        self.store.fault_point("commit.after_base_list")
        delta_name, delta_size = mio.write_manifest_list(delta_metas)
        written.append(delta_name)
        self.store.fault_point("commit.after_delta_list")
        cl_name = cl_size = None
        if changelog_metas:
            cl_name, cl_size = mio.write_manifest_list(changelog_metas)
            written.append(cl_name)
            self.store.fault_point("commit.after_changelog_list")
        delta_records = sum(e.file.row_count if e.kind == FileKind.ADD else -e.file.row_count for e in delta)
        prev_total = (latest.total_record_count or 0) if latest is not None else 0
        snapshot = Snapshot(
            id=(latest.id + 1) if latest is not None else 1,
            schema_id=self.store.latest_schema_id(),
            base_manifest_list=base_name,
            base_manifest_list_size=base_size,
            delta_manifest_list=delta_name,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=cl_name,
            changelog_manifest_list_size=cl_size,
            index_manifest=index_manifest,
            commit_user=self.commit_user,
            writer_version=WRITER_VERSION,
            commit_identifier=identifier,
            commit_kind=kind,
            time_millis=int(time.time() * 1000),
            total_record_count=prev_total + delta_records,
            delta_record_count=delta_records,
            # Java writes 0 (not null) when the commit produced no changelog, and an empty logOffsets.
            changelog_record_count=sum(e.file.row_count for e in changelog),
            log_offsets={},
            watermark=latest.watermark if latest is not None else None,
            properties=properties or None,
            uuid=str(uuid.uuid4()),
        )
        if not self.store.file_io.exists(self.store.paths.schema_file(self.store.schema.id)):
            raise NoSuchTableError(f"Cannot commit to {self.store.name}: the table was dropped")
        self.store.fault_point("commit.before_snapshot")
        # From here until the put answers, an interrupt leaves the snapshot's existence open.
        self._in_doubt = True
        try:
            created = self.store.snapshot_manager.try_commit(snapshot)
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


__all__ = ["Overwrite", "TableCommitter", "merge_entries"]
