"""The Pipes channel on its own: a real child process under a real Pipes session reports through
Pipes and prints a stdout summary (tests/dagster/stand_in_job.py, no Spark), and the two disagree.

What an asset shows is `SparkJobResource.run_job`'s summary read by the assets' own
`summary_metadata` and `job_details`. Pipes wins where both channels carry a key; the stdout line
fills in what Pipes did not carry and is the only source of a failed job's error (docs/dagster.md,
"What a job reports"). The real jobs' run through Pipes is tests/dagster/test_demo.py's.
"""

import json
import sys
from typing import Any

import dagster as dg

from lake_assets.defs.assets.metadata import job_details, summary_metadata
from lake_assets.defs.resources import SparkJobResource
from tests.dagster.helpers import REPO, materialization_metadata

STDOUT = {"job": "stand_in", "status": "ok", "snapshot_id": 1, "commit_kind": "APPEND", "rows_out": 5,
          "note": "from stdout", "only_stdout": 1}
PIPES = {"job": "stand_in", "status": "ok", "snapshot_id": 2, "commit_kind": "COMPACT", "rows_out": 7,
         "note": "from pipes", "only_pipes": {"a": [1, 2]}}


def _run(*args: str, instance: dg.DagsterInstance | None = None) -> dg.ExecuteInProcessResult:
    """Materialize an asset whose job is the stand-in run with ``args``, shown as the assets show a job."""
    spark = SparkJobResource(launcher="python", jobs_module="tests.dagster", timeout_seconds=120,
                             env={"PYTHONPATH": str(REPO)})

    @dg.asset
    def stand_in(context: dg.AssetExecutionContext, spark: SparkJobResource) -> dg.MaterializeResult:
        summary = spark.run_job(context, "stand_in_job", list(args))
        return dg.MaterializeResult(metadata={**summary_metadata(summary), **job_details(summary)})

    return dg.materialize([stand_in], resources={"spark": spark}, instance=instance, raise_on_error=False)


def _arg(summary: dict[str, Any]) -> str:
    return json.dumps(summary)


def test_pipes_wins_over_a_stdout_summary_that_disagrees() -> None:
    result = _run("--stdout", _arg(STDOUT), "--pipes", _arg(PIPES))
    assert result.success
    md = materialization_metadata(result)
    assert md["snapshot_id"] == 2 and md["commit_kind"] == "COMPACT" and md["rows_out"] == 7
    assert md["job.note"] == "from pipes"
    assert md["job.only_pipes"] == {"a": [1, 2]}  # a value only Pipes carried
    assert md["job.only_stdout"] == 1  # the stdout line fills in what Pipes did not carry


def test_pipes_alone_is_enough_without_a_stdout_summary() -> None:
    result = _run("--pipes", _arg(PIPES))
    assert result.success
    md = materialization_metadata(result)
    assert md["snapshot_id"] == 2 and md["commit_kind"] == "COMPACT" and md["rows_out"] == 7
    assert md["job.job"] == "stand_in" and md["job.note"] == "from pipes"
    assert "job.only_stdout" not in md


def test_the_stdout_summary_is_the_fallback_when_nothing_came_through_pipes() -> None:
    # a job whose environment lacks dagster_pipes reports nothing through Pipes (lake_assets.spark.jobs.pipes)
    result = _run("--stdout", _arg(STDOUT))
    assert result.success
    md = materialization_metadata(result)
    assert md["snapshot_id"] == 1 and md["commit_kind"] == "APPEND" and md["rows_out"] == 5
    assert md["job.note"] == "from stdout" and "job.only_pipes" not in md


def test_a_job_that_fails_after_reporting_through_pipes_fails_the_step_and_its_logs_arrive() -> None:
    error = {"job": "stand_in", "status": "error", "error": "Cannot commit to db.t: file x was already deleted"}
    with dg.DagsterInstance.ephemeral() as instance:
        result = _run("--log", "stand-in says hello through pipes", "--pipes", _arg(PIPES),
                      "--stdout", _arg(error), "--exit", "3", instance=instance)
        assert not result.success
        assert not result.get_asset_materialization_events()  # what it reported before failing is not shown
        [failure] = result.get_step_failure_events()
        message = failure.step_failure_data.error.message
        assert "Spark job stand_in_job failed, exit code 3" in message
        assert "Cannot commit to db.t: file x was already deleted" in message  # the stdout error JSON
        logs = [entry.user_message for entry in instance.all_logs(result.run_id)]
        assert any("stand-in says hello through pipes" in m for m in logs), logs


def test_the_stand_in_runs_in_a_child_process() -> None:
    # the channel tests are about the transport: the job must not run in the test process
    command = SparkJobResource(launcher="python", jobs_module="tests.dagster").command("stand_in_job", [])
    assert command[:3] == [sys.executable, "-m", "tests.dagster.stand_in_job"]
