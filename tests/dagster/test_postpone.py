"""Postpone-bucket tables (``bucket = -2``) in Dagster: the small-file sensor counts the files
waiting in bucket-postpone as backlog, the health observation shows them, and the compaction asset
(the real compact Spark job) moves them into real buckets. The table is written by pypaimon 2.1
(a peer's postpone table; ours: test_postpone_ingest.py), and lake.yaml declares it without
``bucket``: the assets look at the table itself."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest
from pydantic import ValidationError

from lake_assets.defs.config import TableConfig, load_config
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.observations import observation_metadata, observe_table
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from tests.dagster.helpers import ONE_TABLE_SPARK, materialization_metadata
from tests.interop.paimon import Pypaimon, canonical, missing

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])

CONFIG = ONE_TABLE_SPARK + """
tables:
  - identifier: db.p
    schema: {dt: STRING NOT NULL, id: BIGINT NOT NULL, v: STRING}
    primary_keys: [dt, id]
    partition_keys: [dt]
    maintenance: {small_file_threshold: 1, small_file_bytes: 1, compaction_cron: null, expiry_cron: null}
"""


@pytest.fixture(scope="module")
def pypaimon() -> Pypaimon:
    driver = Pypaimon()
    if not driver.available():
        missing(f"pypaimon venv not found ({driver.python}); create it with `make venv-paimon`")
    return driver


def data(dt: str, ids: range, tag: str) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def test_sensor_counts_postponed_files_and_the_asset_moves_them(tmp_path: Path, pypaimon: Pypaimon,
                                                                in_process_jobs: list[str]) -> None:
    (tmp_path / "lake.yaml").write_text(CONFIG)
    config = load_config(tmp_path / "lake.yaml")
    defs = build_definitions(config)
    wh = tmp_path / "warehouse"
    pypaimon.create_table(wh, "db.p", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "-2", "file.format": "parquet", "postpone.default-bucket-num": "2"})
    pypaimon.write(wh, "db.p", pa.concat_tables([data("a", range(10), "x"), data("b", range(8), "x")]))
    # dt=a: 2 postponed files > 1, dt=b: 1; none is small (small_file_bytes: 1), all are backlog
    pypaimon.write(wh, "db.p", data("a", range(5, 15), "y"))
    table = defs.resources["warehouse"].table("db.p")

    obs = observe_table(table, config.table("db.p"))
    assert (obs.postponed_files, obs.postponed_rows, obs.max_small_files_per_bucket) == (3, 28, 2)
    assert not obs.row_count_exact  # the files hold rows readers do not see yet
    assert "dagster/row_count" not in observation_metadata(obs)

    with dg.instance_for_test() as instance:
        sensor = defs.resolve_sensor_def(SMALL_FILE_SENSOR)
        with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
            tick = sensor.evaluate_tick(context)
        [request] = tick.run_requests
        op_config = request.run_config["ops"]["db__p_compaction"]["config"]
        # the backlog partition only; never full (the postpone compaction moves every postponed row)
        assert op_config["partitions"] == ["dt=a"] and op_config["full"] is False
        job = defs.resolve_job_def(request.job_name)
        result = job.execute_in_process(run_config=request.run_config, tags=request.tags, instance=instance)
    assert result.success
    md = materialization_metadata(result)
    assert md["commit_kind"] == "COMPACT"
    assert (md["postponed_files_before"], md["postponed_files_after"]) == (3, 1)
    assert (md["job.postponed_files"], md["job.postponed_rows"]) == (2, 20)
    assert md["job.postpone_partitions"] == [{"partition": "dt=a", "buckets": 2, "files": 2, "rows": 20}]
    expected = [{"dt": "a", "id": i, "v": f"{'x' if i < 5 else 'y'}{i}"} for i in range(15)]
    assert canonical(pypaimon.read(wh, "db.p").select(["dt", "id", "v"]), ["dt", "id"]) == expected
    assert canonical(table.to_arrow(), ["dt", "id"]) == expected
    assert in_process_jobs == ["compact"]  # in-process: in_process_jobs.py


def test_postpone_table_config_refuses_a_unit_limit() -> None:
    """``compaction_max_units`` cannot apply to a postpone table's compaction: lake.yaml says so."""
    spec = {"identifier": "db.p", "schema": {"id": "BIGINT NOT NULL", "v": "STRING"}, "primary_keys": ["id"],
            "options": {"bucket": -2}, "maintenance": {"compaction_max_units": 4}}
    with pytest.raises(ValidationError, match="compaction_max_units does not apply to a postpone-bucket table"):
        TableConfig.model_validate(spec)
