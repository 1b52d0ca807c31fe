"""spark-submit entry point: `spark-submit jobs/changelog.py --warehouse URL --table db.t ...` (see --help)."""

from lake_assets.spark.jobs.changelog import main

if __name__ == "__main__":
    raise SystemExit(main())
