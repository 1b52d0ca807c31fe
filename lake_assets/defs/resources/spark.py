"""Launching the Spark jobs as subprocesses through Dagster Pipes (Spark never runs in Dagster)."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import dagster as dg
from pydantic import Field

from lake_assets.defs.resources.pipes import CapturingPipesSubprocessClient, CompletedJob
from lake_assets.defs.resources.pipes_report import (
    PIPES_CHECKS,
    PIPES_METADATA,
    UNDECLARED_CHECKS,
    read_pipes_results,
    undeclared_checks,
    with_pipes_report,
)
from lake_assets.exit_codes import EXIT_CODE_ADVICE, EXIT_CODE_MEANINGS, EXIT_CONFLICT

__all__ = ["PIPES_METADATA", "SparkJobResource", "job_failure", "parse_summary", "with_pipes_report"]
EXIT_CODES = EXIT_CODE_MEANINGS
"""Exit code of a job → its meaning: the jobs' own table (`lake_assets.exit_codes`)."""


def default_jobs_dir() -> str:
    """The spark-submit scripts of this lake_assets (``jobs/`` beside the package), wherever the
    Dagster code location runs from: a relative ``jobs`` would depend on the working directory."""
    import lake_assets
    from lake_assets.defs.config.loading import LakeConfigError  # config imports the resources

    jobs = Path(lake_assets.__file__).resolve().parents[1] / "jobs"
    if not (jobs / "ingest.py").is_file():
        raise LakeConfigError(
            f"spark.jobs_dir is not set and {jobs} has no job scripts (lake_assets installed without its "
            "jobs/ folder): set spark.jobs_dir to a copy of jobs/, or use spark.launcher: python"
        )
    return str(jobs)


class SparkJobResource(dg.ConfigurableResource):
    """How the jobs of ``jobs/`` are launched.

    ``pipes``: ``spark-submit --master M --conf k=v jobs/<name>.py ...``; ``python``: ``python -m
    <jobs_module>.<name> --master M ... --conf k=v`` (no spark-submit binary needed). Both run under
    a Pipes session, so the jobs report their materialization metadata back.
    """

    master: str = Field(default="local[*]", description="Spark master URL.")
    conf: dict[str, str] = Field(default_factory=dict, description="Spark conf, passed as --conf k=v.")
    launcher: Literal["pipes", "python"] = Field(default="pipes", description="spark-submit or python -m.")
    spark_submit: str = Field(default="spark-submit", description="spark-submit executable.")
    jobs_dir: str | None = Field(
        default=None, description="Folder of the job scripts (pipes launcher); default: lake_assets's jobs/."
    )
    jobs_module: str = Field(default="lake_assets.spark.jobs", description="Package of the jobs (python).")
    timeout_seconds: float = Field(default=7200.0, gt=0, description="Longer runs are stopped and fail.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment of the jobs.")

    def command(self, job_name: str, args: Sequence[str]) -> list[str]:
        """The command line of one job run (``args`` start with --warehouse/--table)."""
        conf = [a for k, v in self.conf.items() for a in ("--conf", f"{k}={v}")]
        if self.launcher == "python":
            return [sys.executable, "-m", f"{self.jobs_module}.{job_name}", "--master", self.master,
                    *args, *conf]
        # spark-submit applies --conf before the driver starts (driver memory, JVM options).
        script = str(Path(self.jobs_dir or default_jobs_dir()) / f"{job_name}.py")
        return [self._spark_submit(), "--master", self.master, *conf, script, *args]

    def _spark_submit(self) -> str:
        """The venv's spark-submit (pyspark's own version) before one on the PATH."""
        beside = Path(sys.executable).parent / self.spark_submit
        if "/" not in self.spark_submit and beside.exists():
            return str(beside)
        return shutil.which(self.spark_submit) or self.spark_submit

    def run_job(
        self,
        context: dg.AssetExecutionContext | dg.OpExecutionContext,
        job_name: str,
        args: Sequence[str],
        env: Mapping[str, str] | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run a job to completion; return its JSON summary merged with what it reported through
        Pipes (`with_pipes_report`: metadata, and its check results under `PIPES_CHECKS`; those the
        step's asset does not declare are named under ``undeclared_checks`` and logged). ``extras``
        go to the job through Pipes. A non-zero exit raises `dagster.Failure` carrying the job's
        error JSON."""
        command = self.command(job_name, args)
        context.log.info(f"Launching {job_name}: {shlex.join(command)}")
        client = CapturingPipesSubprocessClient(
            timeout_seconds=self.timeout_seconds,
            env={"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, **self.env},
        )
        done = client.run_capturing(context=context, command=command, env=env, extras=dict(extras or {}))
        summary = parse_summary(done.stdout)
        if done.returncode != 0:
            raise job_failure(job_name, done, summary)
        return reported_summary(context, summary, done)


def reported_summary(context: dg.AssetExecutionContext | dg.OpExecutionContext, summary: dict[str, Any],
                     done: CompletedJob) -> dict[str, Any]:
    """A successful job's summary with everything it reported through Pipes (`with_pipes_report`),
    and the check results its asset does not declare named under ``undeclared_checks``."""
    reported, checks = read_pipes_results(context, done.results, done.custom_messages)
    merged = with_pipes_report(summary, reported, checks)
    undeclared = undeclared_checks(context, merged[PIPES_CHECKS])
    if undeclared:
        merged[UNDECLARED_CHECKS] = undeclared
    return merged


def parse_summary(stdout: str) -> dict[str, Any]:
    """The job's summary: the last stdout line that is a JSON object (``{}`` if there is none)."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return {}


def job_failure(job_name: str, done: CompletedJob, summary: dict[str, Any]) -> dg.Failure:
    """A Failure naming the exit code's meaning; commit conflicts (`EXIT_CONFLICT`) may be retried."""
    if done.timed_out:
        reason = "timed out"
        advice = "raise spark.timeout in lake.yaml, or give the job less to do (e.g. compaction_max_units)"
    else:
        reason = f"exit code {done.returncode} ({EXIT_CODES.get(done.returncode or 0, 'unknown')})"
        advice = EXIT_CODE_ADVICE.get(done.returncode or 0, "see the job's stderr in the run's logs")
    error = summary.get("error") or summary.get("message") or "no error JSON on stdout; see stderr"
    metadata: dict[str, Any] = {"exit_code": done.returncode if done.returncode is not None else -1,
                                "job": job_name}
    if summary:
        metadata["error_json"] = dg.MetadataValue.json(summary)
    return dg.Failure(
        description=f"Spark job {job_name} failed, {reason}: {error}. What to do: {advice}.",
        metadata=metadata,
        allow_retries=done.returncode == EXIT_CONFLICT,
    )
