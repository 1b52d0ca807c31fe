"""Distributed compaction: plan units on the driver, run them in Spark tasks, commit once.

Planning reads manifests only. Units are independent (one partition and bucket each), so the job
scales with executors. Small units share a Spark task (`group_units`): a Python task costs tens
of milliseconds of Spark overhead, more than compacting a small bucket. Each task reopens the
table from the warehouse URL and storage options and runs its units one after another.
The driver commits every unit's result as one COMPACT snapshot, with the committer's conflict
checks: if a concurrent commit removed an input file, nothing is committed (exit 4).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from lake_assets.errors import InvalidCommitMessageError, LakeError, UnsupportedFeatureError
from lake_assets.job_checks import SUMMARY_CHECKS
from lake_assets.ops.allocator import release_thread_memory
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact import CompactionPlan, CompactionTask, compact, run_compaction_task
from lake_assets.ops.postpone_table import is_postpone_table
from lake_assets.spark.jobs.args import base_parser, partition_arg, positive_int, typed_partition
from lake_assets.spark.jobs.compact_postpone import distributed_postpone_compact
from lake_assets.spark.jobs.context import JobContext
from lake_assets.spark.jobs.errors import UsageError
from lake_assets.spark.jobs.logs import log
from lake_assets.spark.jobs.run_checks import compacted_small_files
from lake_assets.spark.jobs.runner import main_entry, run_job
from lake_assets.spark.jobs.summary import health_summary
from lake_assets.spark.jobs.table_ref import TableRef
from lake_assets.spark.jobs.unit_failures import abort_and_raise
from lake_assets.spark.jobs.unit_results import compaction_message, unit_outcomes
from lake_assets.store.file_store import FileStore

JOB = "compact"


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(JOB, "Compact a table: compaction units run in Spark tasks, one commit.")
    parser.add_argument("--full", action="store_true",
                        help="rewrite everything into the last level (default: universal compaction)")
    partition_arg(parser, "compact only this partition (repeatable: several partitions; "
                  "several keys of one partition comma-separated)")
    parser.add_argument("--max-units", type=positive_int, default=None,
                        help="compact at most N units, the biggest first")
    return parser


def run_unit(ref: TableRef, task: CompactionTask) -> tuple[str, Any]:
    """Runs on an executor: compact one unit; ("ok", message) or ("error", (class name, text)).

    Lake errors (bad metadata, unsupported data) come back as values, so the driver can delete
    the other units' output; anything else (I/O) raises and Spark retries the task.
    """
    table = ref.open()
    try:
        return "ok", run_compaction_task(table.store, task)
    except LakeError as exc:
        return "error", (type(exc).__name__, str(exc))
    finally:
        # Spark reuses a Python worker for the next task: give back the pages this unit's merge
        # freed, or the worker stays at its peak between tasks (`ops/compact/rewrite` does the
        # same per unit in-process)
        release_thread_memory()


# A Spark task takes units up to this much input (more only for a single larger unit), so a big
# table still spreads over many tasks and a retried task redoes a bounded amount of work.
GROUP_TARGET_BYTES = 256 * 1024 * 1024
# Tasks per core for small tables: enough to even out units of unequal size.
TASKS_PER_SLOT = 4


def group_units(tasks: Sequence[CompactionTask], slots: int,
                target_bytes: int = GROUP_TARGET_BYTES) -> list[list[CompactionTask]]:
    """Units grouped into Spark tasks: ``max(slots × 4, input / target)`` groups (at most one per
    unit), filled biggest unit first into the least loaded group, so groups end up about even."""
    if not tasks:
        return []
    total = sum(t.input_bytes for t in tasks)
    count = min(len(tasks), max(slots * TASKS_PER_SLOT, -(-total // max(1, target_bytes))))
    groups: list[list[CompactionTask]] = [[] for _ in range(count)]
    loads = [0] * count
    for task in sorted(tasks, key=lambda t: -t.input_bytes):
        i = loads.index(min(loads))  # few groups (tens to hundreds): a scan is cheap enough
        groups[i].append(task)
        loads[i] += task.input_bytes
    return groups


class SparkUnits:
    """The ``run_tasks`` of `compact` in a Spark job: the plan's units run in Spark tasks
    (`group_units`), each reopening the table; what it ran is kept for the job's summary."""

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.plan_snapshot_id: int | None = None
        self.spark_tasks = 0
        self.messages: list[CommitMessage] = []

    def __call__(self, store: FileStore, plan: CompactionPlan) -> list[CommitMessage]:
        ctx = self.ctx
        self.plan_snapshot_id = plan.snapshot_id
        log.info("planned %d compaction units from snapshot %s", len(plan.tasks), plan.snapshot_id)
        if not plan.tasks:
            return []
        groups = group_units(plan.tasks, max(1, ctx.sc.defaultParallelism))
        self.spark_tasks = len(groups)
        ctx.describe(f"compact {len(plan.tasks)} units ({sum(t.input_bytes for t in plan.tasks)} bytes) "
                     f"in {len(groups)} tasks")
        ref = ctx.ref
        results = (
            ctx.sc.parallelize(groups, len(groups))
            .flatMap(lambda group: [run_unit(ref, task) for task in group])
            .collect()
        )
        # one result per unit, in plan order (each group's units in order, the groups in order)
        units = [task for group in groups for task in group]
        ok, failed = unit_outcomes(results, len(units))
        messages = []
        for i, value in ok:  # a unit whose result fails the checks fails the run (the others' output deleted)
            try:
                messages.append(compaction_message(i, units[i], value))
            except InvalidCommitMessageError as exc:
                failed.append((type(exc).__name__, str(exc)))
        if failed:
            abort_and_raise(store, messages, failed, "units")
        self.messages = messages
        ctx.describe("commit")
        return messages


def distributed_compact(
    ctx: JobContext,
    *,
    full: bool,
    partitions: Sequence[dict[str, Any]] | None = None,
    max_units: int | None = None,
) -> dict[str, Any]:
    """Plan, run the units on executors, commit once (`compact` with `SparkUnits`); the summary
    fields of the run."""
    if is_postpone_table(ctx.table.store):
        if max_units is not None:
            raise UnsupportedFeatureError(
                f"Cannot compact {ctx.table.name}: a postpone-bucket table's compaction moves every "
                "postponed row into real buckets; --max-units is not implemented for it"
            )
        return distributed_postpone_compact(ctx, partitions, full=full)
    units = SparkUnits(ctx)
    result = compact(ctx.table.store, full=full, partitions=partitions, max_units=max_units,
                     run_tasks=units).to_dict()
    messages = [m for m in units.messages if not m.is_empty()]
    result["commit_kind"] = "COMPACT" if result["snapshot_id"] is not None else None
    result["spark_tasks"] = units.spark_tasks
    result["plan_snapshot_id"] = units.plan_snapshot_id
    result["changelog_files"] = sum(len(m.compact_changelog) for m in messages)
    result["changelog_rows"] = sum(f.row_count for m in messages for f in m.compact_changelog)
    return result


def body(ctx: JobContext) -> dict[str, Any]:
    args = ctx.args
    partitions = [typed_partition(ctx.table, spec) for spec in args.partitions] or None
    if is_postpone_table(ctx.table.store) and args.max_units is not None:
        raise UsageError(f"{ctx.table.name} is a postpone-bucket table (bucket = -2): its compaction moves "
                         "every postponed row into real buckets; --max-units does not apply")
    ctx.start_run()
    before = health_summary(ctx.table)
    out = distributed_compact(ctx, full=args.full, partitions=partitions, max_units=args.max_units)
    out["full"] = args.full
    out["health_before"] = before
    out["health_after"] = health_summary(ctx.table)
    check = compacted_small_files(ctx.table, ctx.extras)  # the policy comes from Dagster (Pipes extras)
    if check is not None:
        out[SUMMARY_CHECKS] = [check]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the compact job; returns the exit code (see `lake_assets.spark.jobs`)."""
    return run_job(JOB, argv, build_parser(), body)


if __name__ == "__main__":
    main_entry(main)
