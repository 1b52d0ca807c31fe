"""The checks a maintenance asset's Spark job judges on its own run (`lake_assets.job_checks`):
declared on the asset (``check_specs``) and yielded from what the job reported.

A declared check the job did not report fails, naming why it may be missing, rather than passing
unseen; a check the job reported that the asset does not declare is named in the materialization's
metadata and logged (`lake_assets.defs.resources.pipes_report.undeclared_checks`).
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from lake_assets.defs.resources.pipes_report import PIPES_CHECKS
from lake_assets.job_checks import JOB_CHECKS

# Blocking: a failure stops the asset's downstream steps of the same run, and (automation.py) the
# downstream assets' automation until the check passes again. An expiry that left a retained
# snapshot unreadable is exactly when orphan removal must not run: the files that snapshot still
# names may be the ones it would take for orphans.
BLOCKING_JOB_CHECKS = frozenset({"retained_snapshots_readable"})


def job_check_specs(key: dg.AssetKey, job: str) -> list[dg.AssetCheckSpec]:
    """The checks ``job`` reports on each successful run, as checks of the asset ``key``."""
    return [dg.AssetCheckSpec(check.name, asset=key, description=check.description,
                              blocking=check.name in BLOCKING_JOB_CHECKS)
            for check in JOB_CHECKS.get(job, ())]


def job_check_results(key: dg.AssetKey, job: str, summary: dict[str, Any]) -> list[dg.AssetCheckResult]:
    """One result per check ``job`` declares: the one it reported (through Pipes, else in its stdout
    summary: `SparkJobResource.run_job`), or a failure saying it reported none."""
    reported = {result.check_name: result for result in summary.get(PIPES_CHECKS) or ()
                if result.asset_key in (None, key)}
    results = []
    for check in JOB_CHECKS.get(job, ()):
        severity = dg.AssetCheckSeverity(check.severity)
        result = reported.get(check.name)
        if result is None:
            results.append(dg.AssetCheckResult(
                asset_key=key, check_name=check.name, passed=False, severity=severity,
                description=f"The {job} job reported no result for this check (a job from an older lake_assets, "
                "or one that could not judge it: its log says why), so it is not known to hold."))
        else:
            results.append(dg.AssetCheckResult(
                asset_key=key, check_name=check.name, passed=result.passed, severity=result.severity,
                metadata=result.metadata, description=check.description))
    return results
