"""Declarative automation, evaluated with Dagster's own test helper (`evaluate_automation_conditions`)
on the code location's definitions: expiry and orphan cleanup on their crons, the changelog after
ingest, a compaction when a health check newly fails; the sensors that evaluate them; freshness."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg
import pyarrow as pa
import pytest

from lake_assets.defs.assets.compaction import CompactionConfig, compact_args, policy_config
from lake_assets.defs.automation import AUTOMATION_SENSOR, COMPACTION_AUTOMATION_SENSOR
from lake_assets.defs.checks import build_table_checks
from lake_assets.defs.config import LakeConfigError, load_config
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.names import JOB_TAG
from tests.dagster.helpers import materialization_metadata, write_lake

KEY = dg.AssetKey.from_user_string
BLOCKING = {"declaration", "retained_snapshots_readable"}
T0 = datetime(2024, 1, 5, 1, 0, tzinfo=UTC)  # before the crons of the test lake: expiry 02:30, orphans 04:00 Sun


class Ticks:
    """Successive evaluations of the conditions, carrying the cursor as the automation sensor does."""

    def __init__(self, defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
        self.defs, self.instance, self.cursor = defs, instance, None

    def __call__(self, when: datetime) -> set[str]:
        result = dg.evaluate_automation_conditions(defs=self.defs, instance=self.instance, cursor=self.cursor,
                                                   evaluation_time=when)
        self.cursor = result.cursor
        keys = self.defs.resolve_asset_graph().get_all_asset_keys()
        return {k.to_user_string() for k in keys if result.get_requested_partitions(k)}


@pytest.fixture
def ticks(core_lake):
    _, defs = core_lake
    with dg.instance_for_test() as instance:
        yield Ticks(defs, instance)


def test_expiry_and_orphans_run_once_per_cron_tick(ticks: Ticks) -> None:
    assert ticks(T0) == set()  # the first evaluation only notes the state
    assert ticks(T0 + timedelta(minutes=30)) == set()
    assert ticks(datetime(2024, 1, 5, 2, 31, tzinfo=UTC)) == {"db/orders_expiry"}  # 30 2 * * *
    assert ticks(datetime(2024, 1, 5, 2, 40, tzinfo=UTC)) == set()  # not twice for one tick
    assert ticks(datetime(2024, 1, 5, 5, 1, tzinfo=UTC)) == {"db/events_orphans"}  # 0 5 * * *
    assert ticks(datetime(2024, 1, 5, 5, 2, tzinfo=UTC)) == set()
    assert ticks(datetime(2024, 1, 6, 5, 1, tzinfo=UTC)) == {"db/orders_expiry", "db/events_orphans"}
    assert ticks(datetime(2024, 1, 6, 5, 2, tzinfo=UTC)) == set()
    # Sunday 04:00: orders' orphans (0 4 * * 0); events have no expiry cron
    assert ticks(datetime(2024, 1, 7, 4, 1, tzinfo=UTC)) == {"db/orders_expiry", "db/orders_orphans"}


def test_changelog_once_after_each_ingest(ticks: Ticks) -> None:
    assert ticks(T0) == set()
    instance = ticks.instance
    for day in ("2024-01-01", "2024-01-02"):  # a two-day backfill lands
        instance.report_runless_asset_event(dg.AssetMaterialization(KEY("db/orders_ingest"), partition=day))
    assert ticks(T0 + timedelta(seconds=30)) == {"db/orders_changelog"}
    assert ticks(T0 + timedelta(seconds=60)) == set()  # handled: not again without a new ingest
    instance.report_runless_asset_event(dg.AssetMaterialization(KEY("db/events_ingest"), partition="2024-01-01"))
    assert ticks(T0 + timedelta(seconds=90)) == set()  # events: no changelog producer
    instance.report_runless_asset_event(dg.AssetMaterialization(KEY("db/orders_ingest"), partition="2024-01-03"))
    assert ticks(T0 + timedelta(seconds=120)) == {"db/orders_changelog"}
    # the changelog depends on the compaction (never beside it), but a compaction alone does not start it
    instance.report_runless_asset_event(dg.AssetMaterialization(KEY("db/orders_compaction")))
    assert ticks(T0 + timedelta(seconds=150)) == set()


def test_no_changelog_on_the_first_tick_after_one_was_produced(ticks: Ticks) -> None:
    """The demo ingests and produces the changelog before the daemon starts: the first evaluation
    must not run it again (the old changelog sensor did)."""
    ticks.instance.report_runless_asset_event(dg.AssetMaterialization(KEY("db/orders_ingest"), partition="2024-01-01"))
    ticks.instance.report_runless_asset_event(dg.AssetMaterialization(KEY("db/orders_changelog")))
    assert ticks(T0) == set()
    assert ticks(T0 + timedelta(seconds=30)) == set()


def _readable(instance: dg.DagsterInstance, passed: bool) -> None:
    """db.orders' expiry's own check, as its run records it."""
    instance.report_runless_asset_event(dg.AssetCheckEvaluation(
        asset_key=KEY("db/orders_expiry"), check_name="retained_snapshots_readable", passed=passed,
        severity=dg.AssetCheckSeverity.ERROR, blocking=True))


def test_no_orphan_removal_while_an_expiry_broke_a_retained_snapshot(ticks: Ticks) -> None:
    """The expiry's blocking check failed: orphan removal's cron tick waits (what the broken
    snapshot names must not be taken for orphans) while the expiry's own cron still runs (its next
    run judges again); once the check passes, the held tick runs."""
    assert ticks(T0) == set()
    _readable(ticks.instance, passed=False)
    # Sunday 04:01: orders' expiry (02:30) and orphans (0 4 * * 0) are due, and events' orphans
    # (0 5 * * *, another table: not held)
    assert ticks(datetime(2024, 1, 7, 4, 1, tzinfo=UTC)) == {"db/orders_expiry", "db/events_orphans"}
    assert ticks(datetime(2024, 1, 7, 4, 2, tzinfo=UTC)) == set()
    _readable(ticks.instance, passed=True)
    assert ticks(datetime(2024, 1, 7, 4, 3, tzinfo=UTC)) == {"db/orders_orphans"}


def test_a_run_of_expiry_and_orphans_skips_orphans_after_a_broken_expiry(core_lake, in_process_jobs) -> None:
    """A data file the earliest retained snapshot names is gone (what a wrong expiry deletes): the
    real expire job's check fails, and being blocking it stops the orphan removal of the same run."""
    import os

    config, defs = core_lake
    warehouse = defs.resources["warehouse"]
    for i in range(2):
        _write(warehouse, config, 100 * i)
    table = warehouse.table("db.orders")
    entry = table.store.file_store_scan().live_entries(table.snapshots()[0])[0]
    os.remove(table.store.data_file_path(entry.partition, entry.bucket, entry.file))
    assets = [defs.resolve_assets_def(KEY(f"db/orders_{step}")) for step in ("expiry", "orphans")]
    with dg.instance_for_test() as instance:
        result = dg.materialize(assets, instance=instance, raise_on_error=False)  # the assets carry their resources
    [check] = [e for e in result.get_asset_check_evaluations() if e.check_name == "retained_snapshots_readable"]
    assert not check.passed and check.blocking and check.metadata["missing_files"].value == 1
    assert {e.asset_key for e in result.get_asset_materialization_events()} == {KEY("db/orders_expiry")}
    assert in_process_jobs == ["expire"]  # the orphan job never started


def _run_checks(config, defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, bool]:
    """The compaction asset's health checks, run for real against the table (as an observation does)."""
    checks = [c for c in build_table_checks(config.table("db.orders"))
              if c.check_key.asset_key == KEY("db/orders_compaction")]
    result = dg.materialize(checks, resources=defs.resources, instance=instance,
                            selection=dg.AssetSelection.checks(*checks))
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def test_compaction_when_a_health_check_newly_fails(core_lake) -> None:
    config, defs = core_lake
    warehouse = defs.resources["warehouse"]
    with dg.instance_for_test() as instance:
        ticks = Ticks(defs, instance)
        _write(warehouse, config, 0)
        instance.report_runless_asset_event(dg.AssetMaterialization(KEY("db/orders_compaction")))
        assert ticks(T0) == set()
        assert _run_checks(config, defs, instance)["small_files"]
        assert ticks(T0 + timedelta(seconds=30)) == set()
        for i in range(1, 4):  # 4 small files per bucket > small_file_threshold 3
            _write(warehouse, config, 100 * i)
        assert not _run_checks(config, defs, instance)["small_files"]
        assert ticks(T0 + timedelta(seconds=60)) == {"db/orders_compaction"}
        assert not _run_checks(config, defs, instance)["small_files"]  # still failing: no loop
        assert ticks(T0 + timedelta(seconds=90)) == set()
        # a compaction lands (the table is compacted as the run would) and the checks pass again;
        # a later breach requests the next compaction
        warehouse.table("db.orders").compact(full=True)
        instance.report_runless_asset_event(dg.AssetMaterialization(KEY("db/orders_compaction")))
        assert _run_checks(config, defs, instance)["small_files"]
        assert ticks(T0 + timedelta(seconds=120)) == set()
        for i in range(4, 8):
            _write(warehouse, config, 100 * i)
        assert not _run_checks(config, defs, instance)["small_files"]
        assert ticks(T0 + timedelta(seconds=150)) == {"db/orders_compaction"}


def test_compaction_of_a_table_never_compacted(core_lake) -> None:
    """No compaction materialization yet: a failing check still requests the first compaction."""
    config, defs = core_lake
    warehouse = defs.resources["warehouse"]
    with dg.instance_for_test() as instance:
        ticks = Ticks(defs, instance)
        _write(warehouse, config, 0)
        assert ticks(T0) == set()
        for i in range(1, 4):
            _write(warehouse, config, 100 * i)
        assert not _run_checks(config, defs, instance)["small_files"]
        assert ticks(T0 + timedelta(seconds=30)) == {"db/orders_compaction"}


def _write(warehouse, config, start: int, create: bool = True) -> None:
    """One write-only commit into db.orders dt=2024-01-01: a small level-0 file in each bucket."""
    table = warehouse.ensure_table(config.table("db.orders")) if create else warehouse.table("db.orders")
    ids = list(range(start, start + 20))
    writer = table.new_writer("test", write_only=True)
    writer.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": ["2024-01-01"] * 20, "name": ["x"] * 20,
                                 "amount": [1.0] * 20}))
    table.new_committer("test").commit(writer.prepare_commit(), start + 1)
    writer.close()


def test_automation_sensors_and_their_targets(lake_defs: dg.Definitions) -> None:
    repo = lake_defs.get_repository_def()
    sensors = {s.name: s for s in repo.sensor_defs}
    assert set(sensors) == {"lake_small_file_sensor", AUTOMATION_SENSOR, COMPACTION_AUTOMATION_SENSOR,
                            "lake_health_sensor"}  # the observations that the compaction condition follows
    graph = lake_defs.resolve_asset_graph()
    compactions = sensors[COMPACTION_AUTOMATION_SENSOR].asset_selection.resolve(graph)
    assert compactions == {KEY("db/orders_compaction"), KEY("db/events_compaction")}
    others = sensors[AUTOMATION_SENSOR].asset_selection.resolve(graph)
    assert compactions.isdisjoint(others) and KEY("db/orders_expiry") in others
    # compactions started by a condition count towards the run queue's cap on compactions
    assert sensors[COMPACTION_AUTOMATION_SENSOR].run_tags[JOB_TAG] == "compact"
    # the test lake starts its sensors stopped (automation.default_status)
    assert sensors[AUTOMATION_SENSOR].default_status == dg.DefaultSensorStatus.STOPPED
    conditions = {k.to_user_string() for k in graph.get_all_asset_keys()
                  if graph.get(k).automation_condition is not None}
    assert conditions == {"db/orders_compaction", "db/orders_expiry", "db/orders_orphans", "db/orders_changelog",
                          "db/events_compaction", "db/events_orphans"}  # events: expiry_cron null


def test_ingest_freshness_policy(tmp_path) -> None:
    path = write_lake(tmp_path)
    text = path.read_text().replace("partition_column: dt}", "partition_column: dt,\n"
                                    "              freshness: {fail_after: 26h, warn_after: 25h}}")
    path.write_text(text)
    defs = build_definitions(load_config(path))
    policy = defs.resolve_assets_def(KEY("db/orders_ingest")).specs_by_key[KEY("db/orders_ingest")].freshness_policy
    assert policy.fail_window.to_timedelta() == timedelta(hours=26)
    assert policy.warn_window.to_timedelta() == timedelta(hours=25)
    events = defs.resolve_assets_def(KEY("db/events_ingest")).specs_by_key[KEY("db/events_ingest")]
    assert events.freshness_policy is None  # not configured: none

    path.write_text(text.replace("warn_after: 25h", "warn_after: 30h"))
    with pytest.raises(LakeConfigError, match="warn_after \\(30h\\) must be shorter than fail_after \\(26h\\)"):
        load_config(path)


def test_default_compaction_config_follows_the_policy(core_lake) -> None:
    """A condition's run has the default config: it compacts the partitions over the policy, full
    where universal compaction would not pick them, as the small-file sensor would ask."""
    config, defs = core_lake
    graph = defs.resolve_asset_graph()  # the gate is the declaration check, not every blocking check
    assert {k.name for k in graph.asset_check_keys if graph.get(k).blocking} == BLOCKING
    warehouse = defs.resources["warehouse"]
    spec = config.table("db.orders")
    _write(warehouse, config, 0)
    table = warehouse.table("db.orders")
    default = CompactionConfig()
    assert policy_config(default, table.health(), spec) == default  # nothing over the policy: all, universal
    for i in range(1, 4):
        _write(warehouse, config, 100 * i)
    chosen = policy_config(default, table.health(), spec)
    assert chosen.partitions == ["dt=2024-01-01"] and chosen.full  # 4 runs: Paimon's trigger (5) would wait
    assert compact_args(chosen) == ["--full", "--partition", "dt=2024-01-01"]


def test_a_condition_run_compacts_what_the_policy_names(core_lake, in_process_jobs: list[str]) -> None:
    """The run a condition launches (default config) runs the real compact job on the breaching
    partition only, fully, and the checks it runs with then pass."""
    config, defs = core_lake
    warehouse = defs.resources["warehouse"]
    for i in range(4):
        _write(warehouse, config, 100 * i)
    _write_day(warehouse, config, "2024-01-02")  # one file per bucket: within the policy
    with dg.instance_for_test() as instance:
        result = defs.resolve_job_def("db_orders_compaction_job").execute_in_process(instance=instance)
    assert result.success
    md = materialization_metadata(result)
    assert md["partitions"] == "dt=2024-01-01" and md["full"] is True
    assert md["small_files_after"] < md["small_files_before"]
    health = {r.data["partition"]: r.data for r in md["health"].records}
    assert health["dt=2024-01-01"]["level0_file_count"] == 0
    assert health["dt=2024-01-02"]["level0_file_count"] > 0  # not over the policy: left alone
    assert all(e.passed for e in result.get_asset_check_evaluations())
    assert in_process_jobs == ["compact"]  # in-process: in_process_jobs.py


def _write_day(warehouse, config, day: str) -> None:
    table = warehouse.table("db.orders")
    writer = table.new_writer("test-day", write_only=True)
    writer.write_arrow(pa.table({"id": pa.array(range(20), pa.int64()), "dt": [day] * 20, "name": ["y"] * 20,
                                 "amount": [2.0] * 20}))
    table.new_committer("test-day").commit(writer.prepare_commit(), 1)
    writer.close()


def test_no_maintenance_run_while_the_declaration_differs(core_lake) -> None:
    """db.orders exists without the changelog producer lake.yaml declares: each of its runs would fail
    before its job. The health sensor fails its maintenance assets' declaration checks, naming the
    difference; the cron and health-check triggers then request nothing and the full-compaction
    schedule skips, naming it. Once the table is what lake.yaml says, the runs held back go."""
    from lake_assets.defs.observations import HEALTH_SENSOR

    config, defs = core_lake
    graph = defs.resolve_asset_graph()  # the gate is the declaration check, not every blocking check
    assert {k.name for k in graph.asset_check_keys if graph.get(k).blocking} == BLOCKING
    warehouse = defs.resources["warehouse"]
    spec = config.table("db.orders")
    warehouse.catalog().create_database("db", ignore_if_exists=True)
    warehouse.catalog().create_table("db.orders", spec.arrow_schema, primary_keys=spec.primary_keys,
                                     partition_keys=spec.partition_keys, options={"bucket": "2"})
    for i in range(4):  # 4 small files per bucket > small_file_threshold 3: the small_files check fails
        _write(warehouse, config, 100 * i, create=False)

    def health_tick(instance: dg.DagsterInstance) -> dict[str, dg.AssetCheckEvaluation]:
        with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
            result = defs.resolve_sensor_def(HEALTH_SENSOR)(context)
        found = {}
        for event in result.asset_events:
            instance.report_runless_asset_event(event)  # as the daemon stores a sensor's events
            if isinstance(event, dg.AssetCheckEvaluation) and event.check_name == "declaration":
                found[event.asset_key.to_user_string()] = event
        return found

    with dg.instance_for_test() as instance:
        ticks = Ticks(defs, instance)
        assert ticks(T0) == set()
        declared = health_tick(instance)
        orders = {k: e for k, e in declared.items() if k.startswith("db/orders_")}
        assert sorted(orders) == ["db/orders_changelog", "db/orders_compaction", "db/orders_expiry",
                                  "db/orders_orphans"]  # db.events does not exist: nothing to judge
        assert not any(e.passed for e in orders.values())
        difference = "option changelog-producer: lake.yaml declares 'lookup', the table does not set it"
        assert difference in orders["db/orders_expiry"].metadata["differences"].value
        # the small_files check failed and expiry's cron ticked: without the gate both would run
        assert ticks(datetime(2024, 1, 5, 2, 31, tzinfo=UTC)) == set()
        with dg.build_schedule_context(instance=instance, resources=defs.resources,
                                       scheduled_execution_time=datetime(2024, 1, 5, 2, 0, tzinfo=UTC)) as context:
            skipped = defs.resolve_schedule_def("db_orders_full_compaction_schedule").evaluate_tick(context)
        assert skipped.run_requests == [] and difference in (skipped.skip_message or "")
        assert "db.orders: not requested: lake.yaml's declaration differs" in (skipped.skip_message or "")
        # the table is altered to what lake.yaml declares: the declaration passes, the held-back runs go
        warehouse.table("db.orders").update_schema().set_option("changelog-producer", "lookup").commit()
        assert all(e.passed for e in health_tick(instance).values())
        # the runs held back go: the cron tick's expiry and the failed health check's compaction
        assert ticks(datetime(2024, 1, 5, 2, 40, tzinfo=UTC)) == {"db/orders_expiry", "db/orders_compaction"}
