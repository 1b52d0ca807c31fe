"""Materialization metadata: job summaries and the per-bucket health table."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.defs.config import TableConfig
from lake_assets.defs.health import partition_values, postponed_files, vector_purge_files
from lake_assets.defs.observations import observe_table
from lake_assets.defs.resources.pipes_report import PIPES_CHECKS, PIPES_METADATA
from lake_assets.table import Table

SUMMARY_INTS = ("snapshot_id", "files_in", "files_out", "rows_in", "rows_out", "bytes_in", "bytes_out")
HEALTH_ROWS = 100
_HEALTH_TYPES = {pa.types.is_integer: "int", pa.types.is_floating: "float", pa.types.is_boolean: "bool"}


def summary_metadata(summary: dict[str, Any], table: Table | None = None) -> dict[str, Any]:
    """The job's headline numbers: snapshot id, commit kind, rows/files/bytes in and out, duration.

    A job that committed nothing has no snapshot id in its summary: the table's latest is shown,
    and no ``commit_kind`` (absent, not a ``'none'`` text: nothing was committed)."""
    md: dict[str, Any] = {}
    snapshot_id = summary.get("snapshot_id")
    if snapshot_id is None and table is not None:
        latest = table.latest_snapshot()
        snapshot_id = latest.id if latest else None
    if snapshot_id is not None:
        md["snapshot_id"] = dg.MetadataValue.int(int(snapshot_id))
    if summary.get("commit_kind"):
        md["commit_kind"] = dg.MetadataValue.text(str(summary["commit_kind"]))
    for key in SUMMARY_INTS[1:]:
        if isinstance(summary.get(key), int):
            md[key] = dg.MetadataValue.int(summary[key])
    if isinstance(summary.get("duration_s"), (int, float)):
        md["duration_s"] = dg.MetadataValue.float(float(summary["duration_s"]))
    return md


def job_details(summary: dict[str, Any], shown: Collection[str] = ()) -> dict[str, Any]:
    """Everything else the job said (its stdout summary, and what it reported through Pipes), prefixed
    ``job.``; its markdown health gives way to `health_table`.

    ``shown``: the job's keys the asset shows under a name of its own (``dry_run``; the expiry's
    ``earliest`` as ``earliest_snapshot_id``), left out here so that each fact appears once."""
    skip = {*SUMMARY_INTS, "commit_kind", "duration_s", "health", "table_path", PIPES_METADATA, PIPES_CHECKS,
            *shown}
    md: dict[str, Any] = {f"job.{k}": v for k, v in (summary.get(PIPES_METADATA) or {}).items() if k not in skip}
    for key, value in summary.items():
        if key not in skip and value is not None:
            md[f"job.{key}"] = _metadata_value(value)
    return md


def _metadata_value(value: Any) -> dg.MetadataValue:
    if isinstance(value, bool):
        return dg.MetadataValue.bool(value)
    if isinstance(value, int):
        return dg.MetadataValue.int(value)
    if isinstance(value, float):
        return dg.MetadataValue.float(value) if math.isfinite(value) else dg.MetadataValue.text(str(value))
    if isinstance(value, (dict, list)):
        return dg.MetadataValue.json(value)
    return dg.MetadataValue.text(str(value))


def merge_summaries(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary for several runs of a job: counts and durations add up, the last snapshot wins."""
    if len(summaries) == 1:
        return summaries[0]
    out: dict[str, Any] = dict(summaries[-1]) if summaries else {}
    for key in (*SUMMARY_INTS[1:], "duration_s"):
        values = [s[key] for s in summaries if isinstance(s.get(key), (int, float))]
        total = sum(values) if values else None
        # float sums show binary noise (52.672999999999995): durations keep the jobs' millisecond precision
        out[key] = round(total, 3) if key == "duration_s" and total is not None else total
    out["runs"] = len(summaries)
    out[PIPES_METADATA] = {k: v for s in summaries for k, v in (s.get(PIPES_METADATA) or {}).items()}
    out[PIPES_CHECKS] = [c for s in summaries for c in s.get(PIPES_CHECKS) or ()]
    return out


def table_location(warehouse_url: str, path: str) -> dg.MetadataValue:
    """Where the table is, as a path (with the warehouse's scheme for object stores)."""
    scheme = warehouse_url.split("://", 1)[0] + "://" if "://" in warehouse_url else ""
    return dg.MetadataValue.path(path if "://" in path or not scheme or scheme == "file://" else scheme + path)


def health_totals(health: pa.Table) -> dict[str, int]:
    """Small files, data files, buckets, postponed files (waiting in bucket-postpone) and files to
    purge of deleted rows (append tables with deletion vectors) of a health table."""
    return {
        "small_files": int(pc.sum(health["small_file_count"]).as_py() or 0),
        "data_files": int(pc.sum(health["file_count"]).as_py() or 0),
        "buckets": health.num_rows,
        "postponed_files": postponed_files(health),
        "vector_purge_files": vector_purge_files(health),
    }


def health_metadata(health: pa.Table) -> dict[str, Any]:
    """Totals of a health table plus the table itself (worst buckets first, at most HEALTH_ROWS)."""
    totals = {k: dg.MetadataValue.int(v) for k, v in health_totals(health).items()}
    return {**totals, "health": health_table(health)}


def health_table(health: pa.Table) -> dg.TableMetadataValue:
    """`Table.health()` as a Dagster table (non-finite floats shown empty)."""
    if health.num_rows > HEALTH_ROWS:
        health = health.sort_by([("small_file_count", "descending"), ("file_count", "descending")])
        health = health.slice(0, HEALTH_ROWS)
    columns = [dg.TableColumn(f.name, _column_type(f.type)) for f in health.schema]
    records = [dg.TableRecord({k: _finite(v) for k, v in row.items()}) for row in health.to_pylist()]
    return dg.MetadataValue.table(records=records, schema=dg.TableSchema(columns=columns))


def _column_type(t: pa.DataType) -> str:
    return next((name for test, name in _HEALTH_TYPES.items() if test(t)), "string")


def _finite(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def table_definition_metadata(spec: TableConfig) -> dict[str, Any]:
    """Dagster's standard table metadata known from lake.yaml: ``dagster/table_name`` and
    ``dagster/column_schema`` (primary-key columns not nullable, as Paimon makes them)."""
    keys = set(spec.primary_keys)
    columns = [
        dg.TableColumn(name, str(kind), constraints=dg.TableColumnConstraints(nullable=name not in keys))
        for name, kind in spec.columns.items()
    ]
    return {
        "dagster/table_name": spec.identifier,
        "dagster/column_schema": dg.TableSchema(
            columns=columns, constraints=dg.TableConstraints(
                other=[f"primary key ({', '.join(spec.primary_keys)})"] if spec.primary_keys else [])),
    }


def table_state_metadata(table: Table, spec: TableConfig, uri: dg.MetadataValue) -> dict[str, Any]:
    """Standard metadata of a materialization: ``dagster/uri`` and, when metadata tells the table's
    row count (`TableObservation.row_count`), ``dagster/row_count``."""
    md: dict[str, Any] = {"dagster/uri": uri}
    obs = observe_table(table, spec)
    if obs.snapshot_id is not None and obs.row_count is not None:
        md["dagster/row_count"] = dg.MetadataValue.int(obs.row_count)
    return md


def partition_row_counts(table: Table, snapshot_id: int | None = None) -> dict[str, int | None]:
    """Rows per partition path (``dt=2024-01-01``), None where metadata cannot tell: the sum of
    `Table.health()`'s row_count over the partition's buckets (a data-evolution table's row-id
    ranges each once, less rows deletion vectors hide; unknown for a primary-key bucket of several
    sorted runs or with retracts, or rows in bucket-postpone). Reads manifests only."""
    snapshot = table.resolve_snapshot(snapshot_id)
    if snapshot is None:
        return {}
    out: dict[str, int | None] = {}
    for row in table.health(snapshot_id=snapshot.id).select(["partition", "row_count"]).to_pylist():
        path, rows = row["partition"], row["row_count"]
        known = out.get(path, 0)
        out[path] = None if rows is None or known is None else known + rows
    return out


def rows_where(counts: dict[str, int | None], column: str, value: str) -> int | None:
    """Rows of the partitions whose ``column`` is ``value`` (None when one of them is not exact)."""
    total = 0
    for path, rows in counts.items():
        if partition_values(path).get(column) == value:
            if rows is None:
                return None
            total += rows
    return total
