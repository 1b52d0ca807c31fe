"""Compaction: plan units per (partition, bucket) (`plan`), rewrite each unit (`rewrite`, with
the changelog of lookup / full-compaction units in `changelog`), commit the results (`run`).

A distributed job plans on a driver, runs units on executors (each unit is independent and
serializable) and commits once: it passes its runner to `compact` as ``run_tasks``.
"""

from lake_assets.ops.compact.plan import (
    CompactionPlan,
    CompactionTask,
    commits_since_last_compaction,
    needs_level0_compaction,
    plan_bucket,
    plan_compaction,
)
from lake_assets.ops.compact.rewrite import (
    compaction_parallelism,
    discard_outputs,
    run_compaction_task,
    run_compaction_tasks,
)
from lake_assets.ops.compact.run import CompactResult, RunTasks, compact, summarize

__all__ = [
    "CompactResult",
    "CompactionPlan",
    "CompactionTask",
    "RunTasks",
    "commits_since_last_compaction",
    "compact",
    "compaction_parallelism",
    "discard_outputs",
    "needs_level0_compaction",
    "plan_bucket",
    "plan_compaction",
    "run_compaction_task",
    "run_compaction_tasks",
    "summarize",
]
