"""Schedules per table: the full compaction on ``compaction_cron``.

Expiry and orphan cleanup run on their crons through automation conditions (`defs/automation.py`);
the full compaction stays a schedule because it needs run config (``full: true``). A tick of a
table whose lake.yaml declaration differs from the table is skipped, naming the differences (its run
would fail before its job), as the small-file sensor skips it."""

from typing import TYPE_CHECKING

import dagster as dg

from lake_assets.defs.assets import CompactionConfig
from lake_assets.defs.config import LakeConfig, TableConfig
from lake_assets.defs.declaration import declaration_differences, skip_message
from lake_assets.defs.names import TableNames
from lake_assets.defs.resources import WarehouseResource

if TYPE_CHECKING:
    from lake_assets.defs.jobs import AssetJob


def build_table_schedules(
    config: LakeConfig, spec: TableConfig, jobs: "dict[str, AssetJob]"
) -> list[dg.ScheduleDefinition]:
    policy = spec.maintenance
    status = dg.DefaultScheduleStatus.RUNNING if config.automation.default_status == "running" \
        else dg.DefaultScheduleStatus.STOPPED
    # step → (cron, run config of the step's asset, Spark job tag value)
    plans: dict[str, tuple[str | None, dg.Config, str]] = {
        # full for every table, postpone-bucket ones included (there it moves every postponed row of every
        # partition and fully compacts the real buckets): the cron is the unconditional periodic full
        # compaction, and a non-full run without partitions would be narrowed to the breaching partitions
        # (`policy_config`), leaving the others' postponed rows; the sensor asks for the minimal fix
        "compaction": (policy.compaction_cron, CompactionConfig(full=True), "compact"),
    }
    return [
        _schedule(spec, step, cron, run_config, tag, jobs[step], config.timezone, status)
        for step, (cron, run_config, tag) in plans.items()
        if cron
    ]


def _schedule(
    spec: TableConfig,
    step: str,
    cron: str,
    run_config: dg.Config,
    job_tag: str,
    job: "AssetJob",
    timezone: str,
    status: dg.DefaultScheduleStatus,
) -> dg.ScheduleDefinition:
    names = TableNames(spec.identifier)
    name = names.schedule("full_compaction" if step == "compaction" else step)

    @dg.schedule(name=name, cron_schedule=cron, job=job, execution_timezone=timezone, default_status=status,
                 description=f"{step} of {names.identifier} on {cron} ({timezone})")
    def _run(context: dg.ScheduleEvaluationContext, warehouse: WarehouseResource) -> dg.RunRequest | dg.SkipReason:
        table = warehouse.table_if_exists(spec.identifier)  # a missing one: the run says "ingest first"
        if table is None and spec.branch is not None:  # no ingest makes a branch: say what is missing
            return dg.SkipReason(warehouse.missing_branch(spec.identifier))
        differs = [] if table is None else declaration_differences(
            table, spec.primary_keys, spec.partition_keys, spec.options)
        if differs:
            return dg.SkipReason(skip_message(spec.identifier, differs))
        return dg.RunRequest(
            run_config=dg.RunConfig(ops={names.op(step): run_config}),
            tags={**names.tags(job_tag), "lake/trigger": "schedule"},
        )

    return _run
