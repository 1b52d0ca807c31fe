"""``<table>_ingest``: daily partitions loaded by the ingest job, each replacing its day.

A backfill of a range is one Dagster run (`BackfillPolicy.single_run`) and one Spark application:
the job gets one ``--partition-source <col>=<day> <glob>`` per day, oldest first, and commits each
day as its own overwrite, so a retried run replaces every day again (idempotent) and the JVM and
session start are paid once per range instead of once per day.

Each partition's materialization carries that day's numbers (its commit, rows, files, health);
only where the table is and which run loaded it are shared by the range.

``ingest.write_columns`` (data-evolution tables) declares the columns the landing files hold: the
job writes each day's rows as rows of those columns (``--write-columns``), and the day's overwrite
replaces its rows whole, so the columns left out read null for that day afterwards.
"""

from collections.abc import Sequence
from typing import Any

import dagster as dg
import pyarrow as pa

from lake_assets.defs.assets.metadata import (
    SUMMARY_INTS,
    health_metadata,
    job_details,
    partition_row_counts,
    rows_where,
    summary_metadata,
    table_definition_metadata,
    table_location,
    table_state_metadata,
)
from lake_assets.defs.config import TableConfig
from lake_assets.defs.health import partition_values
from lake_assets.defs.names import TableNames
from lake_assets.defs.partitions import (
    column_value,
    daily_partitions,
    missing_sources,
    partition_spec,
    path_value,
    source_glob,
)
from lake_assets.defs.resources import SparkJobResource, WarehouseResource
from lake_assets.defs.resources.spark import PIPES_METADATA
from lake_assets.errors import LakeError
from lake_assets.ops.column_subset import subset_write_schema

RANGE_TOTALS = frozenset({*SUMMARY_INTS, "commit_kind", "partitions", "partition", "rows_removed", "files_removed"})
"""Job summary keys that add up the whole range: kept off the partitions' materializations."""


def ingest_args(spec: TableConfig, partition_keys: Sequence[str] | str) -> list[str]:
    """Job arguments (after --warehouse/--table) that load and replace the given days, one commit each."""
    ingest = spec.ingest
    assert ingest is not None
    keys = [partition_keys] if isinstance(partition_keys, str) else list(partition_keys)
    args = ["--format", ingest.format]
    for k, v in ingest.read_options.items():
        args += ["--read-option", f"{k}={v}"]
    if ingest.write_columns is not None:
        args += ["--write-columns", ",".join(ingest.write_columns)]
    for key in keys:
        args += ["--partition-source", partition_spec(ingest, key), source_glob(ingest, key)]
    return [*args, "--overwrite"]


def _day_metadata(day: dict[str, Any], health: pa.Table, rows: int | None) -> dict[str, Any]:
    """One day's materialization metadata: its commit's numbers, its buckets' health and (when the
    files' records are its rows) its row count."""
    md = summary_metadata(day)
    md["partition"] = dg.MetadataValue.text(str(day.get("partition")))
    for key in ("rows_removed", "files_removed"):
        if isinstance(day.get(key), int):
            md[key] = dg.MetadataValue.int(day[key])
    if rows is not None:
        md["dagster/partition_row_count"] = dg.MetadataValue.int(rows)
    return {**md, **health_metadata(health)}


def days_health(health: pa.Table, column: str, values: set[str]) -> pa.Table:
    """Health rows of the given values of the day column (as the partition paths spell them)."""
    keep = [partition_values(p).get(column) in values for p in health.column("partition").to_pylist()]
    return health.filter(pa.array(keep, pa.bool_()))


def build_ingest_asset(spec: TableConfig, timezone: str) -> dg.AssetsDefinition:
    """The daily-partitioned ingest asset of a table with an ``ingest`` section."""
    ingest = spec.ingest
    assert ingest is not None
    names = TableNames(spec.identifier)

    @dg.asset(
        key=names.key("ingest"),
        group_name=names.group,
        partitions_def=daily_partitions(ingest, timezone),
        backfill_policy=dg.BackfillPolicy.single_run(),
        kinds={"spark", "paimon"},
        # in backticks: the UI renders descriptions as Markdown, where a bare <day> is an (empty) HTML tag
        description=f"Loads `{ingest.source}` ({ingest.format}) into {spec.identifier}, replacing partition "
        f"`{ingest.partition_column}=<day>`.",
        metadata={"table": spec.identifier, "source": ingest.source, **table_definition_metadata(spec)},
    )
    def ingest_asset(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, spark: SparkJobResource
    ) -> dg.MaterializeResult:
        keys = sorted(context.partition_keys)
        # Runs launched from the UI, the CLI or a backfill do not carry the ingest job's tags: add them,
        # so that every ingest run can be found by lake/table like the other runs of the table.
        missing_tags = {k: v for k, v in names.tags("ingest").items() if k not in context.run.tags}
        if missing_tags:
            context.instance.add_run_tags(context.run.run_id, missing_tags)
        missing = missing_sources(ingest, keys)
        if missing:
            raise dg.Failure(description="No landing files for " + "; ".join(missing), allow_retries=False)
        existing = warehouse.ensure_table(spec)
        if ingest.write_columns is not None:
            # checked against the table as it is (it may differ from lake.yaml) before Spark starts
            try:
                subset_write_schema(existing.schema, ingest.write_columns, spec.identifier)
            except LakeError as exc:
                raise dg.Failure(description=f"ingest.write_columns: {exc}", allow_retries=False) from None
        if list(existing.arrow_schema.names) != list(spec.columns):
            context.log.warning(f"{spec.identifier} has columns {existing.arrow_schema.names}, lake.yaml declares "
                                f"{list(spec.columns)}: the table is left as it is (evolve it explicitly)")
        context.log.info(f"Ingesting {spec.identifier} {partition_spec(ingest, keys[0])}"
                         + (f" .. {partition_spec(ingest, keys[-1])} ({len(keys)} days)" if len(keys) > 1 else ""))
        summary = spark.run_job(context, "ingest", warehouse.job_args(spec.identifier) + ingest_args(spec, keys),
                                env=warehouse.job_env())
        table = warehouse.table(spec.identifier)
        per_day = {d.get("partition"): d for d in summary.pop("partitions", None) or []}
        health = table.health(small_file_threshold=spec.maintenance.small_file_bytes)
        day_rows = partition_row_counts(table)
        for key in keys:
            day = per_day.get(partition_spec(ingest, key))
            if day is None:  # the job reported no numbers for it: say so rather than show the range's
                raise dg.Failure(description=f"The ingest job reported nothing for {partition_spec(ingest, key)}")
            value = path_value(table, ingest.partition_column, column_value(ingest, key))
            day_health = days_health(health, ingest.partition_column, {value})
            rows = rows_where(day_rows, ingest.partition_column, value)
            context.add_asset_metadata(_day_metadata(day, day_health, rows), partition_key=key)
        # Shared by every partition of the run: where the table is, which days the run loaded, the job
        # (less its totals over the range, which would read as one day's numbers).
        job = {k: v for k, v in summary.items() if k not in RANGE_TOTALS}
        job[PIPES_METADATA] = {k: v for k, v in (summary.get(PIPES_METADATA) or {}).items() if k not in RANGE_TOTALS}
        uri = table_location(warehouse.url, warehouse.table_path(spec.identifier))
        metadata = {
            "partitions": dg.MetadataValue.text(", ".join(partition_spec(ingest, k) for k in keys)),
            "job_runs": dg.MetadataValue.int(1),
            **({"job.duration_s": dg.MetadataValue.float(float(summary["duration_s"]))}
               if isinstance(summary.get("duration_s"), (int, float)) else {}),
            "table_path": uri,
            **table_state_metadata(table, spec, uri),  # dagster/uri; dagster/row_count of the whole table
            **job_details(job),
        }
        snapshot = table.latest_snapshot()
        version = dg.DataVersion(str(snapshot.id)) if snapshot else None
        return dg.MaterializeResult(metadata=metadata, data_version=version)

    return ingest_asset
