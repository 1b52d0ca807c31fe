"""The compact job on postpone-bucket tables (``bucket = -2``): move the postponed rows into real
buckets, one Spark task per partition, one COMPACT commit.

The driver plans with `plan_postpone` (manifests only): one unit per partition with postponed
files, carrying the partition's bucket count (the one its real buckets record, else
``postpone.default-bucket-num`` or the estimate). Each Spark task reopens the table and writes its
unit's rows into those buckets (`run_postpone_unit`); the driver commits every unit's messages as
one COMPACT snapshot with the committer's conflict checks, as the regular compact job does. A
re-run after a success finds nothing in ``bucket-postpone`` and commits nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from lake_assets.errors import InvalidCommitMessageError, LakeError
from lake_assets.ops.allocator import release_thread_memory
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.postpone import PostponeUnit, compact_postpone, run_postpone_unit
from lake_assets.spark.jobs.context import JobContext
from lake_assets.spark.jobs.logs import log
from lake_assets.spark.jobs.table_ref import TableRef
from lake_assets.spark.jobs.unit_failures import abort_and_raise
from lake_assets.spark.jobs.unit_results import postpone_messages, unit_outcomes
from lake_assets.store.file_store import FileStore


def run_unit(ref: TableRef, unit: PostponeUnit, commit_user: str) -> tuple[str, Any]:
    """Runs on an executor: one partition's postponed rows into its real buckets; ("ok", messages)
    or ("error", (class name, text)).

    Lake errors come back as values so the driver can delete the other units' output; anything
    else (I/O) raises and Spark retries the task (a retried task writes new files under new names;
    the failed attempt's files are orphans no snapshot references).
    """
    table = ref.open()
    try:
        return "ok", run_postpone_unit(table.store, unit, commit_user)
    except LakeError as exc:
        return "error", (type(exc).__name__, str(exc))
    finally:
        # Spark reuses a Python worker for the next task: give back the pages this unit's merge
        # freed, or the worker stays at its peak between tasks (`ops/compact/rewrite` does the
        # same per unit in-process)
        release_thread_memory()


class SparkPostponeUnits:
    """The ``run_units`` of `compact_postpone` in a Spark job: a Spark task per partition; what it
    planned is kept for the job's summary."""

    def __init__(self, ctx: JobContext, commit_user: str) -> None:
        self.ctx = ctx
        self.commit_user = commit_user
        self.units: list[PostponeUnit] = []
        self.spark_tasks = 0
        self.messages: list[CommitMessage] = []

    def __call__(self, store: FileStore, units: list[PostponeUnit]) -> list[CommitMessage]:
        ctx = self.ctx
        self.units = list(units)
        log.info("planned %d postpone units (partitions with postponed files or buckets to compact)", len(units))
        if not units:
            return []
        self.spark_tasks = len(units)
        ctx.describe(f"move {sum(len(u.files) for u in units)} postponed files "
                     f"({sum(u.input_bytes for u in units)} bytes) into real buckets in {len(units)} tasks")
        ref, user = ctx.ref, self.commit_user
        results = (
            ctx.sc.parallelize(units, len(units))
            .map(lambda unit: run_unit(ref, unit, user))
            .collect()
        )
        ok, failed = unit_outcomes(results, len(units))
        messages = []
        for i, value in ok:  # a unit whose result fails the checks fails the run (the others' output deleted)
            try:
                messages += postpone_messages(i, units[i], value)
            except InvalidCommitMessageError as exc:
                failed.append((type(exc).__name__, str(exc)))
        if failed:
            abort_and_raise(store, messages, failed, "partitions")
        self.messages = messages
        ctx.describe("commit")
        return messages


def postpone_summary(store: FileStore, units: Sequence[PostponeUnit]) -> dict[str, Any]:
    """What the run moved: postponed files and rows, and per partition its files, rows and the
    real bucket count they went into."""
    return {
        "postponed_files": sum(len(u.files) for u in units),
        "postponed_rows": sum(u.input_rows for u in units),
        "postpone_partitions": [
            {"partition": store.partition_path_of(u.partition), "buckets": u.buckets,
             "files": len(u.files), "rows": u.input_rows}
            for u in units
        ],
    }


def distributed_postpone_compact(ctx: JobContext, partitions: Sequence[dict[str, Any]] | None,
                                 *, full: bool = False) -> dict[str, Any]:
    """Plan, run the partitions on executors, commit once; the summary fields of the run. ``full``
    also compacts every real bucket of the partitions into the top level (`compact_postpone`)."""
    store = ctx.table.store
    user = f"compact-{uuid.uuid4()}"
    units = SparkPostponeUnits(ctx, user)
    result = compact_postpone(store, partitions=partitions, commit_user=user, run_units=units, full=full).to_dict()
    result["commit_kind"] = "COMPACT" if result["snapshot_id"] is not None else None
    result["spark_tasks"] = units.spark_tasks
    result["changelog_files"] = sum(len(m.compact_changelog) for m in units.messages)
    result["changelog_rows"] = sum(f.row_count for m in units.messages for f in m.compact_changelog)
    return result | postpone_summary(store, units.units)
