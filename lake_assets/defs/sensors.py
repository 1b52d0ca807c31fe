"""The small-file sensor: compaction of exactly the breaching partitions at each new snapshot.

It stays a custom sensor (beside the compaction's automation condition, `defs/automation.py`)
because it reads the manifests itself and passes run config (partitions, full or universal)."""

import json
from typing import TYPE_CHECKING

import dagster as dg

from lake_assets.defs.assets import CompactionConfig
from lake_assets.defs.config import LakeConfig, TableConfig
from lake_assets.defs.declaration import declaration_differences, skip_message
from lake_assets.defs.health import needs_full, partitions_to_compact, planned_partitions, waiting_flags
from lake_assets.defs.names import COMPACTION_TABLE_TAG, PARTITIONS_TAG, TableNames
from lake_assets.defs.resources import WarehouseResource
from lake_assets.ops.postpone_table import is_postpone_table
from lake_assets.ops.row_tracking import data_evolution_enabled
from lake_assets.ops.table_health import compaction_refusal

if TYPE_CHECKING:
    from lake_assets.defs.jobs import AssetJob

SMALL_FILE_SENSOR = "lake_small_file_sensor"
ACTIVE = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
          dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
_TAG_VALUE_MAX = 200


def compaction_active(instance: dg.DagsterInstance, spec: TableConfig) -> bool:
    """Whether a compaction of the table is queued or running: a run tagged for the table, or any
    run whose asset selection includes its compaction asset (e.g. launched from the UI)."""
    key = TableNames(spec.identifier).key("compaction")
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=ACTIVE)):
        run = record.dagster_run
        if run.tags.get(COMPACTION_TABLE_TAG) == spec.identifier or key in (run.asset_selection or ()):
            return True
    return False


def compaction_request(spec: TableConfig, snapshot_id: int, partitions: list[str], full: bool,
                       postpone: bool = False) -> dg.RunRequest:
    """A compaction run of the breaching partitions, keyed by table and snapshot (never twice).

    A postpone-bucket table's compaction moves all postponed rows of the partitions (no unit
    limit: the compact job refuses one for it); ``full`` also compacts their real buckets fully."""
    names = TableNames(spec.identifier)
    config = CompactionConfig(full=full, partitions=partitions,
                              max_units=None if postpone else spec.maintenance.compaction_max_units)
    shown = ",".join(partitions) or "all"
    return dg.RunRequest(
        run_key=f"{spec.identifier}@{snapshot_id}",
        job_name=names.job("compaction"),
        run_config=dg.RunConfig(ops={names.op("compaction"): config}),
        tags={**names.tags("compact"), PARTITIONS_TAG: shown[:_TAG_VALUE_MAX], "lake/trigger": "small-file-sensor"},
    )


def build_small_file_sensor(config: LakeConfig, jobs: "list[AssetJob]") -> dg.SensorDefinition:
    """Every N seconds: each table's health (manifests only) against its policy.

    Each branch lake.yaml lists is looked at as a table of its own (its snapshots, its policy, its
    compaction job); one that does not exist is named in the skip reason. The cursor maps table (or
    ``db.t$branch_<name>``) → the snapshot last evaluated, so a table is looked at again only after a
    new commit; run keys ``<table>@<snapshot>`` make a repeated request impossible. Tables whose
    compaction is queued or running are skipped (and looked at again on the next tick).
    """

    @dg.sensor(
        name=SMALL_FILE_SENSOR,
        jobs=jobs,
        minimum_interval_seconds=config.automation.small_file_sensor_interval_seconds,
        default_status=_status(config),
        description="Requests a compaction of the partitions whose small files, sorted runs, size "
        "amplification or postponed files (postpone-bucket tables) exceed the table's policy.",
    )
    def small_file_sensor(context: dg.SensorEvaluationContext, warehouse: WarehouseResource) -> dg.SensorResult:
        cursor: dict[str, int] = json.loads(context.cursor) if context.cursor else {}
        requests, notes = [], []
        for spec in config.maintained_tables:  # each listed branch is an entry of its own
            table = warehouse.table_if_exists(spec.identifier)
            if table is None and spec.branch is not None:  # listed in lake.yaml: say so, do not skip silently
                notes.append(warehouse.missing_branch(spec.identifier))
                continue
            snapshot = table.latest_snapshot() if table is not None else None
            if table is None or snapshot is None or cursor.get(spec.identifier) == snapshot.id:
                continue
            if compaction_active(context.instance, spec):
                notes.append(f"{spec.identifier}: compaction already queued or running")
                continue
            cursor[spec.identifier] = snapshot.id
            refused = compaction_refusal(table.store)
            if refused is not None:  # a request would only start a run that fails
                notes.append(f"{spec.identifier}: not requested: {refused}")
                continue
            differs = declaration_differences(table, spec.primary_keys, spec.partition_keys, spec.options)
            if differs:  # its compaction run would fail before the job (WarehouseResource.declared_table)
                notes.append(skip_message(spec.identifier, differs))
                continue
            health = table.health(small_file_threshold=spec.maintenance.small_file_bytes)
            partitions = partitions_to_compact(health, spec.maintenance, **waiting_flags(table.store))
            append = not table.schema.primary_keys  # no levels: the planner's small files are its backlog
            if partitions and append:
                planned = planned_partitions(health)
                skipped = ", ".join(p for p in partitions if p not in planned)
                if skipped:
                    kind = "data-evolution" if data_evolution_enabled(table.schema.options) else "append"
                    notes.append(f"{spec.identifier}: not requested for {skipped}: its {kind} "
                                 "compaction would rewrite nothing there")
                partitions = [p for p in partitions if p in planned]
            if partitions:
                postpone = is_postpone_table(table.store)
                # never full on a table without a primary key: a data-evolution compaction has no
                # full mode, and an append table's would rewrite its large files for small ones the
                # planner leaves (the requested partitions are those it would rewrite)
                full = not append and needs_full(health, spec.maintenance, postpone)
                requests.append(compaction_request(spec, snapshot.id, partitions, full, postpone))
        skip = None if requests else ("; ".join(notes) or "no table over its thresholds")
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(cursor, sort_keys=True),
                               skip_reason=skip)

    return small_file_sensor


def _status(config: LakeConfig) -> dg.DefaultSensorStatus:
    running = config.automation.default_status == "running"
    return dg.DefaultSensorStatus.RUNNING if running else dg.DefaultSensorStatus.STOPPED
