"""spark-submit entry point: `spark-submit jobs/compact.py --warehouse URL --table db.t ...` (see --help)."""

from lake_assets.spark.jobs.compact import main

if __name__ == "__main__":
    raise SystemExit(main())
