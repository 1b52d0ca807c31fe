"""spark-submit entry point: `spark-submit jobs/remove_orphans.py --warehouse URL --table db.t ...` (see --help)."""

from lake_assets.spark.jobs.remove_orphans import main

if __name__ == "__main__":
    raise SystemExit(main())
