"""``<table>_changelog``: changelog production (and export) for tables with a changelog producer."""

from typing import Any

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
    """The changelog of one table: a gate step in the table's compaction pool, then the Spark step
    in the shared maintenance pool.

    The changelog job compacts a ``lookup`` / ``full-compaction`` table (that compaction writes the
    changelog), so it must never run beside the table's compaction asset: both would commit a
    compaction of the same buckets and one would fail with a commit conflict (and be retried, a
    wasted Spark job). So the asset depends on the compaction (a run holding both runs the compaction
    first, and the ``changelog_after_ingest`` condition waits while one is in progress), and its gate
    step takes the table's compaction pool, which a run holds until it ends (``granularity: run``):
    a changelog run and a compaction run of the table are never launched together."""
    names = TableNames(spec.identifier)
    target = spec.maintenance.changelog
    destination = target.export_path or target.export_table or "no export"
    consumer = consumer_id(spec)
    consumer_metadata = {"consumer_id": consumer} if consumer else {}
    exports = (f" and exports it to {destination}." if consumer
               else "; exports nothing (maintenance.changelog names no export_path or export_table).")
    gate_name, produce_name = f"{names.prefix}_changelog_gate", f"{names.prefix}_changelog_produce"

    deps = {"compaction": dg.AssetIn(key=names.key("compaction"), dagster_type=dg.Nothing)}
    if spec.ingest:
        deps["ingest"] = dg.AssetIn(key=names.key("ingest"), dagster_type=dg.Nothing)

    # one Nothing input per dep (a fan-in list of graph inputs is refused by Dagster's planner)
    @dg.op(name=gate_name, pool=names.compaction_pool, ins={name: dg.In(dg.Nothing) for name in deps},
           description=f"Checks {spec.identifier} is as lake.yaml declares; holds the table's compaction pool.")
    def gate_op(warehouse: WarehouseResource) -> None:
        warehouse.declared_table(spec)

    @dg.op(name=produce_name, pool=MAINTENANCE_POOL, ins={"gate": dg.In(dg.Nothing)},
           out=dg.Out(dg.Nothing), description=f"Runs the changelog Spark job on {spec.identifier}.")
    def produce_op(context: dg.OpExecutionContext, warehouse: WarehouseResource,
                   spark: SparkJobResource) -> dg.Output[None]:
        summary = spark.run_job(context, "changelog", warehouse.job_args(spec.identifier) + changelog_args(spec),
                                env=warehouse.job_env())
        table = warehouse.table(spec.identifier)
        location = table_location(warehouse.url, warehouse.table_path(spec.identifier))
        return dg.Output(None, metadata={
            **summary_metadata(summary, table),
            **{k: dg.MetadataValue.text(v) for k, v in consumer_metadata.items()},
            "destination": dg.MetadataValue.text(destination),
            "table_path": location,
            **table_state_metadata(table, spec, location),
            **job_details(summary, shown=consumer_metadata),
        })

    decorate = dg.graph_asset(
        key=names.key("changelog"),
        group_name=names.group,
        ins=deps,
        kinds={"spark", "paimon"},
        description=f"Produces the changelog of {spec.identifier} ({spec.options.get('changelog-producer')})"
        + exports,
        metadata={"table": spec.identifier, **consumer_metadata, **table_definition_metadata(spec)},
    )
    # The graph's inputs are the asset's deps (Nothing): the compaction and, when the table has one, ingest.
    if spec.ingest:
        def changelog_asset(compaction: Any, ingest: Any) -> Any:
            return produce_op(gate_op(compaction=compaction, ingest=ingest))
    else:
        def changelog_asset(compaction: Any) -> Any:  # type: ignore[misc]  # the other branch's signature
            return produce_op(gate_op(compaction=compaction))
    return decorate(changelog_asset)
