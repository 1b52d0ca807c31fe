"""What Spark write tasks hand the driver, checked before the commit acts on it.

A task's `LakeCommitMessage` crosses from an executor's Python worker to the driver's (pickled by
Spark): its commit user, its core messages as JSON and its sequence stride are trusted by nothing.
`CommitMessage.from_json` checks each core message's own fields (file names, numbers, ranges); here
the envelope is checked, and what a write task's write-only writer cannot have produced is refused:
compaction input or output (an APPEND commit would drop the live files a message lists as
compacted) and index files other than a dynamic-bucket writer's hash index. Each failure raises
`InvalidCommitMessageError` naming the task and the field; the commit then commits nothing, and
Spark's abort deletes only the files the tasks that passed the checks wrote (`decode_lenient`),
never a file a snapshot references (`TableCommitter.abort`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql.datasource import WriterCommitMessage

from lake_assets.errors import InvalidCommitMessageError, LakeError
from lake_assets.ops.commit_message import CommitMessage, validate_messages
from lake_assets.spark.task_sequences import TASK_SLOTS, TaskFiles
from lake_assets.spark.write_task import LakeCommitMessage
from lake_assets.spec.hash_index import HASH_INDEX

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)

# A commit user is an id (a UUID, ``spark-<query id>``): far shorter than this.
MAX_COMMIT_USER = 1024


def _bad(task: int, problem: str) -> InvalidCommitMessageError:
    return InvalidCommitMessageError(f"Invalid result of Spark write task {task}: {problem}. Nothing was committed.")


def checked_task(task: int, m: object, store: FileStore) -> tuple[str, TaskFiles]:
    """One task's result: its commit user and core messages with their stride, checked against
    the table too (`validate_messages`: buckets, partitions, levels, schema ids); raises
    `InvalidCommitMessageError` naming the task and the field."""
    if m is None:
        raise _bad(task, "it returned no result (the task did not finish)")
    if not isinstance(m, LakeCommitMessage):
        raise _bad(task, f"it returned {type(m).__name__}, not a LakeCommitMessage")
    user = getattr(m, "commit_user", None)
    if not isinstance(user, str) or not 0 < len(user) <= MAX_COMMIT_USER or not user.isprintable():
        raise _bad(task, f"commit_user is {user!r:.80} (a printable string of 1 to {MAX_COMMIT_USER} characters)")
    stride = getattr(m, "sequence_stride", None)
    if isinstance(stride, bool) or stride not in (1, TASK_SLOTS):
        raise _bad(task, f"sequence_stride is {stride!r:.40} (1, or {TASK_SLOTS} for unrouted rows)")
    texts = getattr(m, "messages", None)
    if not isinstance(texts, tuple) or not all(isinstance(t, str) for t in texts):
        raise _bad(task, f"messages is {type(texts).__name__}, not a tuple of JSON texts")
    decoded = []
    for i, text in enumerate(texts):
        try:
            core = CommitMessage.from_json(text)
        except LakeError as exc:  # invalid JSON, unsafe names, impossible numbers; external paths
            raise _bad(task, f"message {i}: {exc}") from None
        for field in ("compact_before", "compact_after", "compact_changelog"):
            if getattr(core, field):
                raise _bad(task, f"message {i} (bucket {core.bucket}) carries {field} "
                                 f"({getattr(core, field)[0].file_name}, ...); a write task never compacts")
        for entry in (*core.index_before, *core.index_after):
            if entry.index_type != HASH_INDEX:
                raise _bad(task, f"message {i} (bucket {core.bucket}) carries a {entry.index_type} index file "
                                 f"{entry.file_name}; a write task writes only a dynamic bucket's hash index")
        decoded.append(core)
    try:
        validate_messages(store, decoded)
    except InvalidCommitMessageError as exc:
        raise _bad(task, str(exc).removesuffix(" Nothing was committed.")) from None
    return user, TaskFiles(decoded, stride)


def checked_tasks(messages: Sequence[WriterCommitMessage | None], store: FileStore, commit_user: str | None = None
                  ) -> tuple[str | None, list[TaskFiles]]:
    """Every task's result checked (`checked_task`), all of one commit user - ``commit_user``
    when given (the batch writer's own); returns that user (None without tasks) and the tasks."""
    users: set[str] = set()
    tasks = []
    for i, m in enumerate(messages):
        user, files = checked_task(i, m, store)
        if commit_user is not None and user != commit_user:
            raise _bad(i, f"commit_user is {user!r:.80}, not this write's {commit_user!r}")
        users.add(user)
        tasks.append(files)
    if len(users) > 1:
        raise InvalidCommitMessageError(
            f"Results of one Spark write carry several commit users: {sorted(users)!r:.200}. Nothing was committed.")
    return next(iter(users), None), tasks


def decode_lenient(messages: Sequence[WriterCommitMessage | None], store: FileStore, commit_user: str | None = None
                   ) -> tuple[str | None, list[CommitMessage]]:
    """For an abort: the commit user and core messages of the tasks whose results pass
    `checked_task` and name ``commit_user`` (when given: the batch writer's own). The others, and
    tasks that did not finish, are skipped with a warning: their files, if any, are orphans for
    `remove_orphan_files`. Without ``commit_user`` the user is None, and no message is returned,
    unless every task that passed names the same one."""
    users: set[str] = set()
    out: list[CommitMessage] = []
    for i, m in enumerate(messages):
        if m is None:
            continue
        try:
            user, files = checked_task(i, m, store)
            if commit_user is not None and user != commit_user:
                raise _bad(i, f"commit_user is {user!r:.80}, not this write's {commit_user!r}")
        except InvalidCommitMessageError as exc:
            log.warning("Not deleting what Spark write task %d reported: %s", i, exc)
            continue
        users.add(user)
        out += files.messages
    if len(users) != 1:
        return None, []
    return users.pop(), out
