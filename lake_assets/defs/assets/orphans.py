"""``<table>_orphans``: orphan-file cleanup; a reported dry run unless the policy enables deletes."""

import dagster as dg

from lake_assets.defs.assets.job_checks import job_check_results, job_check_specs
from lake_assets.defs.assets.metadata import (
    job_details,
    summary_metadata,
    table_definition_metadata,
    table_location,
    table_state_metadata,
)
from lake_assets.defs.config import OrphanPolicy, TableConfig
from lake_assets.defs.names import MAINTENANCE_POOL, TableNames
from lake_assets.defs.resources import SparkJobResource, WarehouseResource


class OrphansConfig(dg.Config):
    """Run config; ``dry_run`` None follows the policy (dry unless ``orphans.enabled``)."""

    dry_run: bool | None = None


def orphans_args(policy: OrphanPolicy, dry_run: bool) -> list[str]:
    return (["--older-than", policy.older_than] + ([] if dry_run else ["--no-dry-run"])
            + (["--allow-recent"] if policy.allow_recent else []))


def build_orphans_asset(spec: TableConfig) -> dg.AssetsDefinition:
    names = TableNames(spec.identifier)
    policy = spec.maintenance.orphans

    @dg.asset(
        key=names.key("orphans"),
        group_name=names.group,
        deps=[names.key("expiry")],
        kinds={"spark", "paimon"},
        pool=MAINTENANCE_POOL,  # the global cap on Spark maintenance jobs
        check_specs=job_check_specs(names.key("orphans"), "remove_orphans"),
        description=f"Finds files of {spec.identifier} no snapshot references (older than {policy.older_than}); "
        + ("deletes them." if policy.enabled else "dry run: reports only."),
        metadata={"table": spec.identifier, "deletes_enabled": policy.enabled, **table_definition_metadata(spec)},
    )
    def orphans_asset(
        context: dg.AssetExecutionContext,
        config: OrphansConfig,
        warehouse: WarehouseResource,
        spark: SparkJobResource,
    ) -> dg.MaterializeResult:
        warehouse.declared_table(spec)
        dry_run = (not policy.enabled) if config.dry_run is None else config.dry_run
        summary = spark.run_job(context, "remove_orphans",
                                warehouse.job_args(spec.identifier) + orphans_args(policy, dry_run),
                                env=warehouse.job_env())
        table = warehouse.table(spec.identifier)
        return dg.MaterializeResult(metadata={
            **summary_metadata(summary, table),
            "dry_run": dg.MetadataValue.bool(dry_run),
            "orphan_files": dg.MetadataValue.int(int(summary.get("orphan_files") or 0)),
            "orphan_bytes": dg.MetadataValue.int(int(summary.get("orphan_bytes") or 0)),
            "table_path": table_location(warehouse.url, warehouse.table_path(spec.identifier)),
            **table_state_metadata(table, spec, table_location(warehouse.url, warehouse.table_path(spec.identifier))),
            **job_details(summary, shown=("dry_run", "orphan_files", "orphan_bytes")),
        }, check_results=job_check_results(names.key("orphans"), "remove_orphans", summary))

    return orphans_asset
