"""lake.yaml takes Paimon's lifecycle options; the partition expiry asset runs the real Spark job."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa

from lake_assets.defs.config import load_config
from lake_assets.defs.factory import build_definitions
from tests.dagster.helpers import REPO, materialization_metadata

LAKE = """
warehouse: {{kind: local, path: warehouse}}
spark:
  master: local[1]
  launcher: python
  jobs_dir: {jobs_dir}
  conf: {{spark.ui.enabled: false, spark.sql.shuffle.partitions: 1}}
automation: {{default_status: stopped}}
tables:
  - identifier: db.days
    schema: {{id: BIGINT, dt: STRING}}
    primary_keys: [id, dt]
    partition_keys: [dt]
    options:
      bucket: 1
      partition.expiration-time: 3 d
      partition.expiration-check-interval: 1 d
      partition.timestamp-formatter: yyyyMMdd
      tag.automatic-creation: process-time
      tag.creation-period: daily
      tag.num-retained-max: 3
"""


def test_partition_expiry_asset(tmp_path: Path) -> None:
    path = tmp_path / "lake.yaml"
    path.write_text(LAKE.format(jobs_dir=REPO / "jobs"))
    config = load_config(path)  # the lifecycle options are no longer unknown
    defs = build_definitions(config)
    # created from lake.yaml, options stored in the schema
    table = defs.resources["warehouse"].ensure_table(config.table("db.days"))
    days = [(dt.date.today() - dt.timedelta(days=i)).strftime("%Y%m%d") for i in range(6)]
    # commit-time expiry waits for partition.expiration-check-interval (1 d), which starts with the
    # writer, as in Paimon's committer: these commits leave the old days
    table.write_arrow(pa.table({"id": range(6), "dt": days}))
    assert list(table.tags()) == [(dt.date.today() - dt.timedelta(days=1)).isoformat()]  # automatic tag
    table.write_arrow(pa.table({"id": range(6), "dt": days}))
    assert table.to_arrow().num_rows == 6
    result = defs.resolve_job_def("db_days_partition_expiry_job").execute_in_process()
    assert result.success
    md = materialization_metadata(result)
    assert md["dry_run"] is False
    assert sorted(table.to_arrow().column("dt").to_pylist()) == sorted(days[:3])
    assert md["expired_partitions"] == 3 and md["snapshot_id"] == table.latest_snapshot().id
    assert table.latest_snapshot().commit_kind.value == "OVERWRITE"
    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    assert "db/days_partition_expiry" in keys


def test_lake_yaml_rejects_bad_lifecycle_values(tmp_path: Path) -> None:
    path = tmp_path / "lake.yaml"
    path.write_text(LAKE.format(jobs_dir=REPO / "jobs").replace("daily", "weekly"))
    try:
        load_config(path)
    except Exception as exc:  # the config loader's error names the option and its choices
        assert "tag.creation-period" in str(exc) and "daily" in str(exc)
    else:
        raise AssertionError("weekly accepted")


def test_partition_expiry_runs_on_its_cron(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    import dagster as dg

    path = tmp_path / "lake.yaml"
    path.write_text(LAKE.format(jobs_dir=REPO / "jobs") + "    maintenance: {partition_expiry_cron: '0 4 * * *'}\n")
    defs = build_definitions(load_config(path))
    key = dg.AssetKey.from_user_string("db/days_partition_expiry")
    with dg.instance_for_test() as instance:
        cursor = None

        def tick(when: datetime) -> bool:
            nonlocal cursor
            result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor,
                                                       evaluation_time=when)
            cursor = result.cursor
            return bool(result.get_requested_partitions(key))

        assert not tick(datetime(2024, 1, 5, 3, 0, tzinfo=UTC))  # the first evaluation notes the state
        assert tick(datetime(2024, 1, 5, 4, 1, tzinfo=UTC))       # 0 4 * * *
        assert not tick(datetime(2024, 1, 5, 4, 2, tzinfo=UTC))   # once per tick
        assert tick(datetime(2024, 1, 6, 4, 1, tzinfo=UTC))
