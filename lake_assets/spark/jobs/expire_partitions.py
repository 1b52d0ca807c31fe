"""Partition expiration (Paimon's ``expire_partitions`` procedure) as a Spark job.

The driver reads manifests only and commits one OVERWRITE snapshot dropping the expired partitions
(see `lake_assets.ops.partition_expire`); their files stay for time travel until snapshot expiry
and orphan removal take them, so no executor work is needed.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Sequence
from typing import Any

from lake_assets.ops.partition_expire import STRATEGIES, expire_partitions
from lake_assets.spark.jobs.args import base_parser, duration_ms, positive_int
from lake_assets.spark.jobs.context import JobContext
from lake_assets.spark.jobs.errors import UsageError
from lake_assets.spark.jobs.runner import main_entry, run_job

JOB = "expire_partitions"


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(JOB, "Drop partitions older than the expiration time in one OVERWRITE snapshot.")
    parser.add_argument("--expiration-time", type=duration_ms, default=None, metavar="DURATION",
                        help="drop partitions older than this, e.g. 30d (default: partition.expiration-time)")
    parser.add_argument("--strategy", choices=STRATEGIES, default=None,
                        help="values-time or update-time (default: partition.expiration-strategy)")
    parser.add_argument("--timestamp-pattern", default=None, metavar="PATTERN",
                        help="e.g. '$dt $hour:00:00' (default: partition.timestamp-pattern)")
    parser.add_argument("--timestamp-formatter", default=None, metavar="FORMAT",
                        help="Java pattern, e.g. yyyyMMdd (default: partition.timestamp-formatter)")
    parser.add_argument("--max-expires", type=positive_int, default=None,
                        help="drop at most N partitions, oldest first (default: partition.expiration-max-num)")
    parser.add_argument("--dry-run", action="store_true", help="report what would be dropped; commit nothing")
    return parser


def body(ctx: JobContext) -> dict[str, Any]:
    args = ctx.args
    if not ctx.table.partition_keys:
        raise UsageError(f"Table {ctx.table.name} is not partitioned: it has no partitions to expire")
    if args.expiration_time is None and ctx.table.schema.core_options.partition_expiration_time_ms is None:
        raise UsageError(f"Table {ctx.table.name} has no option 'partition.expiration-time': "
                         "set it or pass --expiration-time")
    ctx.start_run()
    ctx.describe("expire partitions" + (" (dry run)" if args.dry_run else ""))
    result = expire_partitions(
        ctx.table.store,
        expiration_time=None if args.expiration_time is None else dt.timedelta(milliseconds=args.expiration_time),
        strategy=args.strategy, timestamp_pattern=args.timestamp_pattern,
        timestamp_formatter=args.timestamp_formatter, max_expires=args.max_expires, dry_run=args.dry_run,
    )
    return {
        "expired_partitions": len(result.expired),
        "partitions": [{k: str(v) for k, v in p.items()} for p in result.expired],
        "unparseable_partitions": len(result.unparseable),
        "snapshot_id": result.snapshot_id,
        "dry_run": args.dry_run,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the partition expiration job; returns the exit code (see `lake_assets.spark.jobs`)."""
    return run_job(JOB, argv, build_parser(), body)


if __name__ == "__main__":
    main_entry(main)
