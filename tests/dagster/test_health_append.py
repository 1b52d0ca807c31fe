"""The health sensor's observation, the checks and the small-file sensor on an unaware-bucket append
table (written with the core, no Spark): LSM numbers absent with their reason, the level-0 age
check passes however old its files, and neither the sensor nor a failing check asks for a
compaction where the append planner would rewrite nothing (never a full one rewriting large files)."""

from typing import Any

import dagster as dg
import pyarrow as pa

from lake_assets.defs.factory import build_definitions
from lake_assets.defs.observations import (
    HEALTH_SENSOR,
    LEFT_BY_APPEND_COMPACTION,
    LEFT_BY_BUCKETED_APPEND_COMPACTION,
)
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


def test_small_files_check_and_sensor_of_a_fixed_bucket_append_table(core_lake) -> None:
    """A fixed-bucket append table (bucket = 2, bucket-key id, write-only: no inline compaction):
    small files Paimon's bucketed pick would leave pass the check, saying why; once a bucket holds
    compaction.max.file-num of them the check fails, the sensor requests a compaction of their
    partition, and that compaction merges them."""
    config, _ = core_lake
    orders = config.table("db.orders")
    policy = orders.maintenance.model_copy(update={"small_file_threshold": 1})
    options = {"bucket": "2", "bucket-key": "id", "write-only": "true", "compaction.max.file-num": "3"}
    spec = orders.model_copy(update={"identifier": "db.fixed", "primary_keys": [], "ingest": None,
                                     "maintenance": policy, "options": options})
    defs = build_definitions(config.model_copy(update={"tables": [spec]}))
    table = defs.resources["warehouse"].ensure_table(spec)

    def write() -> None:  # id 1 only: one bucket, one small file per write
        table.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "dt": ["2024-01-01"], "name": ["x"],
                                    "amount": [1.0]}))

    write()
    write()
    with dg.instance_for_test() as instance:
        data = _tick(defs, instance, HEALTH_SENSOR)
        small_files = _checks(data)["small_files"]
        assert small_files.passed
        assert small_files.metadata["left_by_compaction"].value == LEFT_BY_BUCKETED_APPEND_COMPACTION
        [obs] = [e for e in data.asset_events if isinstance(e, dg.AssetObservation)]
        assert obs.metadata["small_files"].value == 2 and obs.metadata["buckets_to_compact"].value == 0
        assert _tick(defs, instance, SMALL_FILE_SENSOR).run_requests == []
        write()  # the third file: compaction.max.file-num
        assert not _checks(_tick(defs, instance, HEALTH_SENSOR))["small_files"].passed
        [request] = _tick(defs, instance, SMALL_FILE_SENSOR).run_requests
        op_config = request.run_config["ops"]["db__fixed_compaction"]["config"]
        assert op_config["partitions"] == ["dt=2024-01-01"] and op_config["full"] is False
        table.compact(partitions=[{"dt": "2024-01-01"}])  # what the requested run does
        assert [f.row_count for f in _files(table.refresh())] == [3]
