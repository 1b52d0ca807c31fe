"""Reporting to Dagster through Pipes when Dagster launched the job; Dagster is never required.

What goes through Pipes: the materialization (or, for an op step, a custom message) built from the
job's summary, the job's check results (`lake_assets.job_checks`), and the job's log lines of
WARNING and above as Dagster log entries (all lines still go to stderr).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lake_assets.job_checks import SUMMARY_CHECKS
from lake_assets.spark.jobs.logs import log
from lake_assets.spark.jobs.summary import health_markdown, jsonable
from lake_assets.table import Table

if TYPE_CHECKING:
    from dagster_pipes import PipesContext


@contextlib.contextmanager
def pipes_context() -> Iterator[PipesContext | None]:
    """The Dagster Pipes context when Dagster started this process (and dagster_pipes is installed),
    else None."""
    if "DAGSTER_PIPES_CONTEXT" not in os.environ:
        yield None
        return
    try:
        from dagster_pipes import open_dagster_pipes
    except ImportError:
        log.warning("DAGSTER_PIPES_CONTEXT is set but dagster_pipes is not installed: not reporting to Dagster")
        yield None
        return
    context = open_dagster_pipes()
    forward = _ToPipesLog(context)
    log.addHandler(forward)
    try:
        yield context
    finally:
        log.removeHandler(forward)
        context.close()


class _ToPipesLog(logging.Handler):
    """The job's warnings and errors as Dagster log entries of the step (not only in its stderr)."""

    def __init__(self, context: PipesContext) -> None:
        super().__init__(level=logging.WARNING)
        self.context = context
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.context.log.log(record.levelno, self.format(record))
        except Exception:  # the Pipes channel closed or broke: stderr still has the line
            self.handleError(record)


def typed_metadata(values: dict[str, Any]) -> dict[str, Any]:
    """Values as Pipes metadata: numbers stay numbers, nested values become JSON, None is left out."""
    meta: dict[str, Any] = {}
    for k, v in jsonable(values).items():
        if v is None:
            continue
        if isinstance(v, (dict, list)):
            meta[k] = {"raw_value": v, "type": "json"}
        elif isinstance(v, bool):
            meta[k] = {"raw_value": v, "type": "bool"}
        elif isinstance(v, int):
            meta[k] = {"raw_value": v, "type": "int"}
        elif isinstance(v, float):
            meta[k] = {"raw_value": v, "type": "float"}
        else:
            meta[k] = {"raw_value": str(v), "type": "text"}
    return meta


def pipes_metadata(summary: dict[str, Any], table: Table | None) -> dict[str, Any]:
    """The summary as Dagster metadata (its check results go as checks, `check_reports`), with the
    table's path and health."""
    meta = typed_metadata({k: v for k, v in summary.items() if k != SUMMARY_CHECKS})
    if table is not None:
        meta["table_path"] = {"raw_value": table.file_io.uri(table.paths.root), "type": "path"}
        try:
            meta["health"] = {"raw_value": health_markdown(table), "type": "md"}
        except Exception as exc:  # metadata is best effort: never fail a finished job over it
            log.warning("could not compute health for Dagster metadata: %s", exc)
    return meta


def report_to_pipes(context: PipesContext, summary: dict[str, Any], table: Table | None) -> None:
    """Report a successful run as an asset materialization (or a custom message for op steps)."""
    try:
        metadata = pipes_metadata(summary, table)
        if not context.is_asset_step:
            context.report_custom_message(jsonable(summary))
            return
        keys = list(context.asset_keys)
        if len(keys) == 1:
            asset_key = keys[0]
        else:
            # A multi-asset step: report on the asset named after this table, if one is.
            name = (summary.get("table") or "").replace(".", "/")
            matching = [k for k in keys if k == name or k.endswith("/" + name) or k.endswith("/" + name.split("/")[-1])]
            if len(matching) != 1:
                context.log.warning(f"no single asset of {keys} matches table {summary.get('table')}; not reported")
                return
            asset_key = matching[0]
        context.report_asset_materialization(metadata=metadata, asset_key=asset_key)
        for report in check_reports(summary):
            context.report_asset_check(asset_key=asset_key, **report)
    except Exception as exc:
        log.warning("could not report to Dagster Pipes: %s", exc)


def check_reports(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary's check results as `PipesContext.report_asset_check` arguments (without the asset key)."""
    reports = []
    for result in summary.get(SUMMARY_CHECKS) or ():
        reports.append({"check_name": str(result["name"]), "passed": bool(result["passed"]),
                        "severity": result["severity"], "metadata": typed_metadata(result.get("metadata") or {})})
    return reports
