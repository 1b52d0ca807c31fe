"""``<table>_expiry``: snapshot expiration per the table's retention policy."""

import dagster as dg

from lake_assets.defs.assets.job_checks import job_check_results, job_check_specs
from lake_assets.defs.assets.metadata import (
    job_details,
    summary_metadata,
    table_definition_metadata,
    table_location,
    table_state_metadata,
)
from lake_assets.defs.config import MaintenancePolicy, TableConfig
from lake_assets.defs.names import MAINTENANCE_POOL, TableNames
from lake_assets.defs.resources import SparkJobResource, WarehouseResource


class ExpiryConfig(dg.Config):
    """Run config of an expiry."""

    dry_run: bool = False


def expire_args(policy: MaintenancePolicy, dry_run: bool) -> list[str]:
    args = ["--retain-min", str(policy.retain_min), "--retain-max", str(policy.retain_max)]
    if policy.time_retained:
        args += ["--older-than", policy.time_retained]
    if policy.expire_limit:
        args += ["--limit", str(policy.expire_limit)]
    return [*args, "--dry-run"] if dry_run else args


def build_expiry_asset(spec: TableConfig) -> dg.AssetsDefinition:
    names = TableNames(spec.identifier)
    policy = spec.maintenance

    @dg.asset(
        key=names.key("expiry"),
        group_name=names.group,
        deps=[names.key("compaction")],
        kinds={"spark", "paimon"},
        pool=MAINTENANCE_POOL,  # the global cap on Spark maintenance jobs
        check_specs=job_check_specs(names.key("expiry"), "expire"),
        description=f"Expires snapshots of {spec.identifier}: keeps {policy.retain_min}..{policy.retain_max}"
        f" snapshots and those younger than {policy.time_retained or 'the table option'}.",
        metadata={"table": spec.identifier, **table_definition_metadata(spec)},
    )
    def expiry_asset(
        context: dg.AssetExecutionContext,
        config: ExpiryConfig,
        warehouse: WarehouseResource,
        spark: SparkJobResource,
    ) -> dg.MaterializeResult:
        table = warehouse.declared_table(spec)
        count_before = len(table.snapshots())
        summary = spark.run_job(context, "expire", warehouse.job_args(spec.identifier)
                                + expire_args(policy, config.dry_run), env=warehouse.job_env())
        table = warehouse.table(spec.identifier)
        snapshots = table.snapshots()
        return dg.MaterializeResult(metadata={
            **summary_metadata(summary, table),
            "dry_run": dg.MetadataValue.bool(config.dry_run),
            "snapshots_before": dg.MetadataValue.int(count_before),
            "snapshots_after": dg.MetadataValue.int(len(snapshots)),
            # the job's `earliest` is this one (read before the asset reads the table again): shown once
            **({"earliest_snapshot_id": dg.MetadataValue.int(snapshots[0].id)} if snapshots else {}),
            "table_path": table_location(warehouse.url, warehouse.table_path(spec.identifier)),
            **table_state_metadata(table, spec, table_location(warehouse.url, warehouse.table_path(spec.identifier))),
            **job_details(summary, shown=("dry_run", "earliest")),
        }, check_results=job_check_results(names.key("expiry"), "expire", summary))

    return expiry_asset
