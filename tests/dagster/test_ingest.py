"""Ingest partitions with the real ingest job (python launcher, local[1]): one day, then a backfill
of a range from the CLI in one run and one Spark application, which re-ingests day 1 (replaced, not
duplicated) and adds day 2; each day's materialization carries that day's numbers and health."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow.compute as pc

from lake_assets.defs.resources import WarehouseResource
from tests.dagster.helpers import DAYS, REPO, materialization_metadata

INGEST = dg.AssetKey(["db", "orders_ingest"])


def _rows_per_day(warehouse: WarehouseResource) -> dict[str, int]:
    data = warehouse.table("db.orders").to_arrow(columns=["dt"])
    counts = pc.value_counts(data["dt"]).to_pylist()
    return {c["values"]: c["counts"] for c in counts}


def test_materialize_one_partition(ingested: dg.ExecuteInProcessResult, lake_defs: dg.Definitions) -> None:
    md = materialization_metadata(ingested)
    assert md["commit_kind"] == "OVERWRITE"
    assert md["snapshot_id"] >= 1
    assert md["rows_out"] == 20 and md["files_in"] == 2 and md["job_runs"] == 1
    assert md["bytes_out"] > 0 and md["duration_s"] > 0
    assert md["partitions"] == "dt=2024-01-01"
    assert md["table_path"].endswith("/warehouse/db.db/orders")
    # Dagster's standard table metadata, as on the other assets; the day's rows are its partition's
    assert md["dagster/uri"] == md["table_path"]
    assert md["dagster/partition_row_count"] == 20 and md["dagster/row_count"] == 20
    definition = lake_defs.resolve_asset_graph().get(INGEST).metadata
    assert definition["dagster/table_name"] == "db.orders"
    assert [c.name for c in definition["dagster/column_schema"].columns] == ["id", "dt", "name", "amount"]
    health = md["health"]
    assert [r.data["partition"] for r in health.records] == ["dt=2024-01-01", "dt=2024-01-01"]
    assert {c.name for c in health.schema.columns} >= {"bucket", "small_file_count", "sorted_runs",
                                                       "size_amplification_percent", "oldest_level0_age_ms"}
    assert md["small_files"] == sum(r.data["small_file_count"] for r in health.records)
    events = ingested.get_asset_materialization_events()
    assert [e.partition for e in events] == [DAYS[0]]
    assert _rows_per_day(lake_defs.resources["warehouse"])[DAYS[0]] == 20


def test_backfill_a_range_from_the_cli(
    ingested: dg.ExecuteInProcessResult, lake_path: Path, dagster_home: Path, instance: dg.DagsterInstance,
    lake_defs: dg.Definitions,
) -> None:
    cli = str(Path(sys.executable).parent / "dagster")
    env = {**os.environ, "LAKE_CONFIG": str(lake_path), "DAGSTER_HOME": str(dagster_home)}
    done = subprocess.run(
        [cli, "asset", "materialize", "-m", "lake_assets.defs.definitions", "--select", "db/orders_ingest",
         "--partition-range", f"{DAYS[0]}...{DAYS[1]}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=INGEST), limit=10).records
    latest_run = records[0].run_id
    backfilled = [r for r in records if r.run_id == latest_run]
    assert sorted(r.partition_key for r in backfilled) == [DAYS[0], DAYS[1]]  # one run for the range
    by_day = {r.partition_key: {k: v.value for k, v in r.asset_materialization.metadata.items()}
              for r in backfilled}
    day1, day2 = by_day[DAYS[0]], by_day[DAYS[1]]
    for md in (day1, day2):
        assert md["job_runs"] == 1  # one Spark application for the range
        assert md["partitions"] == "dt=2024-01-01, dt=2024-01-02"
        assert md["commit_kind"] == "OVERWRITE" and md["rows_in"] == md["rows_out"] == 20 and md["files_in"] == 2
    assert day1["partition"] == "dt=2024-01-01" and day2["partition"] == "dt=2024-01-02"
    assert day1["dagster/partition_row_count"] == day2["dagster/partition_row_count"] == 20  # each its own day
    assert day1["dagster/row_count"] == day2["dagster/row_count"] == 40  # the table after the run
    assert day1["rows_removed"] >= 20 and day2["rows_removed"] == 0  # day 1 replaced, day 2 new
    assert day2["snapshot_id"] == day1["snapshot_id"] + 1  # a commit per day, oldest first
    assert {r.data["partition"] for r in day1["health"].records} == {"dt=2024-01-01"}
    assert {r.data["partition"] for r in day2["health"].records} == {"dt=2024-01-02"}
    assert "job.rows_in" not in day1 and "job.partitions" not in day1  # no range totals on a day
    # day 1 was replaced by the re-run, not appended to
    assert _rows_per_day(lake_defs.resources["warehouse"]) == {DAYS[0]: 20, DAYS[1]: 20}
