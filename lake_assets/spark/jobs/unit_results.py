"""What the compact jobs' executors hand the driver, checked before the commit acts on it.

Each unit's task returns ``("ok", result)`` or ``("error", (lake error class name, text))``
(`lake_assets.spark.jobs.compact.run_unit`, `compact_postpone.run_unit`), pickled by Spark. A
`CommitMessage` checks its own fields when unpickled; here the driver checks the rest: one result
per planned unit, in plan order, of that shape; a unit's messages only for the unit's partition
and buckets, and as compaction input only the files it planned (the committer would drop any
live file a message lists as compacted: a compaction changes no row, so nothing else may go).
A failure raises `InvalidCommitMessageError` naming the unit and the field; the job then
deletes the output of the units that passed (`unit_failures.abort_and_raise`) and commits nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lake_assets.errors import InvalidCommitMessageError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact import CompactionTask
from lake_assets.ops.postpone import PostponeUnit
from lake_assets.table_support import POSTPONE_BUCKET


def _bad(unit: int, problem: str) -> InvalidCommitMessageError:
    return InvalidCommitMessageError(f"Invalid result of compaction unit {unit}: {problem}. Nothing was committed.")


def unit_outcomes(results: Sequence[object], units: int) -> tuple[list[tuple[int, Any]], list[tuple[str, str]]]:
    """The ``(unit index, result)`` of units that succeeded and the ``(class name, text)`` of those
    that failed, from ``results`` (one per unit, in plan order)."""
    if len(results) != units:
        raise InvalidCommitMessageError(
            f"Invalid results of a compaction: {len(results)} for {units} planned units. Nothing was committed.")
    ok: list[tuple[int, Any]] = []
    failed: list[tuple[str, str]] = []
    for i, r in enumerate(results):
        if not isinstance(r, tuple) or len(r) != 2 or r[0] not in ("ok", "error"):
            raise _bad(i, f"{type(r).__name__} {r!r:.60} is not ('ok', result) or ('error', (class, text))")
        status, value = r
        if status == "ok":
            ok.append((i, value))
        elif isinstance(value, tuple) and len(value) == 2 and all(isinstance(x, str) for x in value):
            failed.append(value)
        else:
            raise _bad(i, f"its error {value!r:.80} is not (class name, text)")
    return ok, failed


def compaction_message(i: int, task: CompactionTask, value: object) -> CommitMessage:
    """A regular unit's message: its own partition and bucket, no new files, and as compaction
    input only the unit's planned inputs and deletion-vector index files."""
    if not isinstance(value, CommitMessage):
        raise _bad(i, f"it returned {type(value).__name__}, not a CommitMessage")
    if (value.partition, value.bucket) != (task.partition, task.bucket):
        raise _bad(i, f"its message is for bucket {value.bucket} of another partition or bucket than the "
                      f"unit's (bucket {task.bucket})")
    _no_new_files(i, value)
    planned = {f.file_name for f in task.input_files}
    _only_planned(i, [f.file_name for f in value.compact_before], planned, "compact_before")
    _only_planned(i, [e.file_name for e in value.index_before], {e.file_name for e in task.dv_entries},
                  "index_before")
    return value


def postpone_messages(i: int, unit: PostponeUnit, value: object) -> list[CommitMessage]:
    """A postpone unit's messages: its partition only, real buckets below its bucket count, and as
    the postponed input only the unit's postpone files."""
    if not isinstance(value, list) or not all(isinstance(m, CommitMessage) for m in value):
        raise _bad(i, f"it returned {type(value).__name__}, not a list of CommitMessage")
    planned = {e.file.file_name for e in unit.files}
    for m in value:
        if m.partition != unit.partition:
            raise _bad(i, f"a message for bucket {m.bucket} is of another partition than the unit's")
        _no_new_files(i, m)
        if m.bucket == POSTPONE_BUCKET:
            _only_planned(i, [f.file_name for f in m.compact_before], planned, "compact_before")
            if m.compact_after or m.index_before or m.index_after or m.compact_changelog:
                raise _bad(i, "its bucket-postpone message carries more than the postponed files it replaced")
        elif not (0 <= m.bucket < unit.buckets and m.total_buckets == unit.buckets):
            raise _bad(i, f"a message names bucket {m.bucket} of {m.total_buckets}; the unit's partition "
                          f"has {unit.buckets} buckets")
    return value


def _no_new_files(i: int, m: CommitMessage) -> None:
    for field in ("new_files", "new_changelog"):
        if getattr(m, field):
            raise _bad(i, f"bucket {m.bucket} carries {field} ({getattr(m, field)[0].file_name}, ...); "
                          "a compaction writes only compaction output")


def _only_planned(i: int, names: Sequence[str], planned: set[str], field: str) -> None:
    for name in names:
        if name not in planned:
            raise _bad(i, f"{field} lists {name}, which the unit did not plan to compact")
