"""An append table with deletion vectors: files whose vector calls for a rewrite (Paimon's
``compaction.delete-ratio-threshold``, or small files with a vector) are compaction backlog. The
small-file sensor asks for a compaction of their partition, the ``small_files`` check and the
health sensor's evaluation fail, and both are quiet again once the compaction purged the rows
(tables written with the core; the compaction itself is the core's, as the compact job's units)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa

from lake_assets import Catalog
from lake_assets.defs.config import load_config
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.observations import HEALTH_SENSOR
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from tests.dagster.helpers import ONE_TABLE_SPARK

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "target-file-size": "100 b"}
CONFIG = ONE_TABLE_SPARK + """
tables:
  - identifier: db.e
    schema: {id: BIGINT, dt: STRING}
    partition_keys: [dt]
    options: {bucket: -1, deletion-vectors.enabled: true, target-file-size: 100 b}
    maintenance: {small_file_threshold: 10, compaction_cron: null, expiry_cron: null}
"""


def _ticks(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None
           ) -> tuple[dg.SensorExecutionData, bool]:
    """One tick of the small-file sensor, and whether the health sensor's small_files check passed."""
    with dg.build_sensor_context(instance=instance, resources=defs.resources, cursor=cursor) as context:
        tick = defs.resolve_sensor_def(SMALL_FILE_SENSOR).evaluate_tick(context)
    with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
        health = defs.resolve_sensor_def(HEALTH_SENSOR).evaluate_tick(context)
    [check] = [e for e in health.asset_events
               if isinstance(e, dg.AssetCheckEvaluation) and e.check_name == "small_files"]
    return tick, check.passed


def test_sensor_and_check_see_files_to_purge_of_deleted_rows(tmp_path: Path) -> None:
    (tmp_path / "lake.yaml").write_text(CONFIG)
    defs = build_definitions(load_config(tmp_path / "lake.yaml"))
    catalog = Catalog(str(tmp_path / "warehouse"))
    catalog.create_database("db")
    table = catalog.create_table("db.e", SCHEMA, partition_keys=["dt"], options=OPTIONS)
    for start in (0, 100):  # two files a partition, none small (100 b target), none to merge
        table.write_arrow(pa.table({"id": range(start, start + 10), "dt": ["a"] * 10}, schema=SCHEMA))
        table.write_arrow(pa.table({"id": range(start, start + 10), "dt": ["b"] * 10}, schema=SCHEMA))

    with dg.instance_for_test() as instance:
        tick, passed = _ticks(defs, instance, None)
        assert not tick.run_requests and passed
        table.delete_where([("dt", "=", "b"), ("id", "<", 3)])  # 3 of a file's 10 rows > 0.2
        tick, passed = _ticks(defs, instance, tick.cursor)
        [request] = tick.run_requests
        config = request.run_config["ops"]["db__e_compaction"]["config"]
        assert config["partitions"] == ["dt=b"] and config["full"] is False  # a normal compaction fixes it
        assert not passed
        # what the requested compaction does (the compact job runs the same units)
        result = table.compact(partitions=[{"dt": "b"}])
        assert (result.files_in, result.rows_out) == (1, 7)
        tick, passed = _ticks(defs, instance, tick.cursor)
        assert not tick.run_requests and passed
