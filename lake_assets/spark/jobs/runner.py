"""Running a job: arguments, table, session, body, summary and exit code, in that order.

A job is a function ``body(ctx) -> dict`` run by `run_job`. The body validates its input first and
then calls `JobContext.start_run`; errors before that point are configuration errors (exit 2), errors
after it data, conflict or unexpected errors (`lake_assets.spark.jobs.errors`). The summary is printed
as one JSON line on stdout; logs go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from lake_assets.spark.jobs.args import storage_value, table_identifier
from lake_assets.spark.jobs.context import JobContext
from lake_assets.spark.jobs.errors import EXIT_OK, EXIT_UNEXPECTED, Phase, classify
from lake_assets.spark.jobs.logs import log, setup_logging
from lake_assets.spark.jobs.pipes import pipes_context, report_to_pipes
from lake_assets.spark.jobs.session import get_session
from lake_assets.spark.jobs.stderr import separate_stderr
from lake_assets.spark.jobs.summary import base_summary, emit
from lake_assets.spark.jobs.table_ref import TableRef

JobBody = Callable[[JobContext], dict[str, Any]]


def run_job(job: str, argv: Sequence[str] | None, parser: argparse.ArgumentParser, body: JobBody) -> int:
    """Parse arguments, open the session and table, run ``body``, print the summary; the exit code."""
    separate_stderr()
    setup_logging()
    summary = base_summary(job, None)
    ctx: JobContext | None = None
    phase: Phase = "setup"
    code = EXIT_OK
    started = time.perf_counter()
    with pipes_context() as pipes:
        try:
            try:
                args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
            except SystemExit as exc:  # --help (argparse errors raise UsageError)
                return int(exc.code or 0)
            summary["table"] = args.table
            summary["table"] = identifier = table_identifier(args)  # with --branch: db.t$branch_<name>
            storage = tuple((k, storage_value(v)) for k, v in args.storage_options)
            ref = TableRef(args.warehouse, identifier, storage)
            table = ref.open()
            spark, owns = get_session(job, args)
            ctx = JobContext(job, args, spark, ref, table, started=started, owns_session=owns,
                             extras=dict(pipes.extras) if pipes is not None else {})
            if getattr(args, "distributed_delete_min", None) is not None:
                ctx.distributed_delete_min = args.distributed_delete_min
            spark.sparkContext.setJobGroup(ctx.group_id, f"lake_assets {job} {table.name}", interruptOnCancel=True)
            log.info("%s on %s (warehouse %s, master %s)", job, table.name, args.warehouse,
                     spark.sparkContext.master)
            summary["spark_master"] = spark.sparkContext.master
            summary["spark_app_id"] = spark.sparkContext.applicationId
            summary.update(body(ctx))
        except Exception as exc:
            phase = ctx.phase if ctx is not None else phase
            code, message = classify(exc, phase)
            summary["status"] = "error"
            summary["error"] = message
            if code == EXIT_UNEXPECTED:
                log.exception("%s failed unexpectedly", job)
            else:
                log.error("%s failed (exit %d): %s", job, code, message)
        finally:
            if ctx is not None:
                _clear_labels(ctx)
        summary["duration_s"] = round(time.perf_counter() - started, 3)
        emit(summary)
        if pipes is not None and code == EXIT_OK:
            report_to_pipes(pipes, summary, ctx.table if ctx is not None else None)
    if ctx is not None and ctx.owns_session:
        with contextlib.suppress(Exception):
            ctx.spark.stop()
    return code


def _clear_labels(ctx: JobContext) -> None:
    # A reused session (tests, notebooks) must not label later jobs with ours.
    with contextlib.suppress(Exception):
        for key in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"):
            ctx.sc.setLocalProperty(key, None)  # type: ignore[arg-type]


def main_entry(main: Callable[[Sequence[str] | None], int]) -> None:
    """``python -m`` / spark-submit entry: exit with the job's code."""
    raise SystemExit(main(None))
