"""The exit codes of the Spark jobs (`lake_assets.spark.jobs`): one table for the jobs that return
them and the Dagster resource that launches the jobs and explains a failed run. It lives in the
core, free of pyspark and dagster, so both layers import it and cannot drift apart."""

from __future__ import annotations

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_CONFIG = 2
EXIT_DATA = 3
EXIT_CONFLICT = 4  # nothing was committed: running the job again is safe

EXIT_CODE_MEANINGS: dict[int, str] = {
    EXIT_OK: "ok",
    EXIT_UNEXPECTED: "unexpected error",
    EXIT_CONFIG: "bad arguments or config",
    EXIT_DATA: "data or table error",
    EXIT_CONFLICT: "commit conflict",
}
"""Exit code → what it means, as a failed run's message names it."""
