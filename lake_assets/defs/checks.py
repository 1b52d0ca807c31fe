"""Asset checks per table: small files, level-0 age, snapshot retention, orphan bytes, and on each
maintenance asset the blocking ``declaration`` check (lake.yaml says what the table is).

All read metadata in the Dagster process (manifests and snapshot files; no data files). The first
three judge a `TableObservation` with `check_results`, as the health sensor does after each
observation, so a check's status always reflects the current state, not only the last repair.
"""

from typing import Any

import dagster as dg

from lake_assets.defs.config import TableConfig, parse_duration
from lake_assets.defs.declaration import DECLARATION_CHECK, declaration_result
from lake_assets.defs.health import PURGE, breaches
from lake_assets.defs.names import TableNames
from lake_assets.defs.observations import CHECK_SEVERITY, check_results, observe_table
from lake_assets.defs.resources import WarehouseResource
from lake_assets.store.branch_table import BRANCH_SEPARATOR
from lake_assets.table import Table

WARN = dg.AssetCheckSeverity.WARN
ERROR = dg.AssetCheckSeverity.ERROR


def _no_table(identifier: str, warehouse: WarehouseResource) -> dg.AssetCheckResult:
    if BRANCH_SEPARATOR in identifier:  # a branch lake.yaml lists: missing is a mistake, not a stage
        return dg.AssetCheckResult(passed=False, severity=ERROR, description=warehouse.missing_branch(identifier))
    return dg.AssetCheckResult(passed=False, severity=WARN, description=f"{identifier} does not exist yet")


def build_table_checks(spec: TableConfig) -> list[dg.AssetChecksDefinition]:
    names = TableNames(spec.identifier)
    policy = spec.maintenance
    ident = spec.identifier

    def _evaluate(name: str, table: Table, **extra: Any) -> dg.AssetCheckResult:
        # The same judgement as the health sensor's, on the table's current state.
        passed, metadata = check_results(spec, observe_table(table, spec))[name]
        return dg.AssetCheckResult(passed=passed, severity=CHECK_SEVERITY[name], metadata={**metadata, **extra})

    @dg.asset_check(asset=names.key("compaction"), name="small_files",
                    description=f"No bucket has more than {policy.small_file_threshold} small files, and no "
                    "file is due to be purged of rows its deletion vector hides.")
    def small_files(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        table = warehouse.table_if_exists(ident)
        if table is None:
            return _no_table(ident, warehouse)
        health = table.health(small_file_threshold=policy.small_file_bytes)
        over = [b for b in breaches(health, policy)
                if any("small files" in r or "postponed files" in r or PURGE in r for r in b.reasons)]
        partitions = ", ".join(sorted({b.partition for b in over}))  # left out when none is over
        return _evaluate("small_files", table, buckets_over=len(over),
                         **({"partitions_over": partitions} if partitions else {}))

    @dg.asset_check(asset=names.key("compaction"), name="level0_age",
                    description=f"Compaction keeps up: no level-0 file is older than {policy.max_level0_age}.")
    def level0_age(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        table = warehouse.table_if_exists(ident)
        return _no_table(ident, warehouse) if table is None else _evaluate("level0_age", table)

    @dg.asset_check(asset=names.key("expiry"), name="snapshot_retention",
                    description=f"At most {policy.retain_max} snapshots are retained.")
    def snapshot_retention(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        table = warehouse.table_if_exists(ident)
        return _no_table(ident, warehouse) if table is None else _evaluate("snapshot_retention", table)

    @dg.asset_check(asset=names.key("orphans"), name="orphan_bytes",
                    description=f"The last orphan scan found at most {policy.orphans.max_orphan_bytes} bytes.")
    def orphan_bytes(context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource) -> dg.AssetCheckResult:
        event = context.instance.get_latest_materialization_event(names.key("orphans"))
        recorded = event.asset_materialization.metadata.get("orphan_bytes") if event and event.asset_materialization \
            else None
        if recorded is not None:
            found, source = int(recorded.value), "last orphans materialization"
        else:
            table = warehouse.table_if_exists(ident)
            if table is None:
                return _no_table(ident, warehouse)
            result = table.remove_orphan_files(older_than=parse_duration(policy.orphans.older_than), dry_run=True)
            found, source = result.bytes, "dry run in the check"
        return dg.AssetCheckResult(passed=found <= policy.orphans.max_orphan_bytes, severity=WARN, metadata={
            "orphan_bytes": found, "limit_bytes": policy.orphans.max_orphan_bytes, "source": source,
        })

    orphans = [orphan_bytes] if "orphans" in spec.maintenance_steps else []  # a branch has no orphans asset
    return [small_files, level0_age, snapshot_retention, *orphans,
            *(declaration_check(spec, step) for step in spec.maintenance_steps)]


def declaration_check(spec: TableConfig, step: str) -> dg.AssetChecksDefinition:
    """The blocking check on one maintenance asset: a run of it would fail before its job while the
    declaration differs, so the automation conditions launch none (and the UI names the differences)."""
    ident = spec.identifier

    what = (f"branch {spec.branch} of {spec.main_identifier} exists and has the keys lake.yaml declares"
            if spec.branch is not None else f"lake.yaml declares {ident}'s keys and options as the table has them")

    @dg.asset_check(asset=TableNames(ident).key(step), name=DECLARATION_CHECK, blocking=True,
                    description=f"{what[0].upper()}{what[1:]}; while it fails, no maintenance run of it is launched.")
    def declaration(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        table = warehouse.table_if_exists(ident)
        if table is None and spec.branch is not None:  # a listed branch that does not exist: reported
            return dg.AssetCheckResult(passed=False, severity=ERROR, description=warehouse.missing_branch(ident),
                                       metadata={"differences": "the branch does not exist"})
        if table is None:  # nothing to differ from: the first ingest creates it as declared
            return dg.AssetCheckResult(passed=True, description=f"{ident} does not exist yet")
        passed, metadata = declaration_result(table, spec.primary_keys, spec.partition_keys, spec.options)
        return dg.AssetCheckResult(passed=passed, severity=ERROR, metadata=metadata)

    return declaration
