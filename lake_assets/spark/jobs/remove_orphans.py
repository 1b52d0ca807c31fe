"""Orphan file removal: files in Paimon's directories of the table that no snapshot or tag references.

A dry run by default (it only lists); ``--no-dry-run`` deletes. Only files older than
``--older-than`` (default 1 day) count, so files of writes and commits in flight are safe; a delete
with a bound below an hour needs ``--allow-recent`` (`lake_assets.ops.orphans.check_orphan_age`). Many
deletes are spread over executors. The files looked at are those Paimon's orphan clean looks at
(`lake_assets.ops.orphan_scope`), and the data directories left empty go afterwards, as in Paimon.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from lake_assets.errors import InvalidArgumentError
from lake_assets.job_checks import SUMMARY_CHECKS
from lake_assets.ops.orphans import ORPHAN_AGE_FLOOR, check_orphan_age, remove_empty_directories, remove_orphan_files
from lake_assets.spark.jobs.args import base_parser, duration_ms, non_negative_int
from lake_assets.spark.jobs.context import DISTRIBUTED_DELETE_MIN, JobContext
from lake_assets.spark.jobs.errors import UsageError
from lake_assets.spark.jobs.run_checks import orphans_older_than_bound
from lake_assets.spark.jobs.runner import main_entry, run_job

JOB = "remove_orphans"
SAMPLE_PATHS = 20


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(JOB, "List (and with --no-dry-run delete) files no snapshot or tag references.")
    parser.add_argument("--older-than", type=duration_ms, default=duration_ms("1d"), metavar="DURATION",
                        help="only files older than this, e.g. 1d, 12h (default 1d)")
    parser.add_argument("--dry-run", action=argparse.BooleanOptionalAction, default=True,
                        help="list only (default); --no-dry-run deletes")
    parser.add_argument("--allow-recent", action="store_true",
                        help=f"allow deleting with --older-than below {ORPHAN_AGE_FLOOR.total_seconds() / 3600:g}h "
                        "(only if nothing can be "
                        "writing to the table: younger files may be a write's in flight)")
    parser.add_argument("--distributed-delete-min", type=non_negative_int, default=DISTRIBUTED_DELETE_MIN,
                        help=f"delete on executors when at least N files go (default {DISTRIBUTED_DELETE_MIN})")
    return parser


def body(ctx: JobContext) -> dict[str, Any]:
    args = ctx.args
    older_than = timedelta(milliseconds=args.older_than)
    try:
        check_orphan_age(older_than, allow_recent=args.allow_recent, dry_run=args.dry_run)
    except InvalidArgumentError as exc:
        raise UsageError(f"--older-than: {exc}") from None  # the arguments' fault: exit 2, nothing done
    ctx.start_run()
    ctx.describe("find orphan files")
    # Listing only; the deletes below may run on executors.
    now_ms = int(time.time() * 1000)
    found = remove_orphan_files(ctx.table.store, older_than=older_than, dry_run=True, now_ms=now_ms)
    # the bound looked at again before anything goes: a file found too young is kept (and the check fails)
    check, too_young = orphans_older_than_bound(ctx.table, found.paths, now_ms=now_ms, older_than_ms=args.older_than,
                                                allow_recent=args.allow_recent)
    deleted = 0
    if not args.dry_run and found.paths:
        doomed = [p for p in found.paths if p not in too_young]
        ctx.delete_files(doomed)
        deleted = len(doomed)
    if not args.dry_run:
        remove_empty_directories(ctx.table.store, found)  # each only if it holds nothing by now
    out: dict[str, Any] = {
        "orphan_files": len(found.paths),
        "orphan_bytes": found.bytes,
        "dry_run": args.dry_run,
        "deleted_files": deleted,
        "older_than_ms": args.older_than,
        "allow_recent": args.allow_recent,
        "distributed_delete": deleted >= ctx.distributed_delete_min and deleted > 0,
        "sample_paths": found.paths[:SAMPLE_PATHS],
        SUMMARY_CHECKS: [check],
    }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the remove_orphans job; returns the exit code (see `lake_assets.spark.jobs`)."""
    return run_job(JOB, argv, build_parser(), body)


if __name__ == "__main__":
    main_entry(main)
