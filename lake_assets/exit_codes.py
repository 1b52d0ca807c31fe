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

EXIT_CODE_ADVICE: dict[int, str] = {
    EXIT_UNEXPECTED: "a bug or a lost executor: the job's stderr (the run's logs) has the traceback; "
                     "running it again is safe",
    EXIT_CONFIG: "fix the job's arguments, lake.yaml or the table (for an option or table kind lake_assets does "
                 "not support, the error says what to do); run as it is, it fails the same way",
    EXIT_DATA: "fix the input or the table the error names; after CommitStateUnknownError run the job again "
               "(the commit is then resolved)",
    EXIT_CONFLICT: "another writer committed first; nothing was committed and this run's files were "
                   "removed: run it again",
}
"""Exit code of a failed run → what its user does next, as a failed run's message says it."""
