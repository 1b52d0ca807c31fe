"""A postpone-bucket table whose real bucket keeps small files the postpone compaction leaves:
the small-file sensor asks for a full compaction once, the compaction asset (the real compact
Spark job) fixes the bucket, and the sensor is quiet on the next snapshot.

Paimon's postpone compaction runs universal compaction on real buckets holding level-0 files only;
four level-0 runs stay under the sorted-run trigger (5), so a request without ``full`` changed
nothing and was made again at each new snapshot."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa

from lake_assets import Catalog
from lake_assets.defs.config import load_config
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from tests.dagster.helpers import ONE_TABLE_SPARK, materialization_metadata

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])

CONFIG = ONE_TABLE_SPARK + """
tables:
  - identifier: db.p
    schema: {dt: STRING NOT NULL, id: BIGINT NOT NULL, v: STRING}
    primary_keys: [dt, id]
    partition_keys: [dt]
    options: {bucket: -2, postpone.default-bucket-num: 1}
    maintenance: {small_file_threshold: 2, small_file_bytes: 1048576, compaction_cron: null, expiry_cron: null}
"""


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorExecutionData:
    sensor = defs.resolve_sensor_def(SMALL_FILE_SENSOR)
    with dg.build_sensor_context(instance=instance, resources=defs.resources, cursor=cursor) as context:
        return sensor.evaluate_tick(context)


def test_sensor_asks_for_the_full_compaction_that_fixes_real_buckets_then_is_quiet(
        tmp_path: Path, in_process_jobs: list[str]) -> None:
    (tmp_path / "lake.yaml").write_text(CONFIG)
    config = load_config(tmp_path / "lake.yaml")
    defs = build_definitions(config)
    catalog = Catalog(str(tmp_path / "warehouse"))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.p", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
        options={"bucket": "-2", "postpone.default-bucket-num": "1"})
    for i in range(4):
        table.write_arrow(pa.table({"dt": ["a", "a"], "id": [i, 10 + i], "v": [f"r{i}", f"s{i}"]}, schema=SCHEMA))
        table.compact()  # moves the rows; leaves the bucket's level-0 runs (under the trigger)
    level0 = [e for e in table.store.file_store_scan().live_entries(table.latest_snapshot())
              if e.bucket >= 0 and e.file.level == 0]
    assert len(level0) == 4
    expected = table.to_arrow().sort_by([("id", "ascending")]).to_pylist()

    with dg.instance_for_test() as instance:
        tick = _tick(defs, instance, None)
        [request] = tick.run_requests
        op_config = request.run_config["ops"]["db__p_compaction"]["config"]
        assert op_config["partitions"] == ["dt=a"] and op_config["full"] is True
        job = defs.resolve_job_def(request.job_name)
        result = job.execute_in_process(run_config=request.run_config, tags=request.tags, instance=instance)
        assert result.success
        md = materialization_metadata(result)
        assert md["commit_kind"] == "COMPACT" and md["full"] is True

        # the bucket holds one top-level file now: the next snapshot's tick requests nothing
        table.write_arrow(pa.table({"dt": ["b"], "id": [1], "v": ["x"]}, schema=SCHEMA))  # bucket-postpone
        quiet = _tick(defs, instance, tick.cursor)
        assert not quiet.run_requests, quiet.skip_message
    live = [e for e in table.store.file_store_scan().live_entries(table.latest_snapshot()) if e.bucket >= 0]
    assert [(e.bucket, e.file.level) for e in live] == [(0, table.store.schema.core_options.num_levels - 1)]
    assert table.to_arrow().sort_by([("id", "ascending")]).to_pylist() == expected
    assert in_process_jobs == ["compact"]  # in-process: in_process_jobs.py
