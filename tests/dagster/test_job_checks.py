"""The jobs' own checks (`lake_assets.spark.jobs.run_checks`) pass and fail when they should, on
tables written with the core (no Spark); their runs through the jobs and Pipes are
test_compaction.py's, test_maintenance_assets.py's and test_demo.py's."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from lake_assets.defs.resources import WarehouseResource
from lake_assets.job_checks import EXTRA_PARTITIONS, EXTRA_SMALL_FILE_THRESHOLD
from lake_assets.spark.jobs.run_checks import (
    compacted_small_files,
    orphans_older_than_bound,
    retained_snapshots_readable,
)
from lake_assets.table import Table

HOUR_MS = 3600 * 1000


@pytest.fixture
def orders(core_lake) -> Table:
    """db.orders with four write-only commits to dt=2024-01-01 (level-0 files: small ones)."""
    config, defs = core_lake
    warehouse: WarehouseResource = defs.resources["warehouse"]
    table = warehouse.ensure_table(config.table("db.orders"))
    for start in range(0, 40, 10):
        writer = table.new_writer("job-checks", write_only=True)
        ids = list(range(start, start + 10))
        writer.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": ["2024-01-01"] * 10,
                                     "name": ["x"] * 10, "amount": [1.0] * 10}))
        table.new_committer("job-checks").commit(writer.prepare_commit(), start + 1)
        writer.close()
    return table


def _values(result: dict) -> dict:
    return result["metadata"]


def test_compacted_small_files_judges_the_partitions_asked_for(orders: Table) -> None:
    worst = max(r["small_file_count"] for r in orders.health().to_pylist())
    assert worst >= 2  # each of the four commits left a file in a bucket
    over = compacted_small_files(orders, {EXTRA_SMALL_FILE_THRESHOLD: worst - 1, EXTRA_PARTITIONS: ["dt=2024-01-01"]})
    assert over is not None and over["passed"] is False and over["severity"] == "WARN"
    assert _values(over)["buckets_over"] >= 1 and "dt=2024-01-01 bucket" in _values(over)["over"][0]
    assert compacted_small_files(orders, {EXTRA_SMALL_FILE_THRESHOLD: worst})["passed"] is True
    # another partition asked for: nothing of dt=2024-01-01 is judged
    elsewhere = compacted_small_files(orders, {EXTRA_SMALL_FILE_THRESHOLD: 0, EXTRA_PARTITIONS: ["dt=2024-01-02"]})
    assert elsewhere["passed"] is True and _values(elsewhere)["buckets_over"] == 0
    assert compacted_small_files(orders, {}) is None  # no policy (a run Dagster did not start): not judged


def test_retained_snapshots_readable_fails_on_a_missing_file(orders: Table) -> None:
    ok = retained_snapshots_readable(orders)
    assert ok["passed"] is True and ok["severity"] == "ERROR"
    assert _values(ok)["retained_snapshots"] == 4 and _values(ok)["snapshots_read"] == "1, 4"
    earliest = orders.snapshots()[0]
    [entry, *_] = orders.store.file_store_scan().live_entries(earliest)
    lost = orders.store.data_file_path(entry.partition, entry.bucket, entry.file)
    os.remove(lost)  # what a wrong expiry would have deleted
    broken = retained_snapshots_readable(orders)
    assert broken["passed"] is False and _values(broken)["missing"] == [lost]


def test_retained_snapshots_readable_fails_on_a_missing_manifest_list(orders: Table) -> None:
    middle = orders.snapshots()[2]
    os.remove(orders.store.paths.manifest_file(middle.delta_manifest_list))
    broken = retained_snapshots_readable(orders)
    assert broken["passed"] is False and _values(broken)["missing_files"] == 1


def test_orphans_older_than_bound_keeps_a_young_file(orders: Table, tmp_path) -> None:
    bucket = os.path.dirname(orders.store.data_file_path(*_first_file(orders)))
    old, young = os.path.join(bucket, "data-old-orphan.parquet"), os.path.join(bucket, "data-young-orphan.parquet")
    for path in (old, young):
        with open(path, "wb") as f:
            f.write(b"x")
    now_ms = int(time.time() * 1000)
    os.utime(old, (now_ms / 1000 - 3 * 3600, now_ms / 1000 - 3 * 3600))
    result, too_young = orphans_older_than_bound(orders, [old], now_ms=now_ms, older_than_ms=2 * HOUR_MS,
                                                 allow_recent=False)
    assert result["passed"] is True and too_young == set() and _values(result)["bound_age_s"] == 7200
    result, too_young = orphans_older_than_bound(orders, [old, young], now_ms=now_ms, older_than_ms=2 * HOUR_MS,
                                                 allow_recent=False)
    assert result["passed"] is False and too_young == {young} and _values(result)["younger"] == [young]
    # below the one-hour floor only with allow_recent; without it the floor is the bound
    result, _ = orphans_older_than_bound(orders, [young], now_ms=now_ms + 60_000, older_than_ms=1,
                                         allow_recent=False)
    assert result["passed"] is False and _values(result)["bound_age_s"] == 3600
    result, too_young = orphans_older_than_bound(orders, [young], now_ms=now_ms + 60_000, older_than_ms=1,
                                                 allow_recent=True)
    assert result["passed"] is True and not too_young


def _first_file(table: Table) -> tuple:
    entry = table.store.file_store_scan().live_entries(table.latest_snapshot())[0]
    return entry.partition, entry.bucket, entry.file
