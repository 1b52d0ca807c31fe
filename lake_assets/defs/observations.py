"""A table's health at a glance: one observation per table from metadata only (manifests, snapshot,
consumer and changelog files; no data file is read), emitted by the health sensor as an
`AssetObservation` on the table's compaction asset, together with the current evaluation of the
table's asset checks. Numeric observation metadata is what Dagster plots over time per asset.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.defs.config import LakeConfig, TableConfig, parse_duration
from lake_assets.defs.declaration import DECLARATION_CHECK, declaration_result
from lake_assets.defs.health import max_small_files, postponed_files, vector_purge_files
from lake_assets.defs.names import TableNames
from lake_assets.defs.resources import WarehouseResource
from lake_assets.ops import table_health
from lake_assets.ops.health import NO_LSM
from lake_assets.ops.partition_expire import partitions_past_expiration
from lake_assets.ops.row_tracking import data_evolution_enabled
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.branch_table import main_name
from lake_assets.store.consumers import LeaseState, lease_states
from lake_assets.table import Table
from lake_assets.table_support import POSTPONE_BUCKET

HEALTH_SENSOR = "lake_health_sensor"


@dataclass(frozen=True)
class TableObservation:
    """What the health sensor records about one table (all from metadata)."""

    snapshot_id: int | None
    data_files: int = 0
    small_files: int = 0
    buckets: int = 0
    total_bytes: int = 0
    max_small_files_per_bucket: int = 0
    # the LSM numbers: None on tables without a primary key, which have none (`not_applicable` says why)
    max_sorted_runs: int | None = 0
    level0_files: int | None = 0
    oldest_level0_age_ms: int | None = 0
    max_size_amplification_percent: float | None = 0.0
    # records in the live files (the snapshot's totalRecordCount): retracts, rows deletion vectors
    # hide and a data-evolution table's column updates (new values of rows counted already) included
    records_in_files: int = 0
    # the rows a read returns (`Table.health()`'s row_count summed), None where metadata cannot tell
    row_count: int | None = 0
    delete_records: int = 0
    deleted_row_ratio: float = 0.0
    snapshots_retained: int = 0
    oldest_snapshot_age_s: float = 0.0
    changelogs_retained: int = 0
    # readers' consumers (positions), apart from the writer leases below, which are consumer
    # files too (Java's $consumers lists both) and pin snapshots alike
    consumers: int = 0
    max_consumer_lag: int = 0
    consumer_lag: dict[str, int] = field(default_factory=dict)
    # long-lived cross-partition writers' leases (ops/writer_lease.py): id → the lease as listed
    writer_leases: int = 0
    expired_writer_leases: int = 0
    writer_lease_details: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the table's consumer.expiration-time (None: unset, so Java never drops an expired lease)
    consumer_expiration_time_s: float | None = None
    partitions: int = 0
    partitions_past_expiration: int | None = None
    # the table's branches (branch/branch-<name>): their files are the table's, kept by maintenance;
    # None when a branch is observed: they are its table's, not its own
    branches: int | None = 0
    branch_names: list[str] = field(default_factory=list)
    # a branch lake.yaml lists, observed as a table of its own: its name and the table it is a branch of
    branch: str | None = None
    branch_of: str | None = None
    # postpone-bucket tables: files and rows in bucket-postpone, which readers do not see yet
    postponed_files: int = 0
    postponed_rows: int = 0
    # append tables with deletion vectors: files a compaction rewrites because of their vector
    vector_purge_files: int = 0
    # buckets whose compaction would rewrite something (`Table.health()`'s compaction_would_trigger)
    buckets_to_compact: int = 0
    # a data-evolution table: its compaction plans row-id ranges (HEAD's planner), no full mode
    data_evolution: bool = False
    # a table without a primary key (append files, no levels): its backlog is what its compaction
    # would rewrite (buckets_to_compact), small files it would leave are none
    append_table: bool = False
    # ... with fixed buckets (bucket = N): Paimon's BucketedAppendCompactManager picks its files
    bucketed_append: bool = False
    # why lake_assets refuses to compact the table (`table_health.compaction_refusal`), or None
    compaction_refused: str | None = None
    # numbers that do not apply to the table → why (metadata ``not_applicable``)
    not_applicable: dict[str, str] = field(default_factory=dict)

    @property
    def row_count_exact(self) -> bool:
        """Whether ``row_count`` is known from metadata: every bucket is of a table without a
        primary key, or one sorted run without retract rows, and no rows wait in bucket-postpone
        (see `Table.health`'s row_count)."""
        return self.row_count is not None


def observe_table(table: Table, spec: TableConfig, now_ms: int | None = None) -> TableObservation:
    """The table's health from its latest snapshot's manifests and its metadata files.

    ``now_ms`` is the local wall clock encoded as UTC (as partition times and file creation times
    are), used for partitions past expiration; defaults to now."""
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return TableObservation(snapshot_id=None)
    now_ms = table_health.local_now_as_utc_ms() if now_ms is None else now_ms
    health = table.health(snapshot_id=snapshot.id, small_file_threshold=spec.maintenance.small_file_bytes)
    snapshots = table.snapshots()
    listed = table.store.consumer_manager().consumers()  # readers' positions and writer leases
    lag = {cid: max(0, snapshot.id + 1 - c.next_snapshot) for cid, c in sorted(listed.items())
           if not c.is_writer_lease}
    leases = _writer_leases(lease_states(listed), snapshot.id, int(time.time() * 1000))  # leases are epoch ms
    consumer_expiration_ms = table.schema.core_options.consumer_expiration_ms
    records = int(snapshot.total_record_count or 0)  # records in live files, deletes included
    # retract rows in files, and rows deletion vectors hide (both are in the files, neither is live)
    deletes = _sum(health, "delete_row_count") + _sum(health, "deletion_vector_rows")
    partitions = sorted(set(health.column("partition").to_pylist()))
    postponed = postponed_files(health)
    lsm = bool(table.schema.primary_keys)
    own_branch = table.store.paths.branch  # observing a branch (db.t$branch_<name>), None for main
    branches = table.branches() if own_branch is None else []
    return TableObservation(
        snapshot_id=snapshot.id,
        data_files=_sum(health, "file_count"),
        small_files=_sum(health, "small_file_count"),
        buckets=health.num_rows,
        total_bytes=_sum(health, "total_bytes"),
        max_small_files_per_bucket=max_small_files(health),
        max_sorted_runs=_max(health, "sorted_runs") if lsm else None,
        level0_files=_sum(health, "level0_file_count") if lsm else None,
        oldest_level0_age_ms=_max(health, "oldest_level0_age_ms") if lsm else None,
        max_size_amplification_percent=float(_max(health, "size_amplification_percent")) if lsm else None,
        records_in_files=records,
        row_count=_row_count(health),
        delete_records=deletes,
        deleted_row_ratio=round(deletes / records, 6) if records else 0.0,
        snapshots_retained=len(snapshots),
        # Snapshot times are epoch milliseconds (System.currentTimeMillis in Paimon), not local time.
        oldest_snapshot_age_s=round(max(0.0, time.time() - snapshots[0].time_millis / 1000), 1) if snapshots else 0.0,
        changelogs_retained=len(table.store.changelog_manager().ids()),
        consumers=len(lag),
        max_consumer_lag=max(lag.values(), default=0),
        consumer_lag=lag,
        writer_leases=len(leases),
        expired_writer_leases=sum(1 for d in leases.values() if d["expired"]),
        writer_lease_details=leases,
        consumer_expiration_time_s=None if consumer_expiration_ms is None else consumer_expiration_ms / 1000,
        partitions=len(partitions),
        # Paimon's own rule (strategy, pattern, formatter) as the partition expiry applies it.
        partitions_past_expiration=partitions_past_expiration(table.store, _local_datetime(now_ms)),
        branches=len(branches) if own_branch is None else None,
        branch_names=branches,
        branch=own_branch,
        branch_of=main_name(table.name) if own_branch is not None else None,
        postponed_files=postponed,
        postponed_rows=_postponed_rows(table, snapshot) if postponed else 0,
        vector_purge_files=vector_purge_files(health),
        buckets_to_compact=sum(1 for v in health.column("compaction_would_trigger").to_pylist() if v),
        data_evolution=data_evolution_enabled(table.schema.options),
        append_table=not lsm,
        bucketed_append=not lsm and table.schema.core_options.bucket > 0,
        compaction_refused=table_health.compaction_refusal(table.store),
        not_applicable={} if lsm else dict.fromkeys(LSM_NUMBERS, NO_LSM),
    )


LSM_NUMBERS = ("max_sorted_runs", "level0_files", "oldest_level0_age_ms", "max_size_amplification_percent")


def _row_count(health: pa.Table) -> int | None:
    """The table's rows from its buckets' row counts; None when one of them is unknown."""
    counts = health.column("row_count").to_pylist()
    return None if None in counts else sum(counts)


def _writer_leases(leases: dict[str, LeaseState], latest: int, now_ms: int) -> dict[str, dict[str, Any]]:
    """Each writer lease with the snapshots it holds back (``lag``, as a reader's), whether it
    expired (a writer that crashed or stopped without closing) and for how long (``expired_for_s``,
    0 while live). lake_assets' expiry deletes an expired lease; Java's keeps its snapshots
    unless the table sets consumer.expiration-time."""
    return {cid: {"next_snapshot": s.next_snapshot, "lag": max(0, latest + 1 - s.next_snapshot),
                  "lease_until": dt.datetime.fromtimestamp(s.lease_until_ms / 1000, dt.UTC).isoformat(),
                  "expired": s.expired,
                  "expired_for_s": round(max(0, now_ms - s.lease_until_ms) / 1000, 1) if s.expired else 0.0}
            for cid, s in sorted(leases.items())}


def _postponed_rows(table: Table, snapshot: Snapshot) -> int:
    """Rows in the snapshot's bucket-postpone files (their record counts, from the manifests)."""
    return sum(e.file.row_count for e in table.store.file_store_scan().live_entries(snapshot)
               if e.bucket == POSTPONE_BUCKET)


def _local_datetime(local_ms: int) -> dt.datetime:
    """The naive local date-time of a local-clock-as-UTC millisecond value."""
    return dt.datetime.fromtimestamp(local_ms / 1000, dt.UTC).replace(tzinfo=None)


def observation_metadata(obs: TableObservation) -> dict[str, dg.MetadataValue]:
    """Numeric metadata (plotted by Dagster across observations) plus the consumers' lag."""
    md: dict[str, dg.MetadataValue] = {}
    for key, value in asdict(obs).items():
        if key in ("consumer_lag", "writer_lease_details", "not_applicable", "branch_names"):
            if key in ("not_applicable", "branch_names") and not value:
                continue
            md[key] = dg.MetadataValue.json(value)
        elif key in ("branch", "branch_of") and value is not None:
            md[key] = dg.MetadataValue.text(value)
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            md[key] = dg.MetadataValue.int(value)
        elif isinstance(value, float):
            md[key] = dg.MetadataValue.float(value)
    if obs.snapshot_id is not None and obs.row_count is not None:
        md["dagster/row_count"] = dg.MetadataValue.int(obs.row_count)
    return md


def check_results(spec: TableConfig, obs: TableObservation) -> dict[str, tuple[bool, dict[str, Any]]]:
    """The state checks of a table from one observation: check name → (passed, metadata).

    Shared by the asset checks and the health sensor so both judge the current state alike."""
    policy = spec.maintenance
    limit_ms = int(parse_duration(policy.max_level0_age).total_seconds() * 1000)
    results: dict[str, tuple[bool, dict[str, Any]]] = {
        # the compaction backlog: small files over the policy, and files to purge of deleted rows
        "small_files": _small_files(obs, policy.small_file_threshold),
        "level0_age": _level0_age(obs, limit_ms),
        "snapshot_retention": (obs.snapshots_retained <= policy.retain_max, {
            "snapshots": obs.snapshots_retained, "retain_min": policy.retain_min,
            "retain_max": policy.retain_max, **_expired_leases(obs)}),
    }

    # Expiry never removes what a consumer has not read: over retain_max because of one, the fix is
    # that consumer (advance or delete it), not another expiry run. Left out when none is.
    held = ", ".join(
        f"{cid} ({lag} snapshots behind)" for cid, lag in obs.consumer_lag.items() if lag > policy.retain_max)
    if held:
        results["snapshot_retention"][1]["held_by_consumers"] = held
    return results


def _small_files(obs: TableObservation, threshold: int) -> tuple[bool, dict[str, Any]]:
    """The compaction backlog: small files over the policy, and files to purge of deleted rows. The
    small files a table without a primary key would leave in a compaction (too few, or apart, for
    ``compaction.min.file-num``; a data-evolution table's by row-id range) are no failure: a
    compaction it starts would rewrite nothing."""
    metadata: dict[str, Any] = {"max_small_files_per_bucket": obs.max_small_files_per_bucket,
                                "threshold": threshold, "vector_purge_files": obs.vector_purge_files}
    passed = obs.max_small_files_per_bucket <= threshold and obs.vector_purge_files == 0
    if not passed and obs.append_table and obs.buckets_to_compact == 0:
        planner = (LEFT_BY_DATA_EVOLUTION_COMPACTION if obs.data_evolution
                   else LEFT_BY_BUCKETED_APPEND_COMPACTION if obs.bucketed_append else LEFT_BY_APPEND_COMPACTION)
        # a table whose compaction lake_assets refuses (e.g. an unaware-bucket append table with
        # compaction.max.file-num): none runs
        metadata["left_by_compaction"] = obs.compaction_refused or planner
        passed = True
    return passed, metadata


LEFT_BY_DATA_EVOLUTION_COMPACTION = (
    "its data-evolution compaction would rewrite none of them: Paimon's planner compacts contiguous "
    "row-id ranges of at least compaction.min.file-num files")
LEFT_BY_BUCKETED_APPEND_COMPACTION = (
    "its fixed-bucket append compaction would rewrite none of them: as Paimon's, it merges adjacent files "
    "(in sequence order) once they reach target-file-size in at least compaction.min.file-num files, or "
    "compaction.max.file-num files whatever their size")
LEFT_BY_APPEND_COMPACTION = (
    "its append compaction would rewrite none of them: it merges runs of consecutive small files "
    "(below target-file-size x compaction.small-file-ratio, in sequence order) of at least "
    "compaction.min.file-num files, or of compaction.max.file-num files when the table sets it")


def _level0_age(obs: TableObservation, limit_ms: int) -> tuple[bool, dict[str, Any]]:
    """The level-0 age check; passed, saying why, on a table without level-0 backlog (no primary key:
    every file of an append table is at level 0, however old, and none waits for a merge by key)."""
    if obs.oldest_level0_age_ms is None:
        return True, {"not_applicable": obs.not_applicable.get("oldest_level0_age_ms", NO_LSM)}
    return obs.oldest_level0_age_ms <= limit_ms, {
        "oldest_level0_age_s": round(obs.oldest_level0_age_ms / 1000, 1), "limit_s": limit_ms / 1000}


def _expired_leases(obs: TableObservation) -> dict[str, Any]:
    """The snapshot-retention check's word on expired writer leases (none: nothing): which, for how
    long, and what to do about them on this table."""
    expired = sorted(cid for cid, d in obs.writer_lease_details.items() if d["expired"])
    if not expired:
        return {}
    return {"expired_writer_leases": expired,
            "expired_writer_lease_ages_s": {cid: obs.writer_lease_details[cid]["expired_for_s"] for cid in expired},
            "expired_writer_lease_note": expired_lease_note(obs.consumer_expiration_time_s)}


def expired_lease_note(consumer_expiration_time_s: float | None) -> str:
    """What an expired writer lease means and what to do, by whether the table sets
    consumer.expiration-time (the only way Java 0.9 drops a consumer: docs/format.md §6.4)."""
    what = ("a cross-partition writer that crashed or stopped without closing left its lease (a consumer "
            "file consumer/consumer-<id>) holding the snapshots from its next_snapshot on")
    if consumer_expiration_time_s is None:
        return (f"{what}; this table does not set consumer.expiration-time, so Java's expiry never drops the "
                "lease and keeps those snapshots forever: run lake_assets' expire_snapshots (the expiry asset), "
                "which deletes it, or delete the consumer file, or set consumer.expiration-time")
    return (f"{what}; lake_assets' expire_snapshots (the expiry asset) deletes it, and Java's commit expiry drops "
            f"it once the file is older than consumer.expiration-time ({consumer_expiration_time_s:g} s)")


CHECK_ASSET = {"small_files": "compaction", "level0_age": "compaction", "snapshot_retention": "expiry"}
CHECK_SEVERITY = {"small_files": dg.AssetCheckSeverity.WARN, "level0_age": dg.AssetCheckSeverity.ERROR,
                  "snapshot_retention": dg.AssetCheckSeverity.ERROR}


def health_events(spec: TableConfig, obs: TableObservation) -> list[dg.AssetObservation | dg.AssetCheckEvaluation]:
    """The observation of the table (on its compaction asset) and its checks' current evaluations."""
    names = TableNames(spec.identifier)
    events: list[dg.AssetObservation | dg.AssetCheckEvaluation] = [
        dg.AssetObservation(asset_key=names.key("compaction"), metadata=observation_metadata(obs),
                            description=f"Health of {spec.identifier} at snapshot {obs.snapshot_id}"),
    ]
    if obs.snapshot_id is None:
        return events  # nothing to judge yet (the checks themselves warn that the table is missing)
    for name, (passed, metadata) in check_results(spec, obs).items():
        events.append(dg.AssetCheckEvaluation(
            asset_key=names.key(CHECK_ASSET[name]), check_name=name, passed=passed,
            severity=CHECK_SEVERITY[name], metadata={**metadata, "observed_snapshot_id": obs.snapshot_id},
        ))
    return events


def declaration_events(spec: TableConfig, table: Table) -> list[dg.AssetCheckEvaluation]:
    """The ``declaration`` check of each maintenance asset, on the table as it is now: while it
    fails, the automation conditions launch no maintenance run of the table (`defs/automation.py`)."""
    passed, metadata = declaration_result(table, spec.primary_keys, spec.partition_keys, spec.options)
    names = TableNames(spec.identifier)
    return [dg.AssetCheckEvaluation(asset_key=names.key(step), check_name=DECLARATION_CHECK, passed=passed,
                                    severity=dg.AssetCheckSeverity.ERROR, blocking=True, metadata=metadata)
            for step in spec.maintenance_steps]


def missing_branch_events(spec: TableConfig, why: str) -> list[dg.AssetCheckEvaluation]:
    """The failing ``declaration`` check of each asset of a branch lake.yaml lists but the table
    lacks: the UI names it, and the automation conditions launch none of its runs."""
    names = TableNames(spec.identifier)
    return [dg.AssetCheckEvaluation(asset_key=names.key(step), check_name=DECLARATION_CHECK, passed=False,
                                    severity=dg.AssetCheckSeverity.ERROR, blocking=True, description=why,
                                    metadata={"differences": "the branch does not exist"})
            for step in spec.maintenance_steps]


def build_health_sensor(config: LakeConfig) -> dg.SensorDefinition:
    """Every ``automation.health_sensor_interval_seconds``: observe each existing table and evaluate its checks.

    It observes on every tick, not only after new commits: level-0 age, snapshot age and consumer
    lag grow while nothing is committed, and the plot over time is the point."""
    running = config.automation.default_status == "running"

    @dg.sensor(
        name=HEALTH_SENSOR,
        minimum_interval_seconds=config.automation.health_sensor_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING if running else dg.DefaultSensorStatus.STOPPED,
        description="Records each table's (and each listed branch's) health (manifests only) as an "
        "observation and evaluates its checks on the current state.",
    )
    def health_sensor(context: dg.SensorEvaluationContext, warehouse: WarehouseResource) -> dg.SensorResult:
        events: list[dg.AssetObservation | dg.AssetCheckEvaluation] = []
        for spec in config.maintained_tables:  # each listed branch: its own snapshots and policy
            table = warehouse.table_if_exists(spec.identifier)
            if table is not None:
                events += health_events(spec, observe_table(table, spec))
                events += declaration_events(spec, table)
            elif spec.branch is not None:  # a listed branch that does not exist: its declaration fails
                events += missing_branch_events(spec, warehouse.missing_branch(spec.identifier))
        return dg.SensorResult(asset_events=events,
                               skip_reason=None if events else "no table exists yet")

    return health_sensor


def _sum(health: pa.Table, column: str) -> int:
    return int(pc.sum(health[column]).as_py() or 0) if health.num_rows else 0


def _max(health: pa.Table, column: str) -> Any:
    values = [v for v in health.column(column).to_pylist() if v is not None]
    return max(values, default=0)
