"""The code location loads: every asset, check, job, schedule and sensor of a two-table config."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from lake_assets.defs.names import COMPACTION_TABLE_TAG, JOB_TAG, MAINTENANCE_POOL
from tests.dagster.helpers import REPO


def _keys(defs: dg.Definitions) -> set[str]:
    return {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}


def test_definitions_validate(lake_defs: dg.Definitions) -> None:
    dg.Definitions.validate_loadable(lake_defs)
    assert _keys(lake_defs) == {
        "db/orders_ingest", "db/orders_compaction", "db/orders_expiry", "db/orders_orphans", "db/orders_changelog",
        "db/events_ingest", "db/events_compaction", "db/events_expiry", "db/events_orphans",
    }  # no changelog asset for db.events: it has no changelog producer
    checks = {(c.asset_key.to_user_string(), c.name) for c in lake_defs.resolve_asset_graph().asset_check_keys}
    for table in ("orders", "events"):
        assert {(f"db/{table}_compaction", "small_files"), (f"db/{table}_compaction", "level0_age"),
                (f"db/{table}_expiry", "snapshot_retention"), (f"db/{table}_orphans", "orphan_bytes")} <= checks
        # the jobs' own checks, declared on the asset whose run reports them (`lake_assets.job_checks`)
        assert {(f"db/{table}_compaction", "compacted_small_files"),
                (f"db/{table}_expiry", "retained_snapshots_readable"),
                (f"db/{table}_orphans", "orphans_older_than_bound")} <= checks
    assert {(a, n) for a, n in checks if n == "declaration"} == {  # one per maintenance asset
        (k, "declaration") for k in _keys(lake_defs) if not k.endswith("_ingest")}
    repo = lake_defs.get_repository_def()
    assert {s.name for s in repo.sensor_defs} == {"lake_small_file_sensor", "lake_automation_sensor",
                                                  "lake_compaction_automation_sensor", "lake_health_sensor"}
    assert {s.name for s in repo.schedule_defs} == {  # expiry and orphans: automation conditions
        "db_orders_full_compaction_schedule", "db_events_full_compaction_schedule",
    }
    assert set(lake_defs.resources) == {"warehouse", "spark", "lake_io_manager", "lake_step_io_manager"}


def test_lineage_groups_and_partitions(lake_defs: dg.Definitions) -> None:
    graph = lake_defs.resolve_asset_graph()
    key = dg.AssetKey.from_user_string
    assert graph.get(key("db/orders_compaction")).parent_keys == {key("db/orders_ingest")}
    assert graph.get(key("db/orders_expiry")).parent_keys == {key("db/orders_compaction")}
    assert graph.get(key("db/orders_orphans")).parent_keys == {key("db/orders_expiry")}
    # after the compaction, never beside it (both compact a lookup table: a commit conflict)
    assert graph.get(key("db/orders_changelog")).parent_keys == {key("db/orders_ingest"), key("db/orders_compaction")}
    assert {graph.get(k).group_name for k in graph.get_all_asset_keys()} == {"db_orders", "db_events"}
    ingest = lake_defs.get_assets_def(key("db/orders_ingest"))
    assert ingest.backfill_policy == dg.BackfillPolicy.single_run()
    assert ingest.partitions_def.get_first_partition_key() == "2024-01-01"
    # Pools: a compaction's steps use the table's pool and the shared maintenance pool; the other
    # Spark maintenance steps the shared one; ingest none.
    compaction = lake_defs.get_assets_def(key("db/orders_compaction")).node_def
    assert {n.name: n.definition.pool for n in compaction.nodes} == {
        "db_orders_compaction_plan": "lake_compaction_db_orders", "db_orders_compact": MAINTENANCE_POOL}
    # the plan reaches the Spark step through its own IO manager, whatever a project binds as io_manager
    plan = next(n.definition for n in compaction.nodes if n.name == "db_orders_compaction_plan")
    assert plan.outs["result"].io_manager_key == "lake_step_io_manager"
    for step in ("expiry", "orphans"):
        assert lake_defs.get_assets_def(key(f"db/orders_{step}")).op.pool == MAINTENANCE_POOL
    # the changelog's steps: a gate in the table's compaction pool (never beside a compaction run),
    # then the Spark job in the shared one
    changelog = lake_defs.get_assets_def(key("db/orders_changelog")).node_def
    assert {n.name: n.definition.pool for n in changelog.nodes} == {
        "db_orders_changelog_gate": "lake_compaction_db_orders", "db_orders_changelog_produce": MAINTENANCE_POOL}
    assert ingest.op.pool is None


def test_compaction_jobs_carry_the_queue_tags(lake_defs: dg.Definitions) -> None:
    job = lake_defs.resolve_job_def("db_orders_compaction_job")
    assert job.tags[COMPACTION_TABLE_TAG] == "db.orders"
    assert job.tags[JOB_TAG] == "compact"
    assert COMPACTION_TABLE_TAG not in lake_defs.resolve_job_def("db_orders_expiry_job").tags


def test_workspace_loads_the_code_location(lake_path: Path, tmp_path: Path) -> None:
    """`dagster definitions validate -w workspace.yaml`, as `dagster dev` loads it."""
    env = {**os.environ, "LAKE_CONFIG": str(lake_path), "DAGSTER_HOME": str(tmp_path)}
    (tmp_path / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text())
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation successful" in done.stdout + done.stderr


def test_a_bad_config_fails_the_load(tmp_path: Path) -> None:
    (tmp_path / "lake.yaml").write_text("warehouse: {kind: local, path: w}\ntables: []\n")
    env = {**os.environ, "LAKE_CONFIG": str(tmp_path / "lake.yaml")}
    done = subprocess.run([sys.executable, "-c", "import lake_assets.defs.definitions"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "tables: List should have at least 1 item" in done.stderr


def test_a_run_of_compaction_and_changelog_runs_them_in_turn(lake_defs: dg.Definitions) -> None:
    """Both selected in one run (or materialized together from the UI): the changelog's Spark step
    starts only after the compaction's has finished, whatever the executor runs in parallel."""
    from dagster._core.execution.api import create_execution_plan

    keys = {dg.AssetKey.from_user_string(k) for k in ("db/orders_compaction", "db/orders_changelog")}
    job = lake_defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection=keys)
    plan = create_execution_plan(job)

    def upstream(step_key: str) -> set[str]:
        seen, todo = set(), [step_key]
        while todo:
            for dep in plan.get_step_by_key(todo.pop()).get_execution_dependency_keys():
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    produce = next(k for k in plan.step_keys_to_execute if k.endswith("db_orders_changelog_produce"))
    assert {k for k in upstream(produce) if k.endswith("db_orders_compact")}
