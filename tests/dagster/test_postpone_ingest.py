"""End to end on a postpone-bucket table declared in lake.yaml (``bucket: -2``): the ingest asset
(the real ingest job, a Spark batch write) writes the day into real buckets as Paimon's batch sinks
do (``postpone.batch-write-fixed-bucket`` unset: true), so readers see it at once; later write-only
updates wait in bucket-postpone, the small-file sensor sees that backlog, and the compaction asset
moves them into the real buckets, where they are visible. Both jobs run in the test process
(tests/dagster/in_process_jobs.py); their launcher runs are test_ingest.py's ``ingested`` and
tests/dagster/conftest.py's ``compacted``."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets.defs.config import load_config
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.observations import observe_table
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from tests.dagster.helpers import DAYS, ONE_TABLE_SPARK, materialization_metadata

CONFIG = ONE_TABLE_SPARK + """
tables:
  - identifier: db.p
    schema: {id: BIGINT NOT NULL, dt: STRING NOT NULL, v: STRING}
    primary_keys: [id, dt]
    partition_keys: [dt]
    options: {bucket: -2}
    ingest: {source: "landing/{date}/*.parquet", format: parquet, start_date: 2024-01-01, partition_column: dt}
    maintenance: {small_file_threshold: 1, compaction_cron: null, expiry_cron: null}
"""


def test_ingest_into_postpone_then_sensor_and_compaction(tmp_path: Path, in_process_jobs: list[str]) -> None:
    landing = tmp_path / "landing" / DAYS[0]
    landing.mkdir(parents=True)
    for part in range(2):
        ids = range(10 * part, 10 * part + 10)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"a{i}" for i in ids]}),
                       landing / f"part-{part}.parquet")
    (tmp_path / "lake.yaml").write_text(CONFIG)
    config = load_config(tmp_path / "lake.yaml")
    defs = build_definitions(config)
    warehouse = defs.resources["warehouse"]
    with dg.instance_for_test() as instance:
        ingest = defs.resolve_job_def("db_p_ingest_job").execute_in_process(partition_key=DAYS[0], instance=instance)
        assert ingest.success
        table = warehouse.table("db.p")
        assert table.to_arrow().num_rows == 20  # in real buckets (write-only level 0), visible at once
        obs = observe_table(table, config.table("db.p"))
        assert obs.postponed_files == 0 and obs.level0_files >= 1
        # two write-only commits of updates wait in bucket-postpone: 2 files > small_file_threshold 1
        for n, (tag, count) in enumerate((("b", 5), ("c", 3)), start=1):
            writer = table.new_writer("late", write_only=True)
            writer.write_arrow(pa.table({"id": pa.array(range(count), pa.int64()), "dt": [DAYS[0]] * count,
                                         "v": [f"{tag}{i}" for i in range(count)]}))
            table.new_committer("late").commit(writer.prepare_commit(), n)
            writer.close()
        obs = observe_table(table, config.table("db.p"))
        assert obs.postponed_files == 2 and obs.postponed_rows == 8
        sensor = defs.resolve_sensor_def(SMALL_FILE_SENSOR)
        with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
            [request] = sensor.evaluate_tick(context).run_requests
        op_config = request.run_config["ops"]["db__p_compaction"]["config"]
        assert op_config["partitions"] == [f"dt={DAYS[0]}"] and op_config["full"] is False
        result = defs.resolve_job_def(request.job_name).execute_in_process(
            run_config=request.run_config, tags=request.tags, instance=instance)
    assert result.success
    md = materialization_metadata(result)
    assert md["commit_kind"] == "COMPACT" and md["postponed_files_after"] == 0
    assert md["job.postponed_rows"] == 8
    rows = {r["id"]: r["v"] for r in warehouse.table("db.p").to_arrow().to_pylist()}
    assert rows == {i: f"c{i}" if i < 3 else f"b{i}" if i < 5 else f"a{i}" for i in range(20)}
    assert in_process_jobs == ["ingest", "compact"]
