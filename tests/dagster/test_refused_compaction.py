"""A table whose compaction lake_assets refuses (row tracking: Paimon HEAD's compacted form is not
implemented) is never sent to compaction by the small-file sensor, however many small files its
health shows, and a compaction run of it (a schedule, a failing check, the UI) fails in its plan
step with the refusal, before any Spark job (session 16's maintenance review)."""

import datetime as dt
import json

import dagster as dg
import pyarrow as pa

from lake_assets import Catalog
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.sensors import SMALL_FILE_SENSOR


def test_sensor_and_compaction_run_of_a_row_tracking_table(core_lake) -> None:
    config, _ = core_lake
    events = config.table("db.events")
    policy = events.maintenance.model_copy(update={"small_file_threshold": 1})
    config = config.model_copy(update={"tables": [events.model_copy(update={"maintenance": policy})]})
    defs = build_definitions(config)
    warehouse = defs.resources["warehouse"]
    # created by another engine (pypaimon, Paimon 1.x) with row tracking, written with small files
    catalog = Catalog(warehouse.url)
    catalog.create_database("db")
    schema = pa.schema([("event_id", pa.int64()), ("day", pa.date32()), ("kind", pa.string())])
    table = catalog.create_table("db.events", schema, partition_keys=["day"],
                                 options={"row-tracking.enabled": "true"})
    for i in range(3):
        table.write_arrow(pa.table({"event_id": [i], "day": [dt.date(2024, 1, 1)], "kind": ["a"]}, schema=schema))
    health = table.health()
    assert health.column("small_file_count").to_pylist() == [3]  # over the policy's 1
    assert health.column("compaction_would_trigger").to_pylist() == [False]  # Table.compact raises

    with dg.instance_for_test() as instance:
        sensor = defs.resolve_sensor_def(SMALL_FILE_SENSOR)
        with dg.build_sensor_context(instance=instance, cursor=None, resources=defs.resources) as context:
            tick = sensor.evaluate_tick(context)
        assert tick.run_requests == []
        assert "db.events: not requested: Cannot compact db.events: option row-tracking.enabled" in tick.skip_message
        assert json.loads(tick.cursor) == {"db.events": table.latest_snapshot().id}  # not asked again until a commit

        job = defs.resolve_job_def("db_events_compaction_job")
        result = job.execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key.endswith("compaction_plan")
    assert "row-tracking.enabled" in failure.event_specific_data.error.message
    assert len(table.refresh().snapshots()) == 3  # nothing ran
