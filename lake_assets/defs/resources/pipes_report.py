"""What a job reported, read whole: its stdout summary and everything it sent through Pipes.

Pipes carries materializations (their metadata), asset-check results and custom messages (an op
step's summary); log lines arrive as the step's log entries on their own. The stdout summary is the
fallback for what Pipes did not carry (docs/dagster.md, "What a job reports").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dagster as dg

from lake_assets.job_checks import SUMMARY_CHECKS

PIPES_METADATA = "pipes_metadata"
"""Summary key holding the metadata the job reported through Pipes (MetadataValue objects)."""
PIPES_CHECKS = "pipes_checks"
"""Summary key holding the job's check results (`dagster.AssetCheckResult`, Pipes first, then stdout's)."""
UNDECLARED_CHECKS = "undeclared_checks"
"""Summary key naming the check results the step's asset does not declare (shown, never dropped)."""
PIPES_TABLE_VIEW = ("health", "table_path")
"""Pipes metadata that is the job's view of the table: the assets show their own (read after the job)."""


def with_pipes_report(summary: dict[str, Any], reported: Mapping[str, Any],
                      checks: Sequence[dg.AssetCheckResult] = ()) -> dict[str, Any]:
    """The summary the assets read: the stdout summary with what the job reported through Pipes laid
    over it, key by key, the reported metadata itself under `PIPES_METADATA`, and the check results
    under `PIPES_CHECKS`: those reported through Pipes, then those only the stdout summary carries.

    Where the two disagree Pipes wins: it is the typed channel Dagster opened for this run, while the
    stdout summary is whichever JSON line came last (a library printing JSON after it would displace
    it). The stdout line is the fallback for what Pipes did not carry (a job run where dagster_pipes
    is not installed reports nothing through Pipes) and the only source of a failed job's error."""
    merged = dict(summary)
    if reported:
        for key, value in reported.items():
            if key not in PIPES_TABLE_VIEW:
                merged[key] = value.value if isinstance(value, dg.MetadataValue) else value
        merged[PIPES_METADATA] = dict(reported)
    through_pipes = {result.check_name for result in checks}
    from_stdout = [stdout_check(entry) for entry in summary.get(SUMMARY_CHECKS) or ()
                   if isinstance(entry, dict) and entry.get("name") not in through_pipes]
    merged[PIPES_CHECKS] = [*checks, *from_stdout]
    merged.pop(SUMMARY_CHECKS, None)  # shown as checks, not as job metadata
    return merged


def stdout_check(entry: Mapping[str, Any]) -> dg.AssetCheckResult:
    """A check result of the stdout summary (`lake_assets.job_checks.check_result`) as Dagster's."""
    severity = dg.AssetCheckSeverity(entry.get("severity") or "ERROR")
    metadata = {str(k): v for k, v in (entry.get("metadata") or {}).items() if v is not None}
    return dg.AssetCheckResult(check_name=str(entry["name"]), passed=bool(entry.get("passed")), severity=severity,
                               metadata=metadata)


def step_asset_keys(context: dg.AssetExecutionContext | dg.OpExecutionContext) -> set[dg.AssetKey]:
    """The asset keys this step materializes (none for a plain op)."""
    return set(context.selected_asset_keys) if context.has_assets_def else set()


def declared_check_names(context: dg.AssetExecutionContext | dg.OpExecutionContext) -> set[tuple[dg.AssetKey, str]]:
    """(asset key, check name) of every check the step's asset declares (`check_specs`)."""
    if not context.has_assets_def:
        return set()
    return {(key.asset_key, key.name) for key in context.assets_def.check_keys}


def read_pipes_results(context: dg.AssetExecutionContext | dg.OpExecutionContext,
                       results: Iterable[dg.MaterializeResult | dg.AssetCheckResult],
                       custom_messages: Sequence[Any]) -> tuple[dict[str, Any], list[dg.AssetCheckResult]]:
    """The metadata and check results a job sent through Pipes, for `with_pipes_report`.

    Several materializations of the step's asset merge in order (a later key wins); one of another
    asset is not this step's to show and is logged. A dict sent as a custom message (an op step's
    summary, `lake_assets.spark.jobs.pipes.report_to_pipes`) fills in what no materialization carried;
    any other message is logged."""
    keys = step_asset_keys(context)
    metadata: dict[str, Any] = {}
    for message in custom_messages:
        if isinstance(message, dict):
            metadata.update({str(k): v for k, v in message.items() if k != SUMMARY_CHECKS and v is not None})
        else:  # not a summary: shown in the step's log rather than dropped
            context.log.info(f"The job sent a message through Pipes: {message!r}")
    checks: list[dg.AssetCheckResult] = []
    for result in results:
        if isinstance(result, dg.AssetCheckResult):
            checks.append(result)
        elif result.asset_key is not None and keys and result.asset_key not in keys:
            context.log.warning(f"The job reported a materialization of {result.asset_key.to_user_string()}, which "
                                f"this step does not materialize ({', '.join(k.to_user_string() for k in keys)}): "
                                "not shown")
        elif result.metadata:
            metadata.update(result.metadata)
    return metadata, checks


def undeclared_checks(context: dg.AssetExecutionContext | dg.OpExecutionContext,
                      checks: Sequence[dg.AssetCheckResult]) -> dict[str, Any]:
    """The check results no check of the step's asset declares, by name (logged as a warning): the
    asset cannot yield them as checks, so they are shown in its materialization's metadata instead."""
    declared = declared_check_names(context)
    keys = step_asset_keys(context)
    default_key = next(iter(keys)) if len(keys) == 1 else None
    out: dict[str, Any] = {}
    for result in checks:
        key = result.asset_key or default_key
        if key is None or (key, result.check_name) not in declared:
            out[result.check_name or "?"] = {"passed": result.passed, "severity": result.severity.value,
                                             "asset": key.to_user_string() if key else None}
    if out:
        context.log.warning(f"The job reported checks its asset does not declare: {', '.join(sorted(out))} "
                            f"(shown in the materialization's metadata as job.{UNDECLARED_CHECKS})")
    return out

