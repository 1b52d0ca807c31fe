"""``visibility-callback.enabled`` on a postpone-bucket table under Dagster: a batch write blocks
after its commit until a compaction made its rows visible (ops/visibility_wait.py), so the
small-file sensor treats every postponed file of such a table as due (defs/health.py): one file,
under ``small_file_threshold``, is requested at once, and the compaction it runs releases the
waiting writer. Without the option one file stays under the threshold."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import dagster as dg
import pyarrow as pa

from lake_assets import Catalog
from lake_assets.defs.config import load_config
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.health import WAITING, breaches, waiting_flags
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from tests.dagster.helpers import ONE_TABLE_SPARK, materialization_metadata

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])
WAIT = {"visibility-callback.enabled": "true", "visibility-callback.check-interval": "100 ms",
        "visibility-callback.timeout": "120 s"}

CONFIG = ONE_TABLE_SPARK + """
tables:
  - identifier: db.p
    schema: {dt: STRING NOT NULL, id: BIGINT NOT NULL, v: STRING}
    primary_keys: [dt, id]
    partition_keys: [dt]
    options: {bucket: -2, postpone.default-bucket-num: 1EXTRA}
    maintenance: {small_file_threshold: 2, small_file_bytes: 1048576, compaction_cron: null, expiry_cron: null}
"""


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance) -> dg.SensorExecutionData:
    sensor = defs.resolve_sensor_def(SMALL_FILE_SENSOR)
    with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
        return sensor.evaluate_tick(context)


def _setup(tmp_path: Path, options: dict[str, str]) -> tuple[dg.Definitions, Catalog]:
    extra = "".join(f", {k}: '{v}'" for k, v in options.items())
    (tmp_path / "lake.yaml").write_text(CONFIG.replace("EXTRA", extra))
    defs = build_definitions(load_config(tmp_path / "lake.yaml"))
    catalog = Catalog(str(tmp_path / "warehouse"))
    catalog.create_database("db")
    catalog.create_table("db.p", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "-2", "postpone.default-bucket-num": "1", **options})
    return defs, catalog


def test_a_waiting_writer_gets_its_compaction_from_the_sensor(tmp_path: Path) -> None:
    defs, catalog = _setup(tmp_path, WAIT)
    outcome: dict[str, object] = {}

    def write() -> None:
        try:
            catalog.get_table("db.p").write_arrow(pa.table({"dt": ["a"] * 3, "id": [1, 2, 3], "v": ["x"] * 3},
                                                           schema=SCHEMA))
            outcome["done"] = True
        except BaseException as exc:  # reported below
            outcome["error"] = exc

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    table = catalog.get_table("db.p")
    deadline = time.monotonic() + 60
    while table.snapshot_manager.latest_id() is None:
        assert writer.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.02)
    table = table.refresh()
    health = table.health(small_file_threshold=1 << 20)
    assert waiting_flags(table.store) == {"writers_wait": True, "level0_invisible": False}
    [breach] = breaches(health, load_config(tmp_path / "lake.yaml").table("db.p").maintenance,
                        **waiting_flags(table.store))
    assert breach.reasons == (f"1 postponed files: {WAITING}",)
    assert writer.is_alive() and not outcome
    with dg.instance_for_test() as instance:
        [request] = _tick(defs, instance).run_requests
        op_config = request.run_config["ops"]["db__p_compaction"]["config"]
        assert op_config["partitions"] == ["dt=a"] and op_config["full"] is False
        job = defs.resolve_job_def(request.job_name)
        result = job.execute_in_process(run_config=request.run_config, tags=request.tags, instance=instance)
    assert result.success
    assert materialization_metadata(result)["commit_kind"] == "COMPACT"
    writer.join(60)
    assert outcome == {"done": True}
    assert sorted(table.refresh().to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_without_the_option_one_postponed_file_stays_under_the_threshold(tmp_path: Path) -> None:
    defs, catalog = _setup(tmp_path, {})
    catalog.get_table("db.p").write_arrow(pa.table({"dt": ["a"], "id": [1], "v": ["x"]}, schema=SCHEMA))
    with dg.instance_for_test() as instance:
        tick = _tick(defs, instance)
    assert not tick.run_requests, tick.skip_message
