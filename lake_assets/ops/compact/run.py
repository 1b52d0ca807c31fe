"""Compaction end to end: plan, run the units, commit one COMPACT snapshot, summarize.

`compact` takes the runner of the units (``run_tasks``): threads in this process by default
(`run_compaction_tasks`), Spark tasks in `lake_assets.spark.jobs.compact`. The pieces stay
separate for callers that need them:

    plan = plan_compaction(store, full=False)          # reads manifests only
    messages = [run_compaction_task(store, t) for t in plan.tasks]
    TableCommitter(store, user).commit(messages, identifier)   # COMPACT snapshot, conflict-checked
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact.plan import CompactionPlan, plan_compaction
from lake_assets.ops.compact.rewrite import run_compaction_tasks
from lake_assets.ops.spill import spill_root
from lake_assets.store.read_once import reads_once
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

RunTasks = Callable[["FileStore", CompactionPlan], list[CommitMessage]]
"""Runs a plan's units; returns their messages in plan order. On failure it deletes what the
units wrote and raises: nothing is left for a commit that will not happen."""


@dataclass
class CompactResult:
    """What a compaction did (a per-run summary for jobs and Dagster metadata)."""

    snapshot_id: int | None
    tasks: int
    files_in: int
    files_out: int
    bytes_in: int
    bytes_out: int
    rows_in: int
    rows_out: int
    upgraded: int
    duration_s: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def summarize(messages: Sequence[CommitMessage], snapshot_id: int | None, tasks: int, started: float) -> CompactResult:
    """The summary of a run whose units gave ``messages``, committed as ``snapshot_id`` (or not)."""
    rewritten_in = [f for m in messages for f in m.compact_before]
    out_names = {(m.partition, m.bucket, f.file_name) for m in messages for f in m.compact_before}
    new_out = [f for m in messages for f in m.compact_after if (m.partition, m.bucket, f.file_name) not in out_names]
    upgraded = sum(1 for m in messages for f in m.compact_after
                   if (m.partition, m.bucket, f.file_name) in out_names)
    return CompactResult(
        snapshot_id=snapshot_id,
        tasks=tasks,
        files_in=len(rewritten_in),
        files_out=len(new_out) + upgraded,
        bytes_in=sum(f.file_size for f in rewritten_in),
        bytes_out=sum(f.file_size for m in messages for f in m.compact_after),
        rows_in=sum(f.row_count for f in rewritten_in),
        rows_out=sum(f.row_count for m in messages for f in m.compact_after),
        upgraded=upgraded,
        duration_s=round(time.perf_counter() - started, 3),
    )


@reads_once
def compact(
    store: FileStore,
    *,
    full: bool = False,
    partitions: Iterable[dict[str, Any]] | None = None,
    max_units: int | None = None,
    commit_user: str | None = None,
    parallelism: int | None = None,
    run_tasks: RunTasks | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
) -> CompactResult:
    """Plan, run and commit compaction; a COMPACT snapshot (or none if nothing to do).

    ``run_tasks`` runs the planned units (default: `run_compaction_tasks` in this process, up to
    ``parallelism`` at once, default the table's ``compaction.parallelism``). Units spill under
    ``spill_dir`` (`lake_assets.ops.spill.spill_root`), checked before anything is planned.
    """
    from lake_assets.ops.postpone import compact_postpone  # postpone imports this module
    from lake_assets.ops.postpone_table import is_postpone_table

    root = spill_root(spill_dir)

    if is_postpone_table(store):
        # the dedicated compaction of a postpone table moves its postponed rows into real buckets;
        # full then compacts every real bucket of the partitions into the top level
        store.require(Op.COMPACT)
        if max_units is not None or run_tasks is not None:
            raise UnsupportedFeatureError(
                f"Cannot compact {store.name}: a postpone-bucket table's compaction moves every postponed "
                "row into real buckets; max_units is not implemented for it, and a distributed runner "
                "goes to lake_assets.ops.postpone.compact_postpone (run_units), not run_tasks"
            )
        return compact_postpone(store, partitions=partitions, commit_user=commit_user, full=full, spill_dir=root)
    started = time.perf_counter()
    plan = plan_compaction(store, full=full, partitions=partitions, max_units=max_units)
    if run_tasks is None:
        messages = run_compaction_tasks(store, plan.tasks, parallelism=parallelism, spill_dir=root)
    else:
        messages = run_tasks(store, plan)
    messages = [m for m in messages if not m.is_empty()]
    user = commit_user or f"compact-{uuid.uuid4()}"
    ids: list[int] = []
    if messages:
        store.fault_point("compact.before_commit")
        # a dedicated compaction: its commit runs automatic tags and partition expiry even on a
        # write-only table, as Paimon's compact action (a copy of the table with write-only = false)
        ids = TableCommitter(store, user, write_only=False).commit(messages, check_committed=False)
    return summarize(messages, ids[-1] if ids else None, len(plan.tasks), started)
