"""lake.yaml's ``branches``: validation, the branches' assets beside main's (whose keys stay), their
health observations and checks, and a listed branch that does not exist (reported everywhere).

No Spark here: the tables are written with the core, the sensors and checks run against a real
Dagster instance (tests/dagster/test_branch_maintenance.py runs the jobs)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.defs.automation import COMPACTION_AUTOMATION_SENSOR
from lake_assets.defs.config import LakeConfigError, load_config
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.observations import HEALTH_SENSOR
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from tests.dagster.helpers import ONE_TABLE_SPARK

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])
TABLE = """
  - identifier: db.t
    schema: {dt: STRING NOT NULL, id: BIGINT NOT NULL, v: STRING}
    primary_keys: [dt, id]
    partition_keys: [dt]
    options: {bucket: 1}
    maintenance: {retain_min: 1, retain_max: 10, level0_runs: 5, compaction_cron: "0 2 * * *", expiry_cron: null}
"""
BRANCHES = """    branches:
      - dev
      - {name: audit, maintenance: {retain_max: 2, level0_runs: 2, compaction_cron: null, expiry_cron: "0 6 * * *"}}
"""


def _config(tmp_path: Path, tables: str) -> Path:
    path = tmp_path / "lake.yaml"
    path.write_text(ONE_TABLE_SPARK + "tables:" + tables)
    return path


def _table(tmp_path: Path) -> object:
    catalog = Catalog(str(tmp_path / "warehouse"))
    catalog.create_database("db")
    return catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "1"})


def _write(table, dt: str, i: int) -> None:
    table.write_arrow(pa.table({"dt": [dt], "id": [i], "v": [f"r{i}"]}, schema=SCHEMA))


def test_branches_get_their_own_assets_and_main_keeps_its_keys(tmp_path: Path) -> None:
    without = build_definitions(load_config(_config(tmp_path, TABLE)))
    config = load_config(_config(tmp_path, TABLE + BRANCHES))
    defs = build_definitions(config)
    graph, before = defs.resolve_asset_graph(), without.resolve_asset_graph()
    branch_keys = {"db/t_branch_dev_compaction", "db/t_branch_dev_expiry", "db/t_branch_audit_compaction",
                   "db/t_branch_audit_expiry"}
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {k.to_user_string() for k in before.get_all_asset_keys()} | branch_keys
    assert {graph.get(dg.AssetKey.from_user_string(k)).group_name for k in keys} == {"db_t"}
    # the branch's expiry follows its compaction; orphan removal is main's only (a whole-table operation)
    assert graph.get(dg.AssetKey(["db", "t_branch_dev_expiry"])).parent_keys == {
        dg.AssetKey(["db", "t_branch_dev_compaction"])}
    checks = {(c.asset_key.to_user_string(), c.name) for c in graph.asset_check_keys}
    assert {c for c in checks if "branch_audit" in c[0]} == {
        ("db/t_branch_audit_compaction", "small_files"), ("db/t_branch_audit_compaction", "level0_age"),
        ("db/t_branch_audit_compaction", "declaration"), ("db/t_branch_audit_expiry", "snapshot_retention"),
        ("db/t_branch_audit_expiry", "declaration"),
        # the jobs' own checks, reported through Pipes by the branch's compact and expire jobs
        ("db/t_branch_audit_compaction", "compacted_small_files"),
        ("db/t_branch_audit_expiry", "retained_snapshots_readable")}
    # the branch's own settings over the table's: audit has no full-compaction schedule, an expiry cron
    assert sorted(s.name for s in defs.schedules) == ["db_t_branch_dev_full_compaction_schedule",
                                                       "db_t_full_compaction_schedule"]
    assert "0 6 * * *" in graph.get(dg.AssetKey(["db", "t_branch_audit_expiry"])).automation_condition.get_label()
    assert graph.get(dg.AssetKey(["db", "t_branch_dev_expiry"])).automation_condition is None  # the table's null
    compactions = defs.resolve_sensor_def(COMPACTION_AUTOMATION_SENSOR).asset_selection.resolve(graph)
    assert {k.to_user_string() for k in compactions} == {
        "db/t_compaction", "db/t_branch_dev_compaction", "db/t_branch_audit_compaction"}
    dev_job = defs.resolve_job_def("db_t_branch_dev_compaction_job")
    assert dev_job.tags["lake/table"] == dev_job.tags["lake/compaction-table"] == "db.t$branch_dev"
    [dev, audit] = config.tables[0].branch_specs()
    assert (dev.maintenance.retain_max, audit.maintenance.retain_max, audit.maintenance.retain_min) == (10, 2, 1)


@pytest.mark.parametrize(("branches", "message"), [
    ("[main]", "'main' is the table itself"),
    ("[dev, dev]", "branches ['dev'] are listed more than once"),
    ("['42']", "a name that is not a number"),
    ("[{name: dev, maintenance: {retain_min: 20}}]", "branches (dev).maintenance: retain_min (20) must not exceed"),
    ("[{name: dev, maintenance: {orphans: {enabled: true}}}]", "orphans is the table's, not a branch's"),
    ("[dev-1, dev_1]", "both have the Dagster asset db/t_branch_dev_1_compaction"),
])
def test_invalid_branches_are_refused_naming_them(tmp_path: Path, branches: str, message: str) -> None:
    with pytest.raises(LakeConfigError) as err:
        load_config(_config(tmp_path, TABLE + f"    branches: {branches}\n"))
    assert message in str(err.value)


def test_a_table_named_like_a_branch_and_a_branch_identifier_are_refused(tmp_path: Path) -> None:
    clash = TABLE + "    branches: [dev]\n" + TABLE.replace("db.t\n", "db.t_branch_dev\n")
    with pytest.raises(LakeConfigError, match=r"db\.t_branch_dev and db\.t\$branch_dev both have the Dagster asset"):
        load_config(_config(tmp_path, clash))
    with pytest.raises(LakeConfigError, match=r"names a branch: declare the table and list the branch under"):
        load_config(_config(tmp_path, TABLE.replace("db.t\n", "db.t$branch_dev\n")))


def test_health_sensor_observes_each_branch_against_its_own_policy(tmp_path: Path) -> None:
    defs = build_definitions(load_config(_config(tmp_path, TABLE + BRANCHES)))
    table = _table(tmp_path)
    _write(table, "a", 0)
    table.create_branch("dev")
    table.create_branch("audit")
    audit = Catalog(str(tmp_path / "warehouse")).get_table("db.t$branch_audit")
    for i in range(3):  # 3 snapshots, 3 level-0 runs in dt=b: over audit's retain_max 2 and level0_runs 2
        _write(audit, "b", i)
    with dg.instance_for_test() as instance, dg.build_sensor_context(
            instance=instance, resources=defs.resources) as context:
        result = defs.resolve_sensor_def(HEALTH_SENSOR)(context)
    observed = {e.asset_key.to_user_string(): e for e in result.asset_events if isinstance(e, dg.AssetObservation)}
    assert set(observed) == {"db/t_compaction", "db/t_branch_dev_compaction", "db/t_branch_audit_compaction"}
    md = {k: {n: v.value for n, v in e.metadata.items()} for k, e in observed.items()}
    assert (md["db/t_compaction"]["snapshots_retained"], md["db/t_compaction"]["partitions"]) == (1, 1)
    assert "snapshot_id" not in md["db/t_branch_dev_compaction"]  # created empty: no snapshot yet
    audit_md = md["db/t_branch_audit_compaction"]
    assert audit_md["snapshot_id"] == 3
    assert (audit_md["snapshots_retained"], audit_md["level0_files"], audit_md["partitions"]) == (3, 3, 1)
    # a branch shows whose branch it is, not its table's branches as if they were its own
    assert (audit_md["branch"], audit_md["branch_of"]) == ("audit", "db.t")
    assert "branches" not in audit_md and "branch_names" not in audit_md
    main_md = md["db/t_compaction"]
    assert (main_md["branches"], main_md["branch_names"]) == (2, ["audit", "dev"]) and "branch" not in main_md
    checks = {(e.asset_key.to_user_string(), e.check_name): e.passed for e in result.asset_events
              if isinstance(e, dg.AssetCheckEvaluation)}
    assert checks[("db/t_branch_audit_expiry", "snapshot_retention")] is False  # 3 > the branch's 2
    assert checks[("db/t_expiry", "snapshot_retention")] is True  # main: 1 <= 10
    assert checks[("db/t_branch_audit_compaction", "declaration")] is True

    # the branch's full-compaction schedule asks for its own compaction job, tagged with the branch
    schedule = defs.resolve_schedule_def("db_t_branch_dev_full_compaction_schedule")
    with dg.instance_for_test() as instance, dg.build_schedule_context(
            instance=instance, resources=defs.resources) as context:
        [request] = schedule.evaluate_tick(context).run_requests
    assert request.run_config["ops"]["db__t_branch_dev_compaction"]["config"]["full"] is True
    assert request.tags["lake/compaction-table"] == "db.t$branch_dev" and request.job_name is None
    assert schedule.job_name == "db_t_branch_dev_compaction_job"


def test_a_listed_branch_that_does_not_exist_is_reported_not_skipped(tmp_path: Path) -> None:
    defs = build_definitions(load_config(_config(tmp_path, TABLE + BRANCHES)))
    table = _table(tmp_path)
    _write(table, "a", 0)
    table.create_branch("audit")  # dev is listed but missing
    missing = "Branch 'dev' of db.t does not exist (its branches: audit)"
    with dg.instance_for_test() as instance:
        with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
            health = defs.resolve_sensor_def(HEALTH_SENSOR)(context)
        failed = {e.asset_key.to_user_string(): e for e in health.asset_events
                  if isinstance(e, dg.AssetCheckEvaluation) and not e.passed}
        assert set(failed) == {"db/t_branch_dev_compaction", "db/t_branch_dev_expiry"}
        assert all(e.check_name == "declaration" and e.blocking and missing in (e.description or "")
                   for e in failed.values())
        with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
            tick = defs.resolve_sensor_def(SMALL_FILE_SENSOR).evaluate_tick(context)
        assert not tick.run_requests and missing in (tick.skip_message or "")
        schedule = defs.resolve_schedule_def("db_t_branch_dev_full_compaction_schedule")
        with dg.build_schedule_context(instance=instance, resources=defs.resources) as context:
            skipped = schedule.evaluate_tick(context)
        assert not skipped.run_requests and missing in (skipped.skip_message or "")
        # a run of its compaction fails before any Spark job, naming it; the check fails too
        run = defs.resolve_job_def("db_t_branch_dev_compaction_job").execute_in_process(
            instance=instance, raise_on_error=False)
        assert not run.success
        failure = next(e for e in run.all_events if e.is_step_failure)
        assert missing in failure.step_failure_data.error.message + str(failure.step_failure_data.user_failure_data)
        checks = defs.resolve_implicit_global_asset_job_def().get_subset(
            asset_check_selection={dg.AssetCheckKey(dg.AssetKey(["db", "t_branch_dev_expiry"]), "snapshot_retention")},
            asset_selection=set()).execute_in_process(instance=instance, raise_on_error=False)
        [evaluation] = checks.get_asset_check_evaluations()
        assert not evaluation.passed and missing in (evaluation.description or "")


def test_a_branch_directory_without_schema_is_reported_as_damaged(tmp_path: Path) -> None:
    defs = build_definitions(load_config(_config(tmp_path, TABLE + BRANCHES)))
    table = _table(tmp_path)
    _write(table, "a", 0)
    (Path(table.store.paths.root) / "branch" / "branch-dev").mkdir(parents=True)  # a half-made or damaged branch
    warehouse = defs.resources["warehouse"]
    assert warehouse.table_if_exists("db.t$branch_dev") is None
    assert "Branch 'dev' of db.t has no schema file under branch/branch-dev/schema" in warehouse.missing_branch(
        "db.t$branch_dev")
    assert "Branch 'audit' of db.t does not exist (its branches: dev)" in warehouse.missing_branch("db.t$branch_audit")
