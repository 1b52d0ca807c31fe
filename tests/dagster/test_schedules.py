"""The full-compaction schedule produces the right run requests (expiry and orphan cleanup run on their
crons through automation conditions: tests/dagster/test_automation.py)."""

from datetime import UTC, datetime

import dagster as dg
import pytest

from lake_assets.defs.names import COMPACTION_TABLE_TAG, JOB_TAG


def _requests(defs: dg.Definitions, name: str) -> list[dg.RunRequest]:
    schedule = defs.resolve_schedule_def(name)
    context = dg.build_schedule_context(scheduled_execution_time=datetime(2024, 1, 5, 2, 0, tzinfo=UTC))
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
