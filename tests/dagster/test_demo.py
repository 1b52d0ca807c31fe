"""`make demo` end to end (Dagster, spark-submit jobs through Pipes, a Paimon table), run from a
folder outside the repository the way a user runs it on their own lake.yaml.

The demo's runs are the suite's launcher runs of these job kinds through spark-submit under Pipes: the
backfill of a range through the `dagster` CLI (ingest), the sensor's compaction, the changelog and
the expiry. The materializations of the backfill and the compaction are checked on the demo's own
instance (tests/dagster/test_ingest.py and conftest's ``compacted`` run the same jobs in the test process).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

REPO = Path(__file__).resolve().parents[2]


def _materializations(instance: dg.DagsterInstance, asset: str) -> list[tuple[str, str | None, dict]]:
    """(run id, partition, metadata values) of an asset's materializations, newest first."""
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(["airline", asset])),
                                              limit=20).records
    return [(r.run_id, r.partition_key, {k: v.value for k, v in r.asset_materialization.metadata.items()})
            for r in records]


def test_the_demo_runs_end_to_end_in_a_folder_outside_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    shutil.copy(REPO / "lake.yaml", tmp_path / "lake.yaml")
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "LAKE_CONFIG")}
    env["PYSPARK_PYTHON"] = sys.executable
    run = subprocess.run([sys.executable, "-m", "lake_assets.demo", "--workdir", str(tmp_path), "--days", "2"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert "Done in" in out, out[-3000:]
    assert f"{tmp_path}/warehouse/airline.db/flights" in out
    assert "sensor requested 1 run(s)" in out and "max 1 sorted runs in a bucket" in out
    assert "(5 succeeded)" in out
    # everything the demo made is in the work folder, nothing in the repository's
    assert (tmp_path / "warehouse" / "airline.db" / "flights" / "snapshot").is_dir()
    assert (tmp_path / "dagster_home").is_dir()

    # The demo's Dagster instance (its dagster.yaml's storage follows DAGSTER_HOME).
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    with dg.DagsterInstance.get() as instance:
        # the CLI's backfill of the two days: one run, one Spark application, a materialization per day
        # with that day's numbers, and the job's own summary (`job.*`)
        ingests = _materializations(instance, "flights_ingest")
        assert len({run_id for run_id, _, _ in ingests}) == 1
        by_day = {day: md for _, day, md in ingests}
        assert sorted(by_day) == ["2013-01-01", "2013-01-02"]
        for md in by_day.values():
            assert md["job_runs"] == 1 and md["partitions"] == "dt=2013-01-01, dt=2013-01-02"
            assert md["commit_kind"] == "OVERWRITE" and md["rows_in"] == md["rows_out"] > 0
            assert md["job.job"] == "ingest" and md["job.spark_app_id"]
        day1, day2 = by_day["2013-01-01"], by_day["2013-01-02"]
        assert day2["snapshot_id"] == day1["snapshot_id"] + 1  # a commit per day, oldest first
        assert day1["dagster/partition_row_count"] + day2["dagster/partition_row_count"] == day1["dagster/row_count"]
        # the sensor's compaction (spark-submit under Pipes): its numbers and the table's health before and after
        [(_, _, compaction)] = _materializations(instance, "flights_compaction")
        assert compaction["commit_kind"] == "COMPACT" and compaction["job.job"] == "compact"
        assert compaction["files_in"] > compaction["files_out"] > 0
        assert compaction["small_files_before"] > compaction["small_files_after"]
        assert compaction["data_files_after"] < compaction["data_files_before"]
        assert compaction["rows_in"] > compaction["rows_out"] > 0  # status updates merged into the schedules
        assert "| file size | before | after |" in compaction["file_sizes"]
        assert compaction["table_path"].endswith("airline.db/flights")
        health = [r.data for r in compaction["health"].records]
        assert health and all(h["file_count"] == 1 and h["level0_file_count"] == 0 for h in health)
        # the compact and expire jobs' own checks, reported through Pipes from spark-submit
        for asset, name in (("flights_compaction", "compacted_small_files"),
                            ("flights_expiry", "retained_snapshots_readable")):
            [record] = instance.event_log_storage.get_asset_check_execution_history(
                dg.AssetCheckKey(dg.AssetKey(["airline", asset]), name), limit=1)
            evaluation = record.evaluation
            assert evaluation is not None and evaluation.passed, (asset, evaluation)
            assert "missing_files" in evaluation.metadata or "buckets_over" in evaluation.metadata
