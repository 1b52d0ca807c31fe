"""The job's summary: one JSON line on stdout with fixed leading keys, and the table numbers in it."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from lake_assets.spec.manifest import FileKind
from lake_assets.table import Table
from lake_assets.table_support import POSTPONE_BUCKET

# Keys every summary has, in this order (None where a job has nothing to say).
SUMMARY_KEYS = (
    "job", "table", "status", "snapshot_id", "commit_kind", "files_in", "files_out", "rows_in", "rows_out",
    "bytes_in", "bytes_out", "duration_s",
)


def base_summary(job: str, table: str | None) -> dict[str, Any]:
    """A summary of a job that has not run yet: every `SUMMARY_KEYS` key, status ok."""
    return dict.fromkeys(SUMMARY_KEYS) | {"job": job, "table": table, "status": "ok"}


def snapshot_fields(table: Table, before: int | None) -> dict[str, Any]:
    """``snapshot_id`` and ``commit_kind`` of the newest snapshot if one was committed after ``before``."""
    latest = table.snapshot_manager.latest()
    if latest is None or (before is not None and latest.id <= before):
        return {"snapshot_id": None, "commit_kind": None}
    return {"snapshot_id": latest.id, "commit_kind": str(latest.commit_kind)}


def delta_stats(table: Table, before: int | None) -> dict[str, int]:
    """Files, rows and bytes the snapshots committed after ``before`` added (and, for overwrites, removed)."""
    sm = table.snapshot_manager
    latest = sm.latest_id()
    out = {"files_out": 0, "rows_out": 0, "bytes_out": 0, "files_removed": 0, "rows_removed": 0}
    if latest is None:
        return out
    scan = table.store.file_store_scan()
    for sid in range((before or 0) + 1, latest + 1):
        snap = sm.try_snapshot(sid)
        if snap is None:
            continue
        for e in scan.delta_entries(snap):
            if e.kind == FileKind.ADD:
                out["files_out"] += 1
                out["rows_out"] += e.file.row_count
                out["bytes_out"] += e.file.file_size
            else:
                out["files_removed"] += 1
                out["rows_removed"] += e.file.row_count
    return out


def health_summary(table: Table) -> dict[str, Any]:
    """The table's LSM health in a few numbers (from manifests only)."""
    h = table.health().to_pylist()
    lsm_absent = any(r["sorted_runs"] is None for r in h)
    return {
        "buckets": len(h),
        "files": sum(r["file_count"] for r in h),
        "bytes": sum(r["total_bytes"] for r in h),
        "small_files": sum(r["small_file_count"] for r in h),
        # None on tables without a primary key: no LSM levels (lake_assets.ops.health.NO_LSM)
        "level0_files": None if lsm_absent else sum(r["level0_file_count"] for r in h),
        "max_sorted_runs": None if lsm_absent else max((r["sorted_runs"] for r in h), default=0),
        "buckets_needing_compaction": sum(1 for r in h if r["compaction_would_trigger"]),
        "deletion_vector_rows": sum(r["deletion_vector_rows"] for r in h),
        # files waiting in bucket-postpone (postpone-bucket tables) until the dedicated compaction
        "postponed_files": sum(r["file_count"] for r in h if r["bucket"] == POSTPONE_BUCKET),
    }


def health_markdown(table: Table, max_rows: int = 50) -> str:
    """The per-bucket health table as Markdown (for Dagster metadata)."""
    rows = table.health().to_pylist()
    cols = ["partition", "bucket", "file_count", "level0_file_count", "sorted_runs", "small_file_count",
            "total_bytes", "size_amplification_percent", "compaction_would_trigger"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows[:max_rows]:
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v:.1f}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    if len(rows) > max_rows:
        lines.append(f"\n{len(rows) - max_rows} more buckets not shown")
    return "\n".join(lines)


def jsonable(value: Any) -> Any:
    """JSON-safe copy: inf/nan become None (strict parsers reject them), unknown objects text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def emit(summary: dict[str, Any]) -> None:
    """Print the summary as exactly one JSON line on stdout."""
    sys.stdout.write(json.dumps(jsonable(summary), separators=(",", ":")) + "\n")
    sys.stdout.flush()
