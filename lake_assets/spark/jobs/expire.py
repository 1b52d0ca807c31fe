"""Snapshot (and changelog) expiration; the file deletes spread over executors when there are many.

Which snapshots expire is planned on the driver from snapshot files (the table's
``snapshot.num-retained.*`` / ``snapshot.time-retained`` / ``snapshot.expire.limit``, overridden by
the arguments). Tags, consumers and the latest snapshot are always kept.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from lake_assets.job_checks import SUMMARY_CHECKS
from lake_assets.ops.expire import expire_snapshots
from lake_assets.spark.jobs.args import base_parser, duration_ms, non_negative_int, positive_int
from lake_assets.spark.jobs.context import DISTRIBUTED_DELETE_MIN, JobContext
from lake_assets.spark.jobs.errors import UsageError
from lake_assets.spark.jobs.run_checks import retained_snapshots_readable
from lake_assets.spark.jobs.runner import main_entry, run_job

JOB = "expire"
SAMPLE_PATHS = 20


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(JOB, "Expire old snapshots and delete the files only they reference.")
    parser.add_argument("--retain-min", type=positive_int, default=None,
                        help="keep at least N snapshots (default: snapshot.num-retained.min)")
    parser.add_argument("--retain-max", type=positive_int, default=None,
                        help="keep at most N snapshots (default: snapshot.num-retained.max)")
    parser.add_argument("--older-than", type=duration_ms, default=None, metavar="DURATION",
                        help="expire snapshots older than this, e.g. 1h, 7d (default: snapshot.time-retained)")
    parser.add_argument("--limit", type=positive_int, default=None,
                        help="expire at most N snapshots in this run (default: snapshot.expire.limit)")
    parser.add_argument("--dry-run", action="store_true", help="report what would be deleted; delete nothing")
    parser.add_argument("--distributed-delete-min", type=non_negative_int, default=DISTRIBUTED_DELETE_MIN,
                        help=f"delete on executors when at least N files go (default {DISTRIBUTED_DELETE_MIN})")
    return parser


def body(ctx: JobContext) -> dict[str, Any]:
    args = ctx.args
    if args.retain_min is not None and args.retain_max is not None and args.retain_min > args.retain_max:
        raise UsageError(f"--retain-min {args.retain_min} is greater than --retain-max {args.retain_max}")
    table = ctx.table
    older_than_ms = None if args.older_than is None else int(time.time() * 1000) - args.older_than
    ctx.start_run()
    deleted = 0
    distributed = False

    def delete(paths: list[str]) -> int:
        nonlocal deleted, distributed
        distributed = distributed or (bool(paths) and len(paths) >= ctx.distributed_delete_min)
        n = ctx.delete_files(paths)
        deleted += len(paths)
        return n

    ctx.describe("plan expiration" + (" (dry run)" if args.dry_run else ""))
    result = expire_snapshots(
        table.store, retain_min=args.retain_min, retain_max=args.retain_max, older_than_ms=older_than_ms,
        limit=args.limit, dry_run=args.dry_run, delete_files=delete,
    )
    # every path the expiry deletes (or would): index files (deletion vectors, hash indexes) and
    # statistics too, so that files_to_delete is what deleted_files counts
    files = [*result.deleted_data_files, *result.deleted_changelog_files, *result.deleted_index_files,
             *result.deleted_manifests, *result.deleted_statistics_files]
    out: dict[str, Any] = result.summary()
    out["files_to_delete"] = len(files)
    out["deleted_files"] = 0 if args.dry_run else deleted
    out["distributed_delete"] = distributed
    if args.dry_run:
        out["sample_paths"] = files[:SAMPLE_PATHS]
    ctx.describe("check the retained snapshots' files")
    out[SUMMARY_CHECKS] = [retained_snapshots_readable(table)]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the expire job; returns the exit code (see `lake_assets.spark.jobs`)."""
    return run_job(JOB, argv, build_parser(), body)


if __name__ == "__main__":
    main_entry(main)
