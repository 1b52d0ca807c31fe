"""``<table>_compaction``: the compact job, for chosen partitions or (``full``) the whole table;
on a postpone-bucket table (``bucket = -2``) it moves the postponed rows into real buckets."""

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pyarrow as pa
from pydantic import Field

from lake_assets.defs.assets.charts import file_sizes, size_chart
from lake_assets.defs.assets.job_checks import job_check_results, job_check_specs
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
from lake_assets.defs.health import needs_full, partition_values, partitions_to_compact, waiting_flags
from lake_assets.defs.names import MAINTENANCE_POOL, TableNames
from lake_assets.defs.resources import SparkJobResource, WarehouseResource
from lake_assets.job_checks import EXTRA_PARTITIONS, EXTRA_SMALL_FILE_BYTES, EXTRA_SMALL_FILE_THRESHOLD
from lake_assets.ops.postpone_table import is_postpone_table
from lake_assets.ops.table_health import compaction_refusal


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


def policy_config(config: CompactionConfig, health: pa.Table, spec: TableConfig,
                  postpone: bool = False, waiting: dict[str, bool] | None = None) -> CompactionConfig:
    """The config that fixes the table's breaches of its policy (``config`` when there are none);
    full where the (postpone) compaction would not fix them (`needs_full`). ``waiting``: the
    table's `waiting_flags` (writers waiting for a compaction make every invisible file a breach)."""
    partitions = partitions_to_compact(health, spec.maintenance, **(waiting or {}))
    if not partitions:
        return config
    full = needs_full(health, spec.maintenance, postpone)
    return config.model_copy(update={"partitions": partitions, "full": full})


# The plan travels between the two steps (separate processes) through this resource, a plain
# filesystem pickle: not the `io_manager` key, which a project may bind to `LakeIOManager`.
STEP_IO_MANAGER = "lake_step_io_manager"


@dataclass(frozen=True)
class CompactionPlan:
    """What the plan step hands the compact step: the resolved config and the state before."""

    config: dict[str, Any]
    totals_before: dict[str, int]
    sizes_before: list[int]


def build_compaction_asset(spec: TableConfig) -> dg.AssetsDefinition:
    """Compaction of one table: a plan step in the table's pool, then the Spark step in the shared
    maintenance pool.

    Two steps so that a compaction run needs a slot of both pools: with ``granularity: run``
    (dagster.yaml) the run queue launches a run only when every pool its steps use has a free slot,
    and counts the run against each of them until it ends. So one compaction per table (the table's
    pool, limit 1) and a global cap on heavy maintenance (`MAINTENANCE_POOL`) hold however the run
    was launched. The run config stays ``ops: {<asset op>: {config: ...}}`` (a config mapping)."""
    names = TableNames(spec.identifier)
    small_bytes = spec.maintenance.small_file_bytes
    plan_name, compact_name = f"{names.prefix}_compaction_plan", f"{names.prefix}_compact"
    key = names.key("compaction")
    # the compact job's own checks: outputs of the Spark step, mapped to the graph's check outputs
    check_specs = job_check_specs(key, "compact")
    check_outs = [spec.get_python_identifier() for spec in check_specs]

    @dg.op(name=plan_name, pool=names.compaction_pool, ins={"after": dg.In(dg.Nothing)},
           out=dg.Out(CompactionPlan, io_manager_key=STEP_IO_MANAGER),
           description=f"Reads {spec.identifier}'s health (manifests) and resolves what to compact.")
    def plan_op(context: dg.OpExecutionContext, config: CompactionConfig, warehouse: WarehouseResource
                ) -> CompactionPlan:
        table = warehouse.declared_table(spec)
        refused = compaction_refusal(table.store)
        if refused is not None:  # (from a schedule, a failing check, the UI) fail here, before any Spark job
            raise dg.Failure(description=refused, allow_retries=False)
        before = table.health(small_file_threshold=small_bytes)
        if not config.full and not config.partitions:
            # Runs from an automation condition (or the UI) carry the default config: compact what
            # the policy names, as the small-file sensor would request it.
            config = policy_config(config, before, spec, is_postpone_table(table.store),
                                   waiting_flags(table.store))
        return CompactionPlan(config.model_dump(), health_totals(before), file_sizes(table))

    @dg.op(name=compact_name, pool=MAINTENANCE_POOL,
           out={"result": dg.Out(dg.Nothing), **{name: dg.Out(dg.Nothing, is_required=False) for name in check_outs}},
           retry_policy=dg.RetryPolicy(max_retries=2, delay=15),  # commit conflicts only (Failure.allow_retries)
           description=f"Runs the compact Spark job on {spec.identifier}.")
    def compact_op(context: dg.OpExecutionContext, plan: CompactionPlan, warehouse: WarehouseResource,
                   spark: SparkJobResource) -> Iterator[dg.Output[None] | dg.AssetCheckResult]:
        config = CompactionConfig(**plan.config)
        policy = {EXTRA_SMALL_FILE_THRESHOLD: spec.maintenance.small_file_threshold,
                  EXTRA_SMALL_FILE_BYTES: small_bytes, EXTRA_PARTITIONS: list(config.partitions)}
        summary = spark.run_job(context, "compact", warehouse.job_args(spec.identifier) + compact_args(config),
                                env=warehouse.job_env(), extras=policy)
        table = warehouse.table(spec.identifier)
        after = table.health(small_file_threshold=small_bytes)
        location = table_location(warehouse.url, warehouse.table_path(spec.identifier))
        metadata = {
            **summary_metadata(summary, table),
            "full": dg.MetadataValue.bool(config.full),
            "partitions": dg.MetadataValue.text(", ".join(config.partitions) or "all"),
            **{f"{k}_before": dg.MetadataValue.int(v) for k, v in plan.totals_before.items()},
            **{f"{k}_after": dg.MetadataValue.int(v) for k, v in health_totals(after).items()},
            "health": health_table(after),
            "file_sizes": dg.MetadataValue.md(size_chart(plan.sizes_before, file_sizes(table))),
            "table_path": location,
            **table_state_metadata(table, spec, location),
            **job_details(summary, shown=("full",)),
        }
        snapshot = table.latest_snapshot()
        with warnings.catch_warnings():  # data_version is beta: a warning in every compaction's log
            warnings.simplefilter("ignore", dg.BetaWarning)
            output = dg.Output(None, output_name="result", metadata=metadata,
                               data_version=dg.DataVersion(str(snapshot.id)) if snapshot else None)
        yield output
        yield from job_check_results(key, "compact", summary)

    def to_ops(config: dict[str, Any]) -> dict[str, Any]:
        return {plan_name: {"config": config}}

    decorate = dg.graph_asset(
        key=key,
        check_specs=check_specs,
        group_name=names.group,
        ins={"ingest": dg.AssetIn(key=names.key("ingest"), dagster_type=dg.Nothing)} if spec.ingest else None,
        config=dg.ConfigMapping(config_fn=to_ops, config_schema=CompactionConfig.to_config_schema()),
        kinds={"spark", "paimon"},
        description=f"Compacts {spec.identifier} (universal compaction of the chosen partitions, or full).",
        metadata={"table": spec.identifier, **table_definition_metadata(spec)},
    )
    # The graph's inputs are the asset's deps: ingest (a Nothing dependency) when the table has one.
    def outputs(compacted: Any) -> dict[str, Any]:
        return dict(zip(["result", *check_outs], compacted if check_outs else [compacted], strict=True))

    if spec.ingest:
        def compaction_asset(ingest: Any) -> Any:
            return outputs(compact_op(plan_op(ingest)))
    else:
        def compaction_asset() -> Any:  # type: ignore[misc]  # the other branch's signature
            return outputs(compact_op(plan_op()))
    return decorate(compaction_asset)
