"""The health sensor's observation and the small-file sensor on a data-evolution table with column
updates (written with the core, no Spark): rows are row-id ranges, LSM numbers are absent with a
reason, and neither the small-file sensor nor a failing check asks for a compaction where the
data-evolution planner would rewrite nothing."""

from typing import Any

import dagster as dg
import pyarrow as pa

from lake_assets.defs.factory import build_definitions
from lake_assets.defs.observations import HEALTH_SENSOR, LEFT_BY_DATA_EVOLUTION_COMPACTION
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from lake_assets.ops.health import NO_LSM

LSM_KEYS = {"max_sorted_runs", "level0_files", "oldest_level0_age_ms", "max_size_amplification_percent"}


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance, name: str) -> Any:
    with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
        return defs.resolve_sensor_def(name).evaluate_tick(context)


def test_observation_and_sensor_of_a_data_evolution_table(core_lake) -> None:
    config, _ = core_lake
    orders = config.table("db.orders")
    # every file small; three files make a unit of the data-evolution planner
    policy = orders.maintenance.model_copy(update={"level0_runs": 1, "small_file_threshold": 1})
    options = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "bucket": "-1",
               "compaction.min.file-num": "3"}
    spec = orders.model_copy(update={"identifier": "db.evolving", "primary_keys": [], "ingest": None,
                                     "maintenance": policy, "options": options})
    config = config.model_copy(update={"tables": [spec]})
    defs = build_definitions(config)
    table = defs.resources["warehouse"].ensure_table(spec)

    def write(day: str, start: int) -> None:
        table.write_arrow(pa.table({"id": pa.array(range(start, start + 3), pa.int64()), "dt": [day] * 3,
                                    "name": ["x"] * 3, "amount": [1.0] * 3}))

    def update(row_ids: list[int]) -> None:
        table.update_columns(pa.table({"_ROW_ID": pa.array(row_ids, pa.int64()), "name": ["u"] * len(row_ids)}))

    write("2024-01-01", 0)  # row ids 0-2
    write("2024-01-02", 3)  # 3-5
    write("2024-01-01", 6)  # 6-8: apart from 0-2 in its partition
    update([0, 1, 2])
    with dg.instance_for_test() as instance:
        data = _tick(defs, instance, HEALTH_SENSOR)
        [obs] = [e for e in data.asset_events if isinstance(e, dg.AssetObservation)]
        md = {k: v.value for k, v in obs.metadata.items()}
        assert md["dagster/row_count"] == table.to_arrow().num_rows == 9
        assert md["records_in_files"] == 12  # the update's file holds values of rows counted once
        assert md["data_files"] == 4 and md["small_files"] == 4 and md["partitions"] == 2
        assert md["delete_records"] == 0 and md["deleted_row_ratio"] == 0
        assert not LSM_KEYS & set(md) and md["not_applicable"] == dict.fromkeys(LSM_KEYS, NO_LSM)
        checks = {e.check_name: e for e in data.asset_events if isinstance(e, dg.AssetCheckEvaluation)}
        assert checks["level0_age"].passed
        assert checks["level0_age"].metadata["not_applicable"].value == NO_LSM
        # 3 small files in dt=2024-01-01 > 1, which its compaction would leave: no failure that starts
        # a compaction rewriting nothing (the automation compacts on a newly failed check)
        assert checks["small_files"].passed
        assert checks["small_files"].metadata["left_by_compaction"].value == LEFT_BY_DATA_EVOLUTION_COMPACTION
        assert md["buckets_to_compact"] == 0

        # ... but its ranges are too few, or apart, for the planner: no run that would change nothing
        tick = _tick(defs, instance, SMALL_FILE_SENSOR)
        assert tick.run_requests == []
        assert tick.skip_message == ("db.evolving: not requested for dt=2024-01-01: its data-evolution "
                                     "compaction would rewrite nothing there")  # dt=2024-01-02: 1 small file

        write("2024-01-02", 9)  # row ids 9-11 and 12-14: one stretch of dt=2024-01-02 (6-8 part it from 3-5)
        write("2024-01-02", 12)
        update([9, 10, 11])
        tick = _tick(defs, instance, SMALL_FILE_SENSOR)
        [request] = tick.run_requests
        op_config = request.run_config["ops"]["db__evolving_compaction"]["config"]
        assert op_config["partitions"] == ["dt=2024-01-02"] and op_config["full"] is False
        data = _tick(defs, instance, HEALTH_SENSOR)
        checks = {e.check_name: e for e in data.asset_events if isinstance(e, dg.AssetCheckEvaluation)}
        assert not checks["small_files"].passed  # now a compaction would rewrite dt=2024-01-02's
        health = {r["partition"]: r for r in table.health().to_pylist()}
        assert health["dt=2024-01-02"]["compaction_would_trigger"]
        assert not health["dt=2024-01-01"]["compaction_would_trigger"]
