"""What a job reports through Pipes besides its materialization reaches Dagster whole: its check
results as checks of the asset that declares them, its warnings as log entries, its custom messages
as metadata (a summary) or log lines. A stand-in job in
a real child process under a real Pipes session (tests/dagster/stand_in_job.py, no Spark), read by
the real resource and the assets' own `job_check_specs` / `job_check_results`.

A declared check the job did not report fails (it is not known to hold); a reported check the
asset does not declare is named in the materialization's metadata and logged, never dropped.
"""

import json
from typing import Any

import dagster as dg

from lake_assets.defs.assets.job_checks import job_check_results, job_check_specs
from lake_assets.defs.assets.metadata import job_details, summary_metadata
from lake_assets.defs.resources import SparkJobResource
from lake_assets.job_checks import COMPACTED_SMALL_FILES, check_result
from tests.dagster.helpers import REPO, materialization_metadata

KEY = dg.AssetKey("stand_in")
DECLARED = COMPACTED_SMALL_FILES  # the asset stands in for a compaction: it declares the compact job's check


def _summary(**extra: Any) -> str:
    return json.dumps({"job": "stand_in", "status": "ok", "snapshot_id": 3, "commit_kind": "COMPACT", **extra})


def _run(instance: dg.DagsterInstance, *args: str) -> dg.ExecuteInProcessResult:
    spark = SparkJobResource(launcher="python", jobs_module="tests.dagster", timeout_seconds=120,
                             env={"PYTHONPATH": str(REPO)})

    @dg.asset(key=KEY, check_specs=job_check_specs(KEY, "compact"))
    def stand_in(context: dg.AssetExecutionContext, spark: SparkJobResource) -> dg.MaterializeResult:
        summary = spark.run_job(context, "stand_in_job", list(args))
        return dg.MaterializeResult(metadata={**summary_metadata(summary), **job_details(summary)},
                                    check_results=job_check_results(KEY, "compact", summary))

    return dg.materialize([stand_in], resources={"spark": spark}, instance=instance, raise_on_error=False)


def _evaluations(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_a_check_reported_through_pipes_is_the_declared_checks_result_and_wins_over_stdout() -> None:
    failed = check_result(DECLARED, False, {"buckets_over": 2, "over": ["dt=1 bucket 0: 5 small files"]})
    passed = check_result(DECLARED, True, {"buckets_over": 0})
    with dg.DagsterInstance.ephemeral() as instance:
        result = _run(instance, "--pipes", _summary(checks=[failed]), "--stdout", _summary(checks=[passed]))
        assert result.success
        check = _evaluations(result)[DECLARED.name]
        assert check.passed is False and check.severity == dg.AssetCheckSeverity.WARN
        assert {k: v.value for k, v in check.metadata.items()} == {"buckets_over": 2,
                                                                    "over": ["dt=1 bucket 0: 5 small files"]}
        # stored on the instance as the asset's check evaluation, after its materialization
        [record] = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(KEY, DECLARED.name), limit=1)
        assert record.evaluation is not None and record.evaluation.passed is False
        assert "job.checks" not in materialization_metadata(result)


def test_the_stdout_summary_carries_the_check_when_pipes_did_not() -> None:
    # a job whose environment lacks dagster_pipes reports nothing through Pipes
    with dg.DagsterInstance.ephemeral() as instance:
        result = _run(instance, "--pipes", _summary(), "--stdout", _summary(checks=[check_result(DECLARED, True, {})]))
        assert result.success and _evaluations(result)[DECLARED.name].passed is True


def test_a_declared_check_the_job_did_not_report_fails() -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        result = _run(instance, "--pipes", _summary(), "--stdout", _summary())
        assert result.success  # the materialization stands; the check says it is not known
        check = _evaluations(result)[DECLARED.name]
        assert check.passed is False and "reported no result for this check" in (check.description or "")


def test_a_reported_check_the_asset_does_not_declare_is_shown_and_logged() -> None:
    other = {"name": "made_up_check", "passed": False, "severity": "ERROR", "metadata": {"why": "a newer job"}}
    with dg.DagsterInstance.ephemeral() as instance:
        result = _run(instance, "--pipes", _summary(checks=[check_result(DECLARED, True, {}), other]))
        assert result.success
        assert set(_evaluations(result)) == {DECLARED.name}
        md = materialization_metadata(result)
        assert md["job.undeclared_checks"] == {"made_up_check": {"passed": False, "severity": "ERROR",
                                                                 "asset": "stand_in"}}
        logs = [entry.user_message for entry in instance.all_logs(result.run_id)]
        assert any("does not declare: made_up_check" in m for m in logs), logs


def test_the_jobs_warnings_arrive_as_dagster_log_entries() -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        result = _run(instance, "--warn", "a job warning through the jobs' logger", "--pipes",
                      _summary(checks=[check_result(DECLARED, True, {})]))
        assert result.success
        entries = [(e.level, e.user_message) for e in instance.all_logs(result.run_id)]
        assert any(level == 30 and "a job warning through the jobs' logger" in m for level, m in entries), entries


def test_custom_messages_fill_in_metadata_or_are_logged() -> None:
    # an op step's summary comes as a custom message (report_to_pipes); a materialization's keys win
    with dg.DagsterInstance.ephemeral() as instance:
        result = _run(instance, "--message", json.dumps({"commit_kind": "APPEND", "from_message": 7}),
                      "--message", json.dumps("a plain note"),
                      "--pipes", _summary(checks=[check_result(DECLARED, True, {})]))
        assert result.success
        md = materialization_metadata(result)
        assert md["commit_kind"] == "COMPACT" and md["job.from_message"] == 7
        logs = [entry.user_message for entry in instance.all_logs(result.run_id)]
        assert any("The job sent a message through Pipes: 'a plain note'" in m for m in logs), logs
