"""The asset checks the Spark jobs judge on their own run: one table for the jobs that report them
(through Dagster Pipes and in their stdout summary) and the Dagster assets that declare them. It
lives in the core, free of pyspark and dagster, so both layers import it and cannot drift apart
(as `lake_assets.exit_codes`).

Each check asserts what only the job that did the work can tell about it, on the table right after
its run: the health checks of the Dagster layer (`lake_assets.defs.checks`) judge the table's state
whenever they run, these judge the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["WARN", "ERROR"]


@dataclass(frozen=True)
class JobCheck:
    """A check a job reports on each successful run: its name, what it asserts, and how bad a failure is."""

    job: str
    name: str
    description: str
    severity: Severity


COMPACTED_SMALL_FILES = JobCheck(
    "compact", "compacted_small_files",
    "After the compaction, no bucket of the partitions it compacted holds more than the table's "
    "small_file_threshold small files, and none of them has files waiting in bucket-postpone.",
    "WARN",  # universal compaction and --max-units may leave some on purpose; the next run takes them
)
RETAINED_SNAPSHOTS_READABLE = JobCheck(
    "expire", "retained_snapshots_readable",
    "After the expiry, every retained snapshot's manifest lists are there, and every file the earliest "
    "and the latest retained snapshot and each tag read (manifests, data and index files).",
    "ERROR",  # a missing file is a snapshot no reader can read any more
)
ORPHANS_OLDER_THAN_BOUND = JobCheck(
    "remove_orphans", "orphans_older_than_bound",
    "Every orphan file the run deleted (or, in a dry run, would delete) was older than its older_than "
    "bound, and, unless allow_recent, older than the one-hour floor, when the run looked again before "
    "deleting.",
    "ERROR",  # a younger file may have been a write's in flight
)

JOB_CHECKS: dict[str, tuple[JobCheck, ...]] = {
    check.job: (check,) for check in (COMPACTED_SMALL_FILES, RETAINED_SNAPSHOTS_READABLE, ORPHANS_OLDER_THAN_BOUND)
}
"""Job name → the checks each successful run of it reports."""

SUMMARY_CHECKS = "checks"
"""Key of the job summary listing the job's check results (`check_result`)."""

# Pipes extras the Dagster asset passes to the compact job: its small-file policy, and the
# partitions it asked for (paths as `Table.health()` names them; empty: the whole table).
EXTRA_SMALL_FILE_THRESHOLD = "small_file_threshold"
EXTRA_SMALL_FILE_BYTES = "small_file_bytes"
EXTRA_PARTITIONS = "partitions"


def check_result(check: JobCheck, passed: bool, metadata: dict[str, Any]) -> dict[str, Any]:
    """One check result as the summary carries it (JSON): name, passed, severity, metadata."""
    return {"name": check.name, "passed": bool(passed), "severity": check.severity, "metadata": metadata}
