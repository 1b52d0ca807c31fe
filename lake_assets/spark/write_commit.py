"""The driver side of a Spark write: the tasks' messages decoded, the checks on who wrote what, and
the commit retried while its outcome is unknown (`lake_assets.spark.writer` runs them).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql.datasource import WriterCommitMessage

from lake_assets.errors import CommitStateUnknownError, LakeError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spark.task_sequences import BucketWriterConflictError, TaskFiles
from lake_assets.spark.write_task import LakeCommitMessage
from lake_assets.table_support import cross_partition_fields

if TYPE_CHECKING:
    from lake_assets.ops.commit import Overwrite, TableCommitter
    from lake_assets.spark.source_options import SourceOptions
    from lake_assets.table import Table

log = logging.getLogger(__name__)

# A commit whose outcome is unknown (storage error while creating the snapshot) is retried with
# the same user and identifier; the committer then finds out whether it landed.
UNKNOWN_STATE_RETRIES = 3
# Test hooks (never set in production): make a commit fail once, before or after its snapshot is
# created, or with an unknown outcome instead of it ("unknown"), while the marker file exists.
# Options, not env vars: Spark's Python workers inherit the environment of the JVM's start, not of
# the test that sets them later.
FAIL_COMMIT = "test.fail-commit"
FAIL_COMMIT_MARKER = "test.fail-commit-marker"


class DynamicBucketWriterConflictError(BucketWriterConflictError):
    """Several tasks wrote a dynamic-bucket table in one commit (each with its own bucket assigner)."""


class InjectedCommitFailure(LakeError):
    """Raised by the ``test.fail-commit`` hook."""


def decode(tasks: Sequence[TaskFiles]) -> list[CommitMessage]:
    """The core commit messages of checked tasks (`task_outputs.checked_tasks`), in task order."""
    return [m for t in tasks for m in t.messages]


def check_one_dynamic_bucket_writer(table: Table, tasks: Sequence[WriterCommitMessage | None]) -> None:
    """Refuse a write of a dynamic-bucket table by more than one task.

    Each task's writer assigns buckets from the hash index it loaded, without seeing the other
    tasks' new keys: two of them could give one new key two buckets, and a read would return it
    twice. Paimon supports one writer (assigner) per dynamic-bucket table; `write_table` and
    `repartition_by_bucket` send such a table's rows to one task.
    """
    if table.schema.core_options.bucket != -1 or not table.primary_keys:
        return
    writers = [m for m in tasks if isinstance(m, LakeCommitMessage) and m.messages]
    if len(writers) > 1 and cross_partition_fields(table.schema):
        # each task's writer bootstrapped a key index of its own and placed keys from it
        raise DynamicBucketWriterConflictError(
            f"Cannot commit to {table.name}: {len(writers)} Spark tasks wrote this cross-partition upsert table "
            "(bucket = -1, a primary key without every partition field) in one commit, each routing rows "
            "with a key index of its own, so a key could end up in two partitions. Nothing was committed. "
            "Paimon supports one writer per dynamic-bucket table: write with lake_assets.spark.write_table(...), "
            "or repartition the input with lake_assets.spark.repartition_by_bucket(...) (one task) before "
            "df.write / df.writeStream."
        )
    if len(writers) > 1:
        raise DynamicBucketWriterConflictError(
            f"Cannot commit to {table.name}: {len(writers)} Spark tasks wrote this dynamic-bucket table "
            "(bucket = -1) in one commit, each assigning buckets on its own, so a new key could land in "
            "two buckets. Nothing was committed. Paimon supports one writer per dynamic-bucket table: "
            "write with lake_assets.spark.write_table(...), or repartition the input with "
            "lake_assets.spark.repartition_by_bucket(...) (one task) before df.write / df.writeStream."
        )


def commit_with_retry(
    committer: TableCommitter,
    messages: list[CommitMessage],
    identifier: int,
    overwrite: Overwrite | None,
    *,
    check_committed: bool,
) -> list[int]:
    """Commit; when the outcome is unknown, ask again with the same identifier (dedup decides)."""
    for attempt in range(UNKNOWN_STATE_RETRIES + 1):
        try:
            return committer.commit(messages, identifier, overwrite=overwrite,
                                    check_committed=check_committed or attempt > 0)
        except CommitStateUnknownError:
            if attempt == UNKNOWN_STATE_RETRIES:
                raise
    raise AssertionError("unreachable")


def _in_doubt_marker(table_root: str, commit_user: str, identifier: int) -> str:
    digest = hashlib.sha256(f"{table_root}\0{commit_user}\0{identifier}".encode()).hexdigest()[:32]
    return os.path.join(tempfile.gettempdir(), f"lake-commit-in-doubt-{digest}")


def commit_marking_doubt(committer: TableCommitter, options: SourceOptions, messages: list[CommitMessage],
                         identifier: int, overwrite: Overwrite | None, *, check_committed: bool) -> list[int]:
    """`commit_with_retry`, leaving a mark on the driver's disk when its outcome stays unknown.

    Spark calls the writer's ``abort`` after a failed ``commit``, in another Python worker (each
    call unpickles the writer anew), so the mark is how ``abort`` learns that a snapshot may still
    reference the files (`keeps_files_in_doubt`)."""
    marker = _in_doubt_marker(committer.store.paths.meta_root, committer.commit_user, identifier)
    try:
        injected_failure(options, "unknown")
        ids = commit_with_retry(committer, messages, identifier, overwrite, check_committed=check_committed)
    except BaseException as exc:
        if isinstance(exc, CommitStateUnknownError) or committer.may_have_landed:
            with open(marker, "w", encoding="utf-8"):
                pass
        raise
    with contextlib.suppress(FileNotFoundError):
        os.remove(marker)  # one a crashed driver left before this replay landed
    return ids


def keeps_files_in_doubt(table: Table, commit_user: str, identifier: int) -> bool:
    """Whether ``abort`` must keep the files of ``commit_user``'s ``identifier``: its commit's
    outcome stayed unknown (`commit_marking_doubt`), so a snapshot may reference them, now or once
    an in-flight put lands. They are left to orphan removal (ops/orphans.py), which deletes them
    only once no snapshot references them and they are older than its ``older_than``."""
    marker = _in_doubt_marker(table.store.paths.meta_root, commit_user, identifier)
    if not os.path.exists(marker):
        return False
    log.warning("Not deleting the files of commit %s of %s to %s: its outcome is unknown (orphan removal "
                "collects them if no snapshot references them)", identifier, commit_user, table.name)
    with contextlib.suppress(FileNotFoundError):
        os.remove(marker)
    return True


def landed(table: Table, commit_user: str, identifier: int, since_snapshot: int | None) -> bool:
    """Did ``commit_user`` commit ``identifier`` in a snapshot after ``since_snapshot``?"""
    sm = table.snapshot_manager
    latest = sm.latest_id()
    if latest is None:
        return False
    start = max((since_snapshot or 0) + 1, sm.earliest_id() or 1)
    for sid in range(latest, start - 1, -1):
        snap = sm.try_snapshot(sid)
        if snap is not None and snap.commit_user == commit_user and snap.commit_identifier >= identifier:
            return True
    return False


def injected_failure(options: SourceOptions, point: str) -> None:
    """The ``test.fail-commit`` hook: fail once at ``point`` while the marker file exists."""
    if options.raw.get(FAIL_COMMIT) != point:
        return
    marker = options.raw.get(FAIL_COMMIT_MARKER)
    if marker and os.path.exists(marker):
        os.remove(marker)
        if point == "unknown":  # as a snapshot put whose outcome the storage never told
            raise CommitStateUnknownError(f"injected commit failure {point}: outcome of the snapshot put unknown")
        raise InjectedCommitFailure(f"injected commit failure {point} the snapshot")
