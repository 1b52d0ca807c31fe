"""``<table>_compaction``: the compact job, for chosen partitions or (``full``) the whole table."""

import dagster as dg
import pyarrow as pa
from pydantic import Field

from lake_assets.defs.assets.charts import file_sizes, size_chart
from lake_assets.defs.assets.metadata import (
    health_table,
    health_totals,
    job_details,
    summary_metadata,
    table_definition_metadata,
    table_location,
    table_state_metadata,
)
from lake_assets.defs.config import TableConfig
from lake_assets.defs.health import needs_full, partition_values, partitions_to_compact
from lake_assets.defs.names import TableNames
from lake_assets.defs.resources import SparkJobResource, WarehouseResource


class CompactionConfig(dg.Config):
    """Run config of a compaction (the small-file sensor and the schedule set it)."""

    full: bool = Field(default=False, description="Rewrite everything into the last level.")
    partitions: list[str] = Field(
        default_factory=list,
        description="Partition paths (dt=2024-01-01); empty and not full: those over the table's policy "
        "(full where universal compaction would not fix them), or all when none is.",
    )
    max_units: int | None = Field(default=None, description="Compact at most N (partition, bucket) units.")


def compact_args(config: CompactionConfig) -> list[str]:
    """``--full``, one ``--partition k=v[,k=v]`` per partition path, ``--max-units N``."""
    args = ["--full"] if config.full else []
    for path in config.partitions:
        values = partition_values(path)
        if values:
            args += ["--partition", ",".join(f"{k}={v}" for k, v in values.items())]
    if config.max_units is not None:
        args += ["--max-units", str(config.max_units)]
    return args


def policy_config(config: CompactionConfig, health: pa.Table, spec: TableConfig) -> CompactionConfig:
    """The config that fixes the table's breaches of its policy (``config`` when there are none)."""
    partitions = partitions_to_compact(health, spec.maintenance)
    if not partitions:
        return config
    return config.model_copy(update={"partitions": partitions, "full": needs_full(health, spec.maintenance)})


def build_compaction_asset(spec: TableConfig) -> dg.AssetsDefinition:
    """Compaction of one table; one at a time per table (pool and run-queue tag)."""
    names = TableNames(spec.identifier)
    deps = [names.key("ingest")] if spec.ingest else []
    small_bytes = spec.maintenance.small_file_bytes

    @dg.asset(
        key=names.key("compaction"),
        group_name=names.group,
        deps=deps,
        pool=names.compaction_pool,
        kinds={"spark", "paimon"},
        retry_policy=dg.RetryPolicy(max_retries=2, delay=15),  # commit conflicts only (Failure.allow_retries)
        description=f"Compacts {spec.identifier} (universal compaction of the chosen partitions, or full).",
        metadata={"table": spec.identifier, **table_definition_metadata(spec)},
    )
    def compaction_asset(
        context: dg.AssetExecutionContext,
        config: CompactionConfig,
        warehouse: WarehouseResource,
        spark: SparkJobResource,
    ) -> dg.MaterializeResult:
        table = warehouse.existing_table(spec.identifier)
        before = table.health(small_file_threshold=small_bytes)
        sizes_before = file_sizes(table)
        if not config.full and not config.partitions:
            # Runs from an automation condition (or the UI) carry the default config: compact what
            # the policy names, as the small-file sensor would request it.
            config = policy_config(config, before, spec)
        summary = spark.run_job(context, "compact", warehouse.job_args(spec.identifier) + compact_args(config),
                                env=warehouse.job_env())
        table = warehouse.table(spec.identifier)
        after = table.health(small_file_threshold=small_bytes)
        totals_before, totals_after = health_totals(before), health_totals(after)
        metadata = {
            **summary_metadata(summary, table),
            "full": dg.MetadataValue.bool(config.full),
            "partitions": dg.MetadataValue.text(", ".join(config.partitions) or "all"),
            **{f"{k}_before": dg.MetadataValue.int(v) for k, v in totals_before.items()},
            **{f"{k}_after": dg.MetadataValue.int(v) for k, v in totals_after.items()},
            "health": health_table(after),
            "file_sizes": dg.MetadataValue.md(size_chart(sizes_before, file_sizes(table))),
            "table_path": table_location(warehouse.url, warehouse.table_path(spec.identifier)),
            **table_state_metadata(table, spec, table_location(warehouse.url, warehouse.table_path(spec.identifier))),
            **job_details(summary),
        }
        snapshot = table.latest_snapshot()
        return dg.MaterializeResult(
            metadata=metadata, data_version=dg.DataVersion(str(snapshot.id)) if snapshot else None
        )

    return compaction_asset
