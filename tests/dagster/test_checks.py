"""Asset checks pass and fail when they should (tables written with the core, no Spark)."""

import time

import dagster as dg
import pyarrow as pa
import pytest

from lake_assets.defs.config import LakeConfig
from lake_assets.defs.resources import WarehouseResource
from lake_assets.job_checks import JOB_CHECKS

ORDERS = "db/orders"
JOB_CHECK_NAMES = {check.name for checks in JOB_CHECKS.values() for check in checks}


def _write(warehouse: WarehouseResource, config: LakeConfig, start: int, day: str = "2024-01-01") -> None:
    table = warehouse.ensure_table(config.table("db.orders"))
    writer = table.new_writer("checks", write_only=True)  # level-0 files, as the Spark ingest leaves them
    ids = list(range(start, start + 10))
    writer.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": [day] * 10, "name": ["x"] * 10,
                                 "amount": [2.0] * 10}))
    table.new_committer("checks").commit(writer.prepare_commit(), start + 1)
    writer.close()


def _run_checks(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, dg.AssetCheckEvaluation]:
    """Execute every check of db.orders (only the checks: their assets are not materialized); the
    jobs' own checks (`lake_assets.job_checks`) are judged by their asset's run, not alone."""
    checks = [k for k in defs.resolve_asset_graph().asset_check_keys if k.asset_key.to_user_string()
              .startswith(ORDERS) and k.name not in JOB_CHECK_NAMES]
    result = dg.materialize(
        [*{defs.get_assets_def(k.asset_key) for k in checks}, *{defs.get_asset_checks_def(k) for k in checks}],
        selection=dg.AssetSelection.checks(*checks),
        instance=instance,
        resources=defs.resources,
    )
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


@pytest.fixture
def lake(core_lake):
    config, defs = core_lake
    with dg.instance_for_test() as instance:
        yield config, defs, defs.resources["warehouse"], instance


def test_checks_warn_before_the_table_exists(lake) -> None:
    _, defs, _, instance = lake
    evaluations = _run_checks(defs, instance)
    assert set(evaluations) == {"small_files", "level0_age", "snapshot_retention", "orphan_bytes", "declaration"}
    assert not any(e.passed for n, e in evaluations.items() if n != "declaration")
    assert evaluations["declaration"].passed  # nothing to differ from: the first ingest creates it as declared


def test_small_files_and_retention_pass_then_fail(lake) -> None:
    config, defs, warehouse, instance = lake
    for i in range(3):  # 3 small files per bucket: at the threshold
        _write(warehouse, config, 100 * i)
    ok = _run_checks(defs, instance)
    assert ok["small_files"].passed and ok["snapshot_retention"].passed and ok["level0_age"].passed
    assert ok["small_files"].metadata["max_small_files_per_bucket"].value == 3
    assert ok["orphan_bytes"].passed  # dry run in the check: no orphans yet

    for i in range(3, 6):  # 6 small files per bucket, 6 snapshots: over 3 and over retain_max 5
        _write(warehouse, config, 100 * i)
    bad = _run_checks(defs, instance)
    assert not bad["small_files"].passed
    assert bad["small_files"].severity == dg.AssetCheckSeverity.WARN
    assert bad["small_files"].metadata["partitions_over"].value == "dt=2024-01-01"
    assert not bad["snapshot_retention"].passed
    assert bad["snapshot_retention"].metadata["snapshots"].value == 6
    assert "held_by_consumers" not in bad["snapshot_retention"].metadata  # no consumer holds any: left out
    # a consumer that has read nothing holds every snapshot: the check names it (expiry cannot help)
    warehouse.table("db.orders").store.consumer_manager().record("flink-job", 1)
    held = _run_checks(defs, instance)["snapshot_retention"]
    assert not held.passed and held.metadata["held_by_consumers"].value == "flink-job (6 snapshots behind)"


def test_level0_age_fails_when_compaction_falls_behind(lake, monkeypatch: pytest.MonkeyPatch) -> None:
    config, defs, warehouse, instance = lake
    _write(warehouse, config, 0)
    assert _run_checks(defs, instance)["level0_age"].passed
    # Two hours later (policy: 1h) the level-0 files are still there: compaction is not keeping up.
    real = time.time
    import lake_assets.ops.table_health as table_health

    monkeypatch.setattr(table_health, "local_now_as_utc_ms",
                        lambda: int((real() + 2 * 3600) * 1000) + int(time.localtime().tm_gmtoff * 1000))
    failed = _run_checks(defs, instance)["level0_age"]
    assert not failed.passed
    assert failed.metadata["oldest_level0_age_s"].value > 3600


def test_orphan_bytes_uses_the_last_dry_run(lake) -> None:
    _, defs, _, instance = lake
    key = dg.AssetKey(["db", "orders_orphans"])
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, metadata={"orphan_bytes": 0}))
    assert _run_checks(defs, instance)["orphan_bytes"].passed
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, metadata={"orphan_bytes": 4096}))
    failed = _run_checks(defs, instance)["orphan_bytes"]
    assert not failed.passed
    assert failed.metadata["orphan_bytes"].value == 4096
    assert failed.metadata["source"].value == "last orphans materialization"
