"""A table whose compaction lake_assets refuses (here it carries an option of a newer Paimon, which
lake_assets does not know) is never sent to compaction by the small-file sensor, however many small
files its health shows, and a compaction run of it (a schedule, a failing check, the UI) fails in
its plan step with the refusal, before any Spark job (session 16's maintenance review). Row-tracking
and data-evolution tables, compacted since session 16, are requested: tests/dagster/test_sensors.py."""

import datetime as dt
import json
from pathlib import Path

import dagster as dg
import pyarrow as pa

from lake_assets import Catalog
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.sensors import SMALL_FILE_SENSOR


def test_sensor_and_compaction_run_of_a_table_with_a_newer_paimons_option(core_lake) -> None:
    config, _ = core_lake
    events = config.table("db.events")
    policy = events.maintenance.model_copy(update={"small_file_threshold": 1})
    config = config.model_copy(update={"tables": [events.model_copy(update={"maintenance": policy})]})
    defs = build_definitions(config)
    warehouse = defs.resources["warehouse"]
    # written with small files, then given an option by a newer engine (Paimon 2.x)
    catalog = Catalog(warehouse.url)
    catalog.create_database("db")
    schema = pa.schema([("event_id", pa.int64()), ("day", pa.date32()), ("kind", pa.string())])
    table = catalog.create_table("db.events", schema, partition_keys=["day"],
                                 options={"compaction.min.file-num": "2"})
    for i in range(3):
        table.write_arrow(pa.table({"event_id": [i], "day": [dt.date(2024, 1, 1)], "kind": ["a"]}, schema=schema))
    assert table.health().column("compaction_would_trigger").to_pylist() == [True]  # before the option
    schema_dir = Path(table.store.paths.schema_dir)
    newest = max(schema_dir.glob("schema-*"), key=lambda p: int(p.name.split("-")[1]))
    doc = json.loads(newest.read_text())
    doc["options"]["compaction.file-num-limit"] = "10"  # Paimon 2.x's, which lake_assets does not know
    newest.write_text(json.dumps(doc))
    table = catalog.get_table("db.events")
    health = table.health()
    assert health.column("small_file_count").to_pylist() == [3]  # over the policy's 1
    assert health.column("compaction_would_trigger").to_pylist() == [False]  # Table.compact raises

    with dg.instance_for_test() as instance:
        sensor = defs.resolve_sensor_def(SMALL_FILE_SENSOR)
        with dg.build_sensor_context(instance=instance, cursor=None, resources=defs.resources) as context:
            tick = sensor.evaluate_tick(context)
        assert tick.run_requests == []
        assert ("db.events: not requested: Cannot compact db.events: option compaction.file-num-limit = '10'"
                in tick.skip_message)
        assert json.loads(tick.cursor) == {"db.events": table.latest_snapshot().id}  # not asked again until a commit

        job = defs.resolve_job_def("db_events_compaction_job")
        result = job.execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key.endswith("compaction_plan")
    assert "compaction.file-num-limit" in failure.event_specific_data.error.message
    assert len(table.refresh().snapshots()) == 3  # nothing ran
