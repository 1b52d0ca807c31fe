"""The full-compaction schedule produces the right run requests (expiry and orphan cleanup run on their
crons through automation conditions: tests/dagster/test_automation.py)."""

from datetime import UTC, datetime

import dagster as dg
import pytest

from lake_assets.defs.names import COMPACTION_TABLE_TAG, JOB_TAG


def _requests(defs: dg.Definitions, name: str) -> list[dg.RunRequest]:
    schedule = defs.resolve_schedule_def(name)
    with dg.build_schedule_context(scheduled_execution_time=datetime(2024, 1, 5, 2, 0, tzinfo=UTC),
                                   resources=defs.resources) as context:
        return schedule.evaluate_tick(context).run_requests


@pytest.mark.parametrize(
    ("name", "cron", "job", "op", "config", "tags"),
    [
        ("db_orders_full_compaction_schedule", "0 2 * * *", "db_orders_compaction_job", "db__orders_compaction",
         {"full": True}, {COMPACTION_TABLE_TAG: "db.orders", JOB_TAG: "compact"}),
        ("db_events_full_compaction_schedule", "0 3 * * *", "db_events_compaction_job", "db__events_compaction",
         {"full": True}, {COMPACTION_TABLE_TAG: "db.events", JOB_TAG: "compact"}),
    ],
)
def test_schedule_run_requests(lake_defs: dg.Definitions, name, cron, job, op, config, tags) -> None:
    schedule = lake_defs.resolve_schedule_def(name)
    assert schedule.cron_schedule == cron
    assert schedule.job_name == job
    assert schedule.execution_timezone == "UTC"
    [request] = _requests(lake_defs, name)
    assert config.items() <= request.run_config["ops"][op]["config"].items()
    assert tags.items() <= request.tags.items()
    assert request.tags["lake/trigger"] == "schedule"


def test_only_the_full_compaction_is_a_schedule(lake_defs: dg.Definitions) -> None:
    names = {s.name for s in lake_defs.get_repository_def().schedule_defs}
    assert names == {"db_orders_full_compaction_schedule", "db_events_full_compaction_schedule"}


def test_scheduled_run_config_is_valid_for_the_job(lake_defs: dg.Definitions) -> None:
    """The schedule's run config passes the job's config schema (what the daemon would launch)."""
    for name in ("db_orders_full_compaction_schedule", "db_events_full_compaction_schedule"):
        schedule = lake_defs.resolve_schedule_def(name)
        [request] = _requests(lake_defs, name)
        job = lake_defs.resolve_job_def(schedule.job_name)
        assert dg.validate_run_config(job, request.run_config)


def test_postpone_table_schedule_is_the_full_compaction(tmp_path) -> None:
    """A postpone-bucket table's ``compaction_cron`` runs the full compaction, as any table's: every
    partition's postponed rows moved and the real buckets fully compacted. A non-full run without
    partitions would be narrowed by the plan step to the breaching partitions (`policy_config`), so
    the cron would leave the other partitions' postponed rows; the sensor asks for the minimal fix."""
    from lake_assets.defs.config import load_config
    from lake_assets.defs.factory import build_definitions
    from tests.dagster.helpers import ONE_TABLE_SPARK

    (tmp_path / "lake.yaml").write_text(ONE_TABLE_SPARK + """
tables:
  - identifier: db.p
    schema: {id: BIGINT NOT NULL, v: STRING}
    primary_keys: [id]
    options: {bucket: -2}
    maintenance: {compaction_cron: "0 4 * * *", expiry_cron: null}
""")
    defs = build_definitions(load_config(tmp_path / "lake.yaml"))
    [request] = _requests(defs, "db_p_full_compaction_schedule")
    assert request.run_config["ops"]["db__p_compaction"]["config"]["full"] is True
    job = defs.resolve_job_def(defs.resolve_schedule_def("db_p_full_compaction_schedule").job_name)
    assert dg.validate_run_config(job, request.run_config)
