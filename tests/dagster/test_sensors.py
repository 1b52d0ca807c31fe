"""The small-file sensor requests a compaction exactly when a threshold is crossed, and not twice.
Tables are written with the core (no Spark)."""

import json
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from lake_assets.defs.config import LakeConfig
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.names import COMPACTION_TABLE_TAG, PARTITIONS_TAG
from lake_assets.defs.resources import WarehouseResource
from lake_assets.defs.sensors import SMALL_FILE_SENSOR


def _write(warehouse: WarehouseResource, config: LakeConfig, day: str, start: int) -> None:
    """One write-only commit into db.orders partition ``day`` (as the Spark ingest does): a level-0
    file in each of its 2 buckets, no compaction by the writer."""
    table = warehouse.ensure_table(config.table("db.orders"))
    ids = list(range(start, start + 20))
    writer = table.new_writer("test", write_only=True)
    writer.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": [day] * 20, "name": ["x"] * 20,
                                 "amount": [1.0] * 20}))
    table.new_committer("test").commit(writer.prepare_commit(), start + 1000 * len(table.snapshots()))
    writer.close()


def _latest(warehouse: WarehouseResource) -> int:
    return warehouse.table("db.orders").latest_snapshot().id


def _evaluate(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None):
    sensor = defs.resolve_sensor_def(SMALL_FILE_SENSOR)
    # a context manager: resources with nested resources (the I/O manager's warehouse) are opened in it
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources) as context:
        return sensor.evaluate_tick(context)


@pytest.fixture
def setup(core_lake):
    config, defs = core_lake
    warehouse = defs.resources["warehouse"]
    with dg.instance_for_test() as instance:
        yield config, defs, warehouse, instance


def test_requests_compaction_when_a_threshold_is_crossed_and_not_twice(setup) -> None:
    config, defs, warehouse, instance = setup
    empty = _evaluate(defs, instance, None)  # no table yet
    assert empty.run_requests == [] and empty.cursor in (None, "{}")

    for i in range(3):  # 3 sorted runs per bucket: at the threshold (3), not over it
        _write(warehouse, config, "2024-01-01", 100 * i)
    _write(warehouse, config, "2024-01-02", 0)
    below = _evaluate(defs, instance, None)
    assert below.run_requests == []
    assert json.loads(below.cursor) == {"db.orders": _latest(warehouse)}

    _write(warehouse, config, "2024-01-01", 300)  # the 4th run crosses it
    crossed = _evaluate(defs, instance, below.cursor)
    [request] = crossed.run_requests
    assert request.job_name == "db_orders_compaction_job"
    assert request.run_key == f"db.orders@{_latest(warehouse)}"
    assert request.tags[COMPACTION_TABLE_TAG] == "db.orders"
    assert request.tags[PARTITIONS_TAG] == "dt=2024-01-01"
    op_config = request.run_config["ops"]["db__orders_compaction"]["config"]
    assert op_config["partitions"] == ["dt=2024-01-01"]  # only the breaching partition
    # Paimon's universal compaction waits for 5 runs (num-sorted-run.compaction-trigger): only a
    # full compaction of the partition brings it under the stricter policy.
    assert op_config["full"] is True

    again = _evaluate(defs, instance, crossed.cursor)  # nothing committed since: no second request
    assert again.run_requests == []
    assert again.cursor == crossed.cursor


def test_skips_a_table_whose_compaction_is_running(setup) -> None:
    config, defs, warehouse, instance = setup
    for i in range(4):
        _write(warehouse, config, "2024-01-01", 100 * i)
    job = defs.resolve_job_def("db_orders_compaction_job")
    run = instance.create_run_for_job(job, tags=dict(job.tags), status=dg.DagsterRunStatus.STARTED)
    busy = _evaluate(defs, instance, None)
    assert busy.run_requests == []
    assert "db.orders: compaction already queued or running" in busy.skip_message
    assert json.loads(busy.cursor or "{}") == {}  # not marked as evaluated: looked at again next tick

    instance.report_run_canceled(instance.get_run_by_id(run.run_id))
    free = _evaluate(defs, instance, busy.cursor)
    assert [r.run_key for r in free.run_requests] == [f"db.orders@{_latest(warehouse)}"]


def test_universal_compaction_when_paimon_would_pick_it(setup) -> None:
    config, defs, warehouse, instance = setup
    for i in range(5):  # 5 runs: Paimon's universal compaction triggers
        _write(warehouse, config, "2024-01-03", 100 * i)
    [request] = _evaluate(defs, instance, None).run_requests
    op_config = request.run_config["ops"]["db__orders_compaction"]["config"]
    assert op_config == {"full": False, "partitions": ["dt=2024-01-03"]}


def test_small_files_threshold(core_lake) -> None:
    """Small files alone (runs and amplification within bounds) trigger too."""
    config, _ = core_lake
    orders = config.table("db.orders")
    policy = orders.maintenance.model_copy(update={"level0_runs": 100, "small_file_threshold": 1})
    config = config.model_copy(update={"tables": [orders.model_copy(update={"maintenance": policy})]})
    defs = build_definitions(config)
    warehouse = defs.resources["warehouse"]
    _write(warehouse, config, "2024-01-01", 0)
    with dg.instance_for_test() as instance:
        assert _evaluate(defs, instance, None).run_requests == []  # 1 small file per bucket
        _write(warehouse, config, "2024-01-01", 100)
        [request] = _evaluate(defs, instance, None).run_requests  # 2 > 1
    assert request.run_config["ops"]["db__orders_compaction"]["config"]["partitions"] == ["dt=2024-01-01"]



def test_row_tracking_and_data_evolution_tables_are_requested_like_append_tables(core_lake) -> None:
    """Row-tracking and data-evolution tables (pypaimon's or Ray's, say) are compacted like any
    append table; beside them, one whose compaction lake_assets refuses (an option of a newer
    Paimon another engine left in its schema) is not requested and the tick says why (its run:
    tests/dagster/test_refused_compaction.py)."""
    config, _ = core_lake
    orders = config.table("db.orders")
    policy = orders.maintenance.model_copy(update={"level0_runs": 100, "small_file_threshold": 1})
    # two files make Paimon's append compaction trigger (health's compaction_would_trigger)
    tracked = {"row-tracking.enabled": "true", "bucket": "-1", "compaction.min.file-num": "2"}
    tables = [orders.model_copy(update={"identifier": f"db.{name}", "primary_keys": [], "ingest": None,
                                        "maintenance": policy, "options": options})
              for name, options in (("tracked", tracked), ("evolving", {**tracked, "data-evolution.enabled": "true"}),
                                    ("foreign", tracked))]
    config = config.model_copy(update={"tables": tables})
    defs = build_definitions(config)
    warehouse = defs.resources["warehouse"]
    for name in ("tracked", "evolving", "foreign"):
        table = warehouse.ensure_table(config.table(f"db.{name}"))
        for start in (0, 10):
            table.write_arrow(pa.table({"id": pa.array(range(start, start + 3), pa.int64()), "dt": ["2024-01-01"] * 3,
                                        "name": ["x"] * 3, "amount": [1.0] * 3}))
    schema_dir = Path(warehouse.table("db.foreign").store.paths.schema_dir)
    newest = max(schema_dir.glob("schema-*"), key=lambda p: int(p.name.split("-")[1]))
    doc = json.loads(newest.read_text())
    doc["options"]["compaction.file-num-limit"] = "10"  # Paimon 2.x's, which lake_assets does not know
    newest.write_text(json.dumps(doc))
    for name, compactable in (("tracked", True), ("evolving", True), ("foreign", False)):
        health = warehouse.table(f"db.{name}").health(small_file_threshold=policy.small_file_bytes)
        assert health.column("compaction_would_trigger").to_pylist() == [compactable], name
    with dg.instance_for_test() as instance:
        tick = _evaluate(defs, instance, None)
        assert sorted(r.run_key.split("@")[0] for r in tick.run_requests) == ["db.evolving", "db.tracked"]
        assert json.loads(tick.cursor) == {"db.tracked": 2, "db.evolving": 2, "db.foreign": 2}
        alone = _evaluate(defs, instance, json.dumps({"db.tracked": 2, "db.evolving": 2}))
        assert alone.run_requests == []
        assert ("db.foreign: not requested: Cannot compact db.foreign: option "
                "compaction.file-num-limit = '10' is not supported") in alone.skip_message
