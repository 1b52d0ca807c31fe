"""The health sensor's observation, the checks and the small-file sensor on an unaware-bucket append
table (written with the core, no Spark): LSM numbers absent with their reason, the level-0 age
check passes however old its files, and neither the sensor nor a failing check asks for a
compaction where the append planner would rewrite nothing (never a full one rewriting large files)."""

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa

from lake_assets.defs.factory import build_definitions
from lake_assets.defs.observations import HEALTH_SENSOR, LEFT_BY_APPEND_COMPACTION
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from lake_assets.ops.health import NO_LSM

LSM_KEYS = {"max_sorted_runs", "level0_files", "oldest_level0_age_ms", "max_size_amplification_percent"}


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance, name: str) -> Any:
    with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
        return defs.resolve_sensor_def(name).evaluate_tick(context)


def _checks(data: Any) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in data.asset_events if isinstance(e, dg.AssetCheckEvaluation)}


def test_observation_checks_and_sensor_of_an_append_table(core_lake) -> None:
    config, _ = core_lake
    orders = config.table("db.orders")
    # more than one small file per bucket breaches; any file older than 1 ms would fail an LSM check
    policy = orders.maintenance.model_copy(update={"level0_runs": 1, "small_file_threshold": 1,
                                                    "max_level0_age": "1ms"})
    options = {"bucket": "-1", "target-file-size": "4 kb", "compaction.min.file-num": "2"}
    spec = orders.model_copy(update={"identifier": "db.events", "primary_keys": [], "ingest": None,
                                     "maintenance": policy, "options": options})
    config = config.model_copy(update={"tables": [spec]})
    defs = build_definitions(config)
    table = defs.resources["warehouse"].ensure_table(spec)

    def write(day: str, ids: range) -> None:
        table.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": [day] * len(ids),
                                    "name": [f"name-{i:08d}" for i in ids], "amount": [1.5 * i for i in ids]}))

    # dt=2024-01-01: small, large, small: the large file parts the small files, which append
    # compaction leaves (a full compaction would rewrite the large file, for nothing)
    write("2024-01-01", range(1))
    write("2024-01-01", range(100, 3100))
    write("2024-01-01", range(2, 3))
    with dg.instance_for_test() as instance:
        data = _tick(defs, instance, HEALTH_SENSOR)
        [obs] = [e for e in data.asset_events if isinstance(e, dg.AssetObservation)]
        md = {k: v.value for k, v in obs.metadata.items()}
        assert md["dagster/row_count"] == table.to_arrow().num_rows == 3002
        # the large write rolls into large files (target-file-size)
        assert md["data_files"] == len(_files(table)) >= 3 and md["small_files"] == 2
        assert md["buckets_to_compact"] == 0
        assert not LSM_KEYS & set(md) and md["not_applicable"] == dict.fromkeys(LSM_KEYS, NO_LSM)
        checks = _checks(data)
        assert checks["level0_age"].passed  # old files, but no level-0 backlog in an append table
        assert checks["level0_age"].metadata["not_applicable"].value == NO_LSM
        assert checks["small_files"].passed  # 2 small files > 1, which its compaction would leave
        assert checks["small_files"].metadata["left_by_compaction"].value == LEFT_BY_APPEND_COMPACTION

        tick = _tick(defs, instance, SMALL_FILE_SENSOR)
        assert tick.run_requests == []
        assert tick.skip_message == ("db.events: not requested for dt=2024-01-01: its append compaction "
                                     "would rewrite nothing there")
        files_before = {f.file_name for f in _files(table)}
        table.compact()  # what a requested run would have done: nothing
        assert {f.file_name for f in _files(table)} == files_before

        write("2024-01-02", range(10, 12))  # two small files in a row: a compaction merges them
        write("2024-01-02", range(20, 22))
        tick = _tick(defs, instance, SMALL_FILE_SENSOR)
        [request] = tick.run_requests
        op_config = request.run_config["ops"]["db__events_compaction"]["config"]
        assert op_config["partitions"] == ["dt=2024-01-02"] and op_config["full"] is False
        checks = _checks(_tick(defs, instance, HEALTH_SENSOR))
        assert not checks["small_files"].passed and "left_by_compaction" not in checks["small_files"].metadata
        assert checks["level0_age"].passed


def _files(table: Any) -> list[Any]:
    return [e.file for e in table.store.file_store_scan().live_entries(table.latest_snapshot())]


def test_small_files_check_of_an_append_table_lake_assets_does_not_compact(core_lake) -> None:
    """A fixed-bucket append table (another engine's: its schema says bucket = 2), whose
    compaction lake_assets refuses: its small files fail no check (no compaction would run), the
    check says why, and the sensor requests nothing."""
    config, _ = core_lake
    orders = config.table("db.orders")
    policy = orders.maintenance.model_copy(update={"small_file_threshold": 1})
    spec = orders.model_copy(update={"identifier": "db.fixed", "primary_keys": [], "ingest": None,
                                     "maintenance": policy, "options": {"compaction.min.file-num": "2"}})
    defs = build_definitions(config.model_copy(update={"tables": [spec]}))
    table = defs.resources["warehouse"].ensure_table(spec)
    for start in (0, 10):
        table.write_arrow(pa.table({"id": pa.array(range(start, start + 2), pa.int64()), "dt": ["2024-01-01"] * 2,
                                    "name": ["x"] * 2, "amount": [1.0] * 2}))
    schema_dir = Path(table.store.paths.schema_dir)
    newest = max(schema_dir.glob("schema-*"), key=lambda p: int(p.name.split("-")[1]))
    doc = json.loads(newest.read_text())
    doc["options"].update({"bucket": "2", "bucket-key": "id"})  # as a Paimon writer declares one
    newest.write_text(json.dumps(doc))
    with dg.instance_for_test() as instance:
        data = _tick(defs, instance, HEALTH_SENSOR)
        small_files = _checks(data)["small_files"]
        assert small_files.passed
        assert "fixed-bucket mode of append tables" in small_files.metadata["left_by_compaction"].value
        [obs] = [e for e in data.asset_events if isinstance(e, dg.AssetObservation)]
        assert obs.metadata["small_files"].value == 2 and obs.metadata["buckets_to_compact"].value == 0
        assert "not_applicable" in obs.metadata
        tick = _tick(defs, instance, SMALL_FILE_SENSOR)
        assert tick.run_requests == [] and "db.fixed: not requested: Cannot compact db.fixed" in tick.skip_message
