"""Declarative automation of each table's maintenance, evaluated by one automation sensor.

Which asset runs when (``AutomationCondition``):

- compaction: a health check of the compaction asset newly fails (the checks evaluate the table's
  current state after each observation and after each compaction), and no ingest or compaction of
  the table is in progress. The run takes the asset's default config, which compacts what the
  policy names (`CompactionConfig`), so one run fixes what the check saw;
- expiry and orphan removal: on the policy's cron (``expiry_cron``, ``orphans.cron``), once per tick;
- changelog: after any ingest of the table has landed (tables with ``changelog_after_ingest``), not
  while a compaction of the table runs (the changelog asset depends on the compaction).

None of them launches a run while the table's blocking ``declaration`` check fails (lake.yaml's keys
or options differ from the table's: the run would fail before its job, naming them); the health
sensor evaluates that check at every tick, and the condition's evaluation in the UI shows it. A
trigger that came meanwhile (a cron tick, a failed health check) runs once the declaration matches.
Orphan removal also waits while a blocking check of the expiry fails (``retained_snapshots_readable``:
an expiry broke a retained snapshot), as a run holding both skips it.

What stays a schedule or a custom sensor, and why:

- the full compaction on ``compaction_cron`` stays a schedule: it needs run config (``full: true``),
  and a condition can only request a run with the asset's default config;
- the small-file sensor stays: it reads the manifests at every new snapshot (no observation needed)
  and requests a compaction of exactly the breaching partitions, full or universal, keyed by
  snapshot; a condition can neither read the table nor pass that run config. Both triggers skip a
  table whose compaction is in progress, and the table's compaction pool runs one at a time
  (the ``lake_maintenance`` pool caps Spark maintenance runs overall).

Ingest carries a freshness policy when lake.yaml sets ``ingest.freshness``.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from lake_assets.defs.config import LakeConfig, TableConfig, parse_duration
from lake_assets.defs.declaration import DECLARATION_CHECK
from lake_assets.defs.names import JOB_TAG, TableNames

AUTOMATION_SENSOR = "lake_automation_sensor"
COMPACTION_AUTOMATION_SENSOR = "lake_compaction_automation_sensor"
TRIGGER_TAG = "lake/trigger"


def declaration_differs(key: dg.AssetKey) -> dg.AutomationCondition:
    """The asset's ``declaration`` check failed: lake.yaml does not say what the table is.

    Its other blocking checks (the expiry's ``retained_snapshots_readable``) do not hold the asset
    back: they judge its last run, and only its next run can judge again."""
    # blocking_only together with .allow(): Dagster 1.13's ChecksAutomationCondition narrows the set of
    # check keys in place with an allow selection (the asset node's own set, without blocking_only,
    # which every later condition of the evaluation would then see); blocking_only copies it first
    return dg.AutomationCondition.any_checks_match(
        dg.AutomationCondition.check_failed(), blocking_only=True
    ).allow(dg.AssetSelection.checks(dg.AssetCheckKey(key, DECLARATION_CHECK))).with_label(
        "lake.yaml's declaration differs from the table")


def upstream_blocking_check_failed() -> dg.AutomationCondition:
    """A blocking check of an upstream asset failed: for orphan removal, the expiry's
    ``retained_snapshots_readable`` (an expiry broke a retained snapshot: what it still names must
    not be taken for orphans) or its declaration. Holds until that asset's next run passes it."""
    return dg.AutomationCondition.any_deps_match(
        dg.AutomationCondition.any_checks_match(dg.AutomationCondition.check_failed(), blocking_only=True)
    ).with_label("a blocking check of an upstream asset failed")


def compaction_condition() -> dg.AutomationCondition:
    """A health check of the compaction asset newly failed, and nothing of the table is in flight.

    ``newly_true`` makes one failure one request: a check that still fails after the compaction
    does not start compactions in a loop. (A failing declaration check counts too, but holds the
    run back itself: `declaration_differs`.)"""
    # Typed as the base class: dagster types since_last_handled's self as AutomationCondition[AssetKey |
    # AssetCheckKey], which an asset-keyed condition is not to mypy (the parameter is invariant).
    failing: dg.AutomationCondition = dg.AutomationCondition.any_checks_match(
        dg.AutomationCondition.check_failed()
    ).newly_true()
    return (
        failing.since_last_handled()
        & ~dg.AutomationCondition.in_progress()
        & ~dg.AutomationCondition.any_deps_in_progress()
    ).with_label("health check newly failed")


def cron_condition(cron: str, timezone: str) -> dg.AutomationCondition:
    """Once per tick of ``cron`` (unlike ``on_cron``, not waiting for the upstream assets to update:
    expiry and orphan removal are due on time whether or not anything was written)."""
    tick: dg.AutomationCondition = dg.AutomationCondition.cron_tick_passed(cron, timezone)  # see compaction_condition
    return (
        tick.since_last_handled()
        & ~dg.AutomationCondition.in_progress()
    ).with_label(f"on {cron} ({timezone})")


def after_ingest_condition(ingest: dg.AssetKey) -> dg.AutomationCondition:
    """Once after any partition of the ingest asset updated (a backfill's days count as one), once
    the ingest run is over and no compaction of the table is in progress (the changelog asset
    depends on the compaction so as never to run beside it: `build_changelog_asset`); a compaction
    alone does not start it.

    ``eager()`` does not fit: the changelog is unpartitioned while ingest is daily, and eager waits
    for missing upstream partitions (a year of days, most of them never loaded)."""
    updated: dg.AutomationCondition = dg.AutomationCondition.any_deps_updated().allow(  # see compaction_condition
        dg.AssetSelection.assets(ingest))
    return (
        updated.since_last_handled()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("after ingest")


def table_conditions(spec: TableConfig, timezone: str) -> dict[dg.AssetKey, dg.AutomationCondition]:
    """Asset key → its condition, for the steps the table's policy automates."""
    names = TableNames(spec.identifier)
    policy = spec.maintenance
    out = {names.key("compaction"): compaction_condition()}
    if policy.expiry_cron:
        out[names.key("expiry")] = cron_condition(policy.expiry_cron, timezone)
    if policy.orphans.cron and "orphans" in spec.maintenance_steps:  # not on a branch
        out[names.key("orphans")] = cron_condition(policy.orphans.cron, timezone)
    if policy.changelog_after_ingest and spec.has_changelog_producer and spec.ingest is not None:
        out[names.key("changelog")] = after_ingest_condition(names.key("ingest"))
    if policy.partition_expiry_cron and spec.has_partition_expiry:
        out[names.key("partition_expiry")] = cron_condition(policy.partition_expiry_cron, timezone)
    if names.key("orphans") in out:  # the same gate as the blocking checks of the run: none downstream of a failure
        out[names.key("orphans")] = (out[names.key("orphans")] & ~upstream_blocking_check_failed()).with_label(
            out[names.key("orphans")].get_label())
    # every one of them is a maintenance asset carrying the declaration check (TableConfig.maintenance_steps)
    return {key: (condition & ~declaration_differs(key)).with_label(condition.get_label())
            for key, condition in out.items()}


def freshness_policy(spec: TableConfig) -> dg.FreshnessPolicy | None:
    """Ingest's freshness: fails when no partition landed for ``ingest.freshness.fail_after``."""
    freshness = spec.ingest.freshness if spec.ingest is not None else None
    if freshness is None:
        return None
    warn = parse_duration(freshness.warn_after) if freshness.warn_after else None
    return dg.FreshnessPolicy.time_window(fail_window=parse_duration(freshness.fail_after), warn_window=warn)


def automate_table(
    spec: TableConfig, timezone: str, assets: Sequence[dg.AssetsDefinition]
) -> list[dg.AssetsDefinition]:
    """The table's assets with their automation conditions and ingest freshness policy attached.

    Attached here rather than in each asset's decorator so the assets stay plain (materializable
    from the UI and jobs with or without automation)."""
    conditions = table_conditions(spec, timezone)
    ingest_key = TableNames(spec.identifier).key("ingest")
    freshness = freshness_policy(spec)

    def attach(asset_spec: dg.AssetSpec) -> dg.AssetSpec:
        if asset_spec.key in conditions:
            asset_spec = asset_spec.replace_attributes(automation_condition=conditions[asset_spec.key])
        if asset_spec.key == ingest_key and freshness is not None:
            asset_spec = asset_spec.replace_attributes(freshness_policy=freshness)
        return asset_spec

    return [asset.map_asset_specs(attach) for asset in assets]


def compaction_keys(config: LakeConfig) -> list[dg.AssetKey]:
    return [TableNames(spec.identifier).key("compaction") for spec in config.maintained_tables]


def build_automation_sensors(config: LakeConfig) -> list[dg.AutomationConditionSensorDefinition]:
    """The sensors that evaluate every table's conditions (on unless ``automation.default_status``
    says stopped, like the other sensors).

    Compactions have their own sensor so their runs carry ``lake/job=compact`` like the small-file
    sensor's and the schedule's. The pools limit them (one per table, the global maintenance cap;
    dagster.yaml), and the condition's ``~in_progress`` skips a table whose compaction runs."""
    running = config.automation.default_status == "running"
    status = dg.DefaultSensorStatus.RUNNING if running else dg.DefaultSensorStatus.STOPPED
    interval = config.automation.automation_sensor_interval_seconds
    compactions = dg.AssetSelection.assets(*compaction_keys(config))
    return [
        dg.AutomationConditionSensorDefinition(
            AUTOMATION_SENSOR,
            target=dg.AssetSelection.all() - compactions,
            default_status=status,
            minimum_interval_seconds=interval,
            description="Evaluates the tables' automation conditions: expiry and orphan removal on their "
            "crons, the changelog after ingest.",
        ),
        dg.AutomationConditionSensorDefinition(
            COMPACTION_AUTOMATION_SENSOR,
            target=compactions,
            run_tags={JOB_TAG: "compact", TRIGGER_TAG: "automation-condition"},
            default_status=status,
            minimum_interval_seconds=interval,
            description="Requests a compaction of a table when one of its health checks newly fails.",
        ),
    ]
