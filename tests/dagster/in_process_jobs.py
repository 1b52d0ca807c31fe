"""The Dagster assets' Spark jobs run in the test process, on the session's shared SparkSession.

A real launcher run (`SparkJobResource.run_job`: a child process with its own Spark driver JVM)
costs 10-15 CPU s. Each job kind keeps tests that go through a real launcher (ingest:
tests/dagster/test_ingest.py's ``ingested``, python, and the demo's backfill of a range through the
`dagster` CLI, spark-submit; compact, changelog, expire: the demo, spark-submit, whose backfill and
compaction materializations tests/dagster/test_demo.py checks, test_postpone_visibility.py's
compaction, python, and test_branch_maintenance.py's compaction of a branch, spark-submit;
remove_orphans: test_maintenance_assets.py, python; expire_partitions: test_lifecycle_assets.py,
python); a test about what an asset asks of a job and does with its
answer uses `in_process_jobs` instead. The job is the real one (its ``main``, arguments as the
asset builds them), its summary is its one stdout line, and what it reports through Pipes is sent by
the job's own `report_to_pipes` to a recording stand-in of the Pipes context (with the extras the
asset passed), turned into results as Dagster's Pipes message handler does
(`metadata_map_from_external`) and read by the resource's own `reported_summary`: only the transport
(a child process, Pipes' files) is left out.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import dagster as dg
import pytest
from dagster._core.pipes.context import metadata_map_from_external

from lake_assets.defs.resources.pipes import CompletedJob
from lake_assets.defs.resources.spark import SparkJobResource, job_failure, parse_summary, reported_summary
from lake_assets.spark.jobs import runner


class RecordingPipes:
    """What the jobs use of a `dagster_pipes.PipesContext`, recording what they report as Dagster's
    message handler turns it into results (asset keys as Pipes spells them)."""

    def __init__(self, extras: Mapping[str, Any], asset_keys: Sequence[dg.AssetKey]) -> None:
        self.extras = dict(extras)
        self.asset_keys = [key.to_user_string() for key in asset_keys]
        self.is_asset_step = bool(asset_keys)
        self.log = logging.getLogger("tests.in_process_pipes")
        self.results: list[dg.MaterializeResult | dg.AssetCheckResult] = []
        self.custom_messages: list[Any] = []

    def _key(self, asset_key: str | None) -> dg.AssetKey:
        assert asset_key is not None or len(self.asset_keys) == 1, "Pipes needs the key of a multi-asset step"
        return dg.AssetKey.from_escaped_user_string(asset_key or self.asset_keys[0])

    def report_asset_materialization(self, metadata: Mapping[str, Any] | None = None,
                                     asset_key: str | None = None) -> None:
        self.results.append(dg.MaterializeResult(asset_key=self._key(asset_key),
                                                 metadata=metadata_map_from_external(dict(metadata or {}))))

    def report_asset_check(self, check_name: str, passed: bool, severity: str = "ERROR",
                           metadata: Mapping[str, Any] | None = None, asset_key: str | None = None) -> None:
        self.results.append(dg.AssetCheckResult(
            asset_key=self._key(asset_key), check_name=check_name, passed=passed,
            severity=dg.AssetCheckSeverity(severity), metadata=metadata_map_from_external(dict(metadata or {}))))

    def report_custom_message(self, payload: Any) -> None:
        self.custom_messages.append(payload)


def run_job_in_process(self: SparkJobResource, context: dg.AssetExecutionContext | dg.OpExecutionContext,
                       job_name: str, args: Sequence[str], env: Mapping[str, str] | None = None,
                       extras: Mapping[str, Any] | None = None, *, ran: list[str],
                       monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`SparkJobResource.run_job`'s contract, with the job's ``main`` called here: the summary with
    what the job reported through (recorded) Pipes, a `dagster.Failure` built by the resource's own
    `job_failure`."""
    assert not env, f"in-process jobs cannot take an environment: {env}"  # a local warehouse has none
    module = importlib.import_module(f"{self.jobs_module}.{job_name}")
    keys = sorted(context.selected_asset_keys) if context.has_assets_def else []
    pipes = RecordingPipes(extras or {}, keys)

    @contextlib.contextmanager
    def recording() -> Iterator[RecordingPipes]:
        yield pipes

    out = io.StringIO()
    with monkeypatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setattr(runner, "pipes_context", recording)
        # no --conf: the shared session's settings stay what the other tests expect
        code = module.main(list(args))
    ran.append(job_name)
    summary = parse_summary(out.getvalue())
    done = CompletedJob(code, out.getvalue(), pipes.results, custom_messages=pipes.custom_messages)
    if code != 0:
        raise job_failure(job_name, done, summary)
    return reported_summary(context, summary, done)


def patch_run_job(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every `SparkJobResource` runs its jobs in this process (on the active session) until the
    patch is undone; returns the list of the jobs run."""
    ran: list[str] = []

    def run_job(self: SparkJobResource, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return run_job_in_process(self, *args, **kwargs, ran=ran, monkeypatch=monkeypatch)

    monkeypatch.setattr(SparkJobResource, "run_job", run_job)
    return ran
