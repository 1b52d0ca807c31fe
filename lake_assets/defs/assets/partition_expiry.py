"""``<table>_partition_expiry``: drops partitions past ``partition.expiration-time`` (Paimon's
``expire_partitions``) through the Spark job; built for partitioned tables that carry the option."""

import dagster as dg

from lake_assets.defs.assets.metadata import job_details, summary_metadata, table_location
from lake_assets.defs.config import TableConfig
from lake_assets.defs.names import MAINTENANCE_POOL, TableNames
from lake_assets.defs.resources import SparkJobResource, WarehouseResource


class PartitionExpiryConfig(dg.Config):
    """Run config of a partition expiry."""

    dry_run: bool = False


def has_partition_expiry(spec: TableConfig) -> bool:
    """Whether the table expires partitions: partitioned, with ``partition.expiration-time``."""
    return spec.has_partition_expiry


def build_partition_expiry_asset(spec: TableConfig) -> dg.AssetsDefinition:
    names = TableNames(spec.identifier)
    opts = spec.options
    strategy = opts.get("partition.expiration-strategy", "values-time")
    deps = [names.key("ingest")] if spec.ingest is not None else []

    @dg.asset(
        key=names.key("partition_expiry"),
        group_name=names.group,
        deps=deps,
        kinds={"spark", "paimon"},
        pool=MAINTENANCE_POOL,  # the global cap on Spark maintenance jobs
        description=f"Drops partitions of {spec.identifier} older than {opts['partition.expiration-time']} "
        f"({strategy}) in one OVERWRITE snapshot; their files go with snapshot expiry.",
        metadata={"table": spec.identifier, "partition.expiration-time": opts["partition.expiration-time"],
                  "partition.expiration-strategy": strategy},
    )
    def partition_expiry_asset(
        context: dg.AssetExecutionContext,
        config: PartitionExpiryConfig,
        warehouse: WarehouseResource,
        spark: SparkJobResource,
    ) -> dg.MaterializeResult:
        warehouse.declared_table(spec)  # it exists, with the options lake.yaml declares
        args = warehouse.job_args(spec.identifier) + (["--dry-run"] if config.dry_run else [])
        summary = spark.run_job(context, "expire_partitions", args, env=warehouse.job_env())
        table = warehouse.table(spec.identifier)
        dropped = summary.get("partitions") or []
        return dg.MaterializeResult(metadata={
            **summary_metadata(summary, table),
            "dry_run": dg.MetadataValue.bool(config.dry_run),
            "expired_partitions": dg.MetadataValue.int(int(summary.get("expired_partitions") or 0)),
            "unparseable_partitions": dg.MetadataValue.int(int(summary.get("unparseable_partitions") or 0)),
            "dropped": dg.MetadataValue.json(dropped),
            "table_path": table_location(warehouse.url, warehouse.table_path(spec.identifier)),
            # the job's `partitions` are `dropped`
            **job_details(summary, shown=("dry_run", "expired_partitions", "unparseable_partitions", "partitions")),
        })

    return partition_expiry_asset
