"""Compaction: plan units per (partition, bucket) (`plan`), rewrite each unit (`rewrite`, with
the changelog of lookup / full-compaction units in `changelog`), run many units at once
(`unit_pool`), commit the results (`run`).

A distributed job plans on a driver, runs units on executors (each unit is independent and
serializable) and commits once: it passes its runner to `compact` as ``run_tasks``.

The names are imported on first use (`lake_assets.lazy_exports`): a writer's inline compaction
imports `plan` and `rewrite` only, not the dedicated compaction's `run` (issue 17 §3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lake_assets.ops.compact.plan import (
        CompactionPlan,
        CompactionTask,
        commits_since_last_compaction,
        needs_level0_compaction,
        plan_bucket,
        plan_compaction,
    )
    from lake_assets.ops.compact.rewrite import run_compaction_task
    from lake_assets.ops.compact.run import CompactResult, RunTasks, compact, summarize
    from lake_assets.ops.compact.unit_pool import compaction_parallelism, discard_outputs, run_compaction_tasks

_PLAN = "lake_assets.ops.compact.plan"
_REWRITE = "lake_assets.ops.compact.rewrite"
_RUN = "lake_assets.ops.compact.run"
_UNIT_POOL = "lake_assets.ops.compact.unit_pool"

# public name -> the module that defines it
_EXPORTS = {
    "CompactResult": _RUN,
    "CompactionPlan": _PLAN,
    "CompactionTask": _PLAN,
    "RunTasks": _RUN,
    "commits_since_last_compaction": _PLAN,
    "compact": _RUN,
    "compaction_parallelism": _UNIT_POOL,
    "discard_outputs": _UNIT_POOL,
    "needs_level0_compaction": _PLAN,
    "plan_bucket": _PLAN,
    "plan_compaction": _PLAN,
    "run_compaction_task": _REWRITE,
    "run_compaction_tasks": _UNIT_POOL,
    "summarize": _RUN,
}

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

if not TYPE_CHECKING:  # checkers see the imports above, and a name not among them stays an error
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
