"""A branch lake.yaml lists is maintained by its own assets through the jobs' ``--branch``: the
small-file sensor asks for the branch's compaction (the compact job through spark-submit under
Dagster Pipes, as in production: the suite's one launcher run of a branch's compaction), and the
branch's expiry (the expire job, through the python launcher: a real child process) trims the
branch's snapshots to the branch's ``retain_max``. The main branch is left as it was throughout."""

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
  - identifier: db.t
    schema: {dt: STRING NOT NULL, id: BIGINT NOT NULL, v: STRING}
    primary_keys: [dt, id]
    partition_keys: [dt]
    options: {bucket: 1}
    maintenance: {level0_runs: 5, size_amplification_percent: 1000, retain_min: 1, compaction_cron: null,
                  expiry_cron: null}
    branches:
      - {name: dev, maintenance: {level0_runs: 2, retain_max: 2}}
"""


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorExecutionData:
    with dg.build_sensor_context(instance=instance, resources=defs.resources, cursor=cursor) as context:
        return defs.resolve_sensor_def(SMALL_FILE_SENSOR).evaluate_tick(context)


def test_branch_compaction_and_expiry_run_on_the_branch_only(tmp_path: Path, spark) -> None:
    (tmp_path / "lake.yaml").write_text(CONFIG)
    defs = build_definitions(load_config(tmp_path / "lake.yaml"))
    catalog = Catalog(str(tmp_path / "warehouse"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "1"})
    for i in range(4):  # 4 level-0 runs in main's dt=a: under main's level0_runs 5
        table.write_arrow(pa.table({"dt": ["a"], "id": [i], "v": [f"m{i}"]}, schema=SCHEMA))
    table.create_branch("dev")
    dev = catalog.get_table("db.t$branch_dev")
    for i in range(3):  # 3 level-0 runs in dev's dt=b: over dev's level0_runs 2
        dev.write_arrow(pa.table({"dt": ["b", "b"], "id": [i, 10 + i], "v": [f"d{i}", f"e{i}"]}, schema=SCHEMA))
    main_rows, dev_rows = table.to_arrow().sort_by("id"), dev.to_arrow().sort_by("id")
    main_snapshot = table.latest_snapshot().id

    with dg.instance_for_test() as instance:
        tick = _tick(defs, instance, None)
        [request] = tick.run_requests  # the branch's, not main's
        assert (request.job_name, request.run_key) == ("db_t_branch_dev_compaction_job", "db.t$branch_dev@3")
        assert request.tags["lake/table"] == "db.t$branch_dev"
        config = request.run_config["ops"]["db__t_branch_dev_compaction"]["config"]
        assert config["partitions"] == ["dt=b"]
        pipes = build_definitions(load_config(tmp_path / "lake.yaml").model_copy(update={
            "spark": load_config(tmp_path / "lake.yaml").spark.model_copy(update={"launcher": "pipes"})}))
        result = pipes.resolve_job_def(request.job_name).execute_in_process(
            run_config=request.run_config, tags=request.tags, instance=instance)
        assert result.success
        md = materialization_metadata(result)
        assert (md["commit_kind"], md["snapshot_id"]) == ("COMPACT", 4)
        # the job ran on the branch (spark-submit's application) and reported its check through Pipes
        assert md["job.table"] == "db.t$branch_dev" and md["job.spark_app_id"]
        # (the policy reaches the job only as Pipes extras: the partitions it was asked to compact)
        [check] = [e for e in result.get_asset_check_evaluations() if e.check_name == "compacted_small_files"]
        assert check.passed and check.asset_key == dg.AssetKey(["db", "t_branch_dev_compaction"])
        assert check.metadata["partitions"].value == "dt=b"
        # the branch's health before and after (main holds 4 files in dt=a)
        assert (md["data_files_before"], md["data_files_after"], md["partitions"]) == (3, 1, "dt=b")
        assert catalog.get_table("db.t$branch_dev").latest_snapshot().commit_kind == "COMPACT"
        quiet = _tick(defs, instance, tick.cursor)  # the branch's new snapshot is healthy now
        assert not quiet.run_requests

        # the branch's expiry through the python launcher: 4 snapshots, the branch keeps 2
        expiry = defs.resolve_job_def("db_t_branch_dev_expiry_job").execute_in_process(instance=instance)
        assert expiry.success
        md = materialization_metadata(expiry)
        assert (md["snapshots_before"], md["snapshots_after"], md["earliest_snapshot_id"]) == (4, 2, 3)
        assert md["job.table"] == "db.t$branch_dev"

    dev = catalog.get_table("db.t$branch_dev")
    assert [s.id for s in dev.snapshots()] == [3, 4]
    assert dev.to_arrow().sort_by("id").equals(dev_rows)
    # main: not compacted, not expired, same rows
    assert [s.id for s in table.snapshots()] == list(range(1, main_snapshot + 1))
    assert table.to_arrow().sort_by("id").equals(main_rows)
