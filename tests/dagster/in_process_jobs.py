"""The Dagster assets' Spark jobs run in the test process, on the session's shared SparkSession.

A real launcher run (`SparkJobResource.run_job`: a child process with its own Spark driver JVM)
costs 10-15 CPU s. Each job kind keeps tests that go through a real launcher (ingest:
tests/dagster/test_ingest.py's ``ingested``, python, and the demo's backfill of a range through the
`dagster` CLI, spark-submit; compact, changelog, expire: the demo, spark-submit, whose backfill and
compaction materializations tests/dagster/test_demo.py checks, and test_postpone_visibility.py's
compaction, python; remove_orphans: test_maintenance_assets.py, python; expire_partitions:
test_lifecycle_assets.py, python); a test about what an asset asks of a job and does with its
answer uses `in_process_jobs` instead. The job is the real one (its ``main``, arguments as the
asset builds them), its summary is its one stdout line, and what it would report through Pipes is
built by the job's own `pipes_metadata` and resolved by Dagster's own `metadata_map_from_external`,
as the Pipes message handler does, and merged by the resource's own `with_pipes_report`: only the
transport (a child process, Pipes' files) is left out.
"""

from __future__ import annotations

import contextlib
import importlib
import io
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
import pytest
from dagster._core.pipes.context import metadata_map_from_external

from lake_assets.defs.resources.pipes import CompletedJob
from lake_assets.defs.resources.spark import SparkJobResource, job_failure, parse_summary, with_pipes_report
from lake_assets.spark.jobs.args import storage_value
from lake_assets.spark.jobs.pipes import pipes_metadata
from lake_assets.spark.jobs.table_ref import TableRef


def run_job_in_process(self: SparkJobResource, context: dg.AssetExecutionContext | dg.OpExecutionContext,
                       job_name: str, args: Sequence[str], env: Mapping[str, str] | None = None, *,
                       ran: list[str]) -> dict[str, Any]:
    """`SparkJobResource.run_job`'s contract, with the job's ``main`` called here: the summary, the
    Pipes metadata of an asset step, a `dagster.Failure` built by the resource's own `job_failure`."""
    assert not env, f"in-process jobs cannot take an environment: {env}"  # a local warehouse has none
    module = importlib.import_module(f"{self.jobs_module}.{job_name}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # no --conf: the shared session's settings stay what the other tests expect
        code = module.main(list(args))
    ran.append(job_name)
    summary = parse_summary(out.getvalue())
    if code != 0:
        raise job_failure(job_name, CompletedJob(code, out.getvalue(), []), summary)
    # an asset step reports a materialization, an op step a custom message (the job's `report_to_pipes`,
    # with Pipes' asset keys as Dagster builds them: the selected keys of a step that has an assets def)
    if context.has_assets_def and context.selected_asset_keys:
        parsed = module.build_parser().parse_args(list(args))
        storage = tuple((k, storage_value(v)) for k, v in parsed.storage_options)
        table = TableRef(parsed.warehouse, parsed.table, storage).open()
        summary = with_pipes_report(summary, metadata_map_from_external(pipes_metadata(summary, table)))
    return summary


def patch_run_job(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every `SparkJobResource` runs its jobs in this process (on the active session) until the
    patch is undone; returns the list of the jobs run."""
    ran: list[str] = []

    def run_job(self: SparkJobResource, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return run_job_in_process(self, *args, **kwargs, ran=ran)

    monkeypatch.setattr(SparkJobResource, "run_job", run_job)
    return ran
