"""``<table>_changelog``: changelog production (and export) for tables with a changelog producer."""

import dagster as dg

from lake_assets.defs.assets.metadata import (
    job_details,
    summary_metadata,
    table_definition_metadata,
    table_location,
    table_state_metadata,
)
from lake_assets.defs.config import TableConfig
from lake_assets.defs.names import MAINTENANCE_POOL, TableNames
from lake_assets.defs.resources import SparkJobResource, WarehouseResource


def consumer_id(spec: TableConfig) -> str | None:
    """The consumer the export keeps its position under; None without an export target (the job
    refuses a consumer nothing reads for)."""
    target = spec.maintenance.changelog
    if not (target.export_path or target.export_table):
        return None
    names = TableNames(spec.identifier)
    return target.consumer_id or f"dagster-{names.database}-{names.table}"


def changelog_args(spec: TableConfig) -> list[str]:
    target = spec.maintenance.changelog
    consumer = consumer_id(spec)
    args = ["--consumer-id", consumer] if consumer else []
    if target.export_path:
        args += ["--export-path", target.export_path]
    if target.export_table:
        args += ["--export-table", target.export_table]
    return args


def build_changelog_asset(spec: TableConfig) -> dg.AssetsDefinition:
    names = TableNames(spec.identifier)
    target = spec.maintenance.changelog
    destination = target.export_path or target.export_table or "no export"
    consumer = consumer_id(spec)
    consumer_metadata = {"consumer_id": consumer} if consumer else {}
    exports = (f" and exports it to {destination}." if consumer
               else "; exports nothing (maintenance.changelog names no export_path or export_table).")

    @dg.asset(
        key=names.key("changelog"),
        group_name=names.group,
        deps=[names.key("ingest")] if spec.ingest else [],
        kinds={"spark", "paimon"},
        pool=MAINTENANCE_POOL,  # the global cap on Spark maintenance jobs
        description=f"Produces the changelog of {spec.identifier} ({spec.options.get('changelog-producer')})"
        + exports,
        metadata={"table": spec.identifier, **consumer_metadata, **table_definition_metadata(spec)},
    )
    def changelog_asset(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, spark: SparkJobResource
    ) -> dg.MaterializeResult:
        warehouse.declared_table(spec)
        summary = spark.run_job(context, "changelog", warehouse.job_args(spec.identifier) + changelog_args(spec),
                                env=warehouse.job_env())
        table = warehouse.table(spec.identifier)
        return dg.MaterializeResult(metadata={
            **summary_metadata(summary, table),
            **{k: dg.MetadataValue.text(v) for k, v in consumer_metadata.items()},
            "destination": dg.MetadataValue.text(destination),
            "table_path": table_location(warehouse.url, warehouse.table_path(spec.identifier)),
            **table_state_metadata(table, spec, table_location(warehouse.url, warehouse.table_path(spec.identifier))),
            **job_details(summary, shown=consumer_metadata),
        })

    return changelog_asset
