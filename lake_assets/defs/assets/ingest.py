"""``<table>_ingest``: one daily partition per run of the ingest job, replacing that day.

A backfill of a range is one Dagster run (`BackfillPolicy.single_run`). The ingest job takes one
``--source`` and one table partition, so the run starts the job once per day, oldest first; each
run overwrites its day (``--partition <col>=<day> --overwrite``), so retries are idempotent.
"""

import dagster as dg
import pyarrow as pa

from lake_assets.defs.assets.metadata import (
    health_metadata,
    job_details,
    merge_summaries,
    summary_metadata,
    table_location,
)
from lake_assets.defs.config import TableConfig
from lake_assets.defs.health import partition_values
from lake_assets.defs.names import TableNames
from lake_assets.defs.partitions import column_value, daily_partitions, missing_sources, partition_spec, source_glob
from lake_assets.defs.resources import SparkJobResource, WarehouseResource


def ingest_args(spec: TableConfig, partition_key: str) -> list[str]:
    """Job arguments (after --warehouse/--table) that load and replace one day."""
    ingest = spec.ingest
    assert ingest is not None
    args = ["--source", source_glob(ingest, partition_key), "--format", ingest.format]
    for k, v in ingest.read_options.items():
        args += ["--read-option", f"{k}={v}"]
    return [*args, "--partition", partition_spec(ingest, partition_key), "--overwrite"]


def days_health(health: pa.Table, column: str, values: set[str]) -> pa.Table:
    """Health rows of the given values of the day column."""
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
        description=f"Loads {ingest.source} ({ingest.format}) into {spec.identifier}, replacing partition "
        f"{ingest.partition_column}=<day>.",
        metadata={"table": spec.identifier, "source": ingest.source},
    )
    def ingest_asset(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, spark: SparkJobResource
    ) -> dg.MaterializeResult:
        keys = sorted(context.partition_keys)
        missing = missing_sources(ingest, keys)
        if missing:
            raise dg.Failure(description="No landing files for " + "; ".join(missing), allow_retries=False)
        existing = warehouse.ensure_table(spec)
        if list(existing.arrow_schema.names) != list(spec.columns):
            context.log.warning(f"{spec.identifier} has columns {existing.arrow_schema.names}, lake.yaml declares "
                                f"{list(spec.columns)}: the table is left as it is (evolve it explicitly)")
        summaries = []
        for key in keys:
            context.log.info(f"Ingesting {spec.identifier} {partition_spec(ingest, key)}")
            summaries.append(spark.run_job(context, "ingest", warehouse.job_args(spec.identifier)
                                           + ingest_args(spec, key), env=warehouse.job_env()))
        table = warehouse.table(spec.identifier)
        summary = merge_summaries(summaries)
        days = {column_value(ingest, k) for k in keys}
        health = days_health(table.health(small_file_threshold=spec.maintenance.small_file_bytes),
                             ingest.partition_column, days)
        metadata = {
            **summary_metadata(summary, table),
            "partitions": dg.MetadataValue.text(", ".join(partition_spec(ingest, k) for k in keys)),
            "job_runs": dg.MetadataValue.int(len(summaries)),
            **health_metadata(health),
            "table_path": table_location(warehouse.url, warehouse.table_path(spec.identifier)),
            **job_details(summary),
        }
        snapshot = table.latest_snapshot()
        version = dg.DataVersion(str(snapshot.id)) if snapshot else None
        return dg.MaterializeResult(metadata=metadata, data_version=version)

    return ingest_asset
