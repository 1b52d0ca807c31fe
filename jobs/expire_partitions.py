"""spark-submit entry point: `spark-submit jobs/expire_partitions.py --warehouse URL --table db.t ...` (see --help)."""

from lake_assets.spark.jobs.expire_partitions import main

if __name__ == "__main__":
    raise SystemExit(main())
