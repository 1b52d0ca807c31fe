"""Spark jobs that maintain lake tables, runnable as ``python -m lake_assets.spark.jobs.<name>`` or
``spark-submit jobs/<name>.py``: ``ingest``, ``compact``, ``expire``, ``expire_partitions``, ``changelog``,
``remove_orphans``.

Every job takes ``--warehouse URL --table db.t`` (required), ``--master`` (default ``local[*]``,
ignored under spark-submit), ``--storage-option k=v`` and ``--conf k=v`` (repeatable), prints
exactly one JSON summary line on stdout (logs go to stderr) and exits with:

* 0 — ok
* 1 — unexpected error
* 2 — bad arguments or configuration (unknown table, bad option, input columns that do not fit, a
  table feature lake_assets does not support: `UnsupportedFeatureError`, also during the run)
* 3 — data or table error during the run (any other `lake_assets.errors.LakeError`, malformed input)
* 4 — commit conflict (`CommitConflictError`): nothing was committed; run the job again

Each module's ``main(argv)`` returns the exit code and reuses an active SparkSession.
"""

from lake_assets.spark.jobs.errors import EXIT_CONFIG, EXIT_CONFLICT, EXIT_DATA, EXIT_OK, EXIT_UNEXPECTED

JOBS = ("ingest", "compact", "expire", "expire_partitions", "changelog", "remove_orphans")

__all__ = ["EXIT_CONFIG", "EXIT_CONFLICT", "EXIT_DATA", "EXIT_OK", "EXIT_UNEXPECTED", "JOBS"]
