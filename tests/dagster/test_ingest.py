"""Ingest partitions with the real ingest job: one day through the python launcher (local[1]), then
a backfill of a range in one run and one Spark application, which re-ingests day 1 (replaced, not
duplicated) and adds day 2; each day's materialization carries that day's numbers and health.

The range's job runs in the test process (tests/dagster/in_process_jobs.py). The same backfill through
the `dagster` CLI (`asset materialize --partition-range`, spark-submit under Pipes) is the demo's first
step, and tests/dagster/test_demo.py checks its run and per-day materializations the same way."""

import dagster as dg
import pyarrow.compute as pc

from lake_assets.defs.resources import WarehouseResource
from tests.dagster.helpers import DAYS, materialization_metadata

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


def test_backfill_a_range_in_one_run(
    ingested: dg.ExecuteInProcessResult, instance: dg.DagsterInstance, lake_defs: dg.Definitions,
    in_process_jobs: list[str],
) -> None:
    # what the CLI's `--partition-range` (and the UI's single-run backfill) hands the run: the range's tags
    tags = {"dagster/asset_partition_range_start": DAYS[0], "dagster/asset_partition_range_end": DAYS[1]}
    done = lake_defs.resolve_job_def("db_orders_ingest_job").execute_in_process(instance=instance, tags=tags)
    assert done.success
    assert in_process_jobs == ["ingest"]  # one job for the range

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
