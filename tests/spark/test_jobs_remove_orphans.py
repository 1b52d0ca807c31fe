"""The remove-orphans job: a dry run by default; --no-dry-run deletes old unreferenced files only."""

from __future__ import annotations

import os
import time

import pytest

from lake_assets.spark.jobs import remove_orphans
from lake_assets.spark.jobs.errors import EXIT_CONFIG, EXIT_OK
from tests.spark.test_jobs_common import make_pk_table, run_job_main, sorted_rows, write_batches

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_remove_orphans_dry_run_by_default_then_delete(capsys, spark, tmp_path):
    wh = str(tmp_path)
    table = make_pk_table(wh)
    write_batches(table, 2)
    expected = sorted_rows(table)
    bucket_dir = os.path.join(table.paths.root, "dt=2024-01-01", "bucket-0")
    old = time.time() - 3 * 86400
    orphans = []
    for name in ("data-crashed-writer-0.parquet", "data-crashed-writer-1.parquet"):
        path = os.path.join(bucket_dir, name)
        with open(path, "wb") as f:
            f.write(b"x" * 10)
        os.utime(path, (old, old))
        orphans.append(path)
    fresh = os.path.join(bucket_dir, "data-in-flight-0.parquet")  # a write in progress: too young
    with open(fresh, "wb") as f:
        f.write(b"y")
    args = ["--warehouse", wh, "--table", "db.t"]
    code, out = run_job_main(capsys, remove_orphans.main, *args)
    assert code == EXIT_OK, out
    assert out["job"] == "remove_orphans" and out["dry_run"] is True  # its module's name, as every job
    assert out["orphan_files"] == 2 and out["orphan_bytes"] == 20 and out["deleted_files"] == 0
    assert sorted(out["sample_paths"]) == sorted(orphans)
    assert all(os.path.exists(p) for p in orphans)
    code, out = run_job_main(capsys, remove_orphans.main, *args, "--no-dry-run", "--distributed-delete-min", "1")
    assert code == EXIT_OK, out
    assert out["deleted_files"] == 2 and out["distributed_delete"] is True
    assert not any(os.path.exists(p) for p in orphans) and os.path.exists(fresh)
    assert sorted_rows(table) == expected
    # with a zero age bound the in-flight file counts too: listing it is allowed ...
    code, out = run_job_main(capsys, remove_orphans.main, *args, "--older-than", "0s")
    assert code == EXIT_OK and out["orphan_files"] == 1, out
    # ... deleting it only with --allow-recent: below the floor, a usage error that deletes nothing
    code, out = run_job_main(capsys, remove_orphans.main, *args, "--older-than", "10min", "--no-dry-run")
    assert code == EXIT_CONFIG and "below its floor of 1h" in out["error"] and "--allow-recent" in out["error"]
    assert os.path.exists(fresh)
    code, out = run_job_main(capsys, remove_orphans.main, *args, "--older-than", "0s", "--no-dry-run",
                             "--allow-recent")
    assert code == EXIT_OK and out["deleted_files"] == 1 and out["allow_recent"] is True, out
    assert not os.path.exists(fresh) and sorted_rows(table) == expected


def test_remove_orphans_looks_where_paimon_looks_and_removes_emptied_directories(capsys, spark, tmp_path):
    """Files of other tools (Flink's _SUCCESS, a README, a staging directory) are never listed; a
    crashed writer's partition goes with its directories once the executors deleted its files."""
    wh = str(tmp_path)
    table = make_pk_table(wh)
    write_batches(table, 1)
    expected = sorted_rows(table)
    root = table.paths.root
    old = time.time() - 3 * 86400

    def plant(*parts: str) -> str:
        path = os.path.join(root, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"x")
        os.utime(path, (old, old))
        return path

    kept = [plant("dt=2024-01-01", "_SUCCESS"), plant("README.md"), plant(".staging", "part-0")]
    crashed = plant("dt=2099-01-01", "bucket-3", "data-crashed-0.parquet")
    args = ["--warehouse", wh, "--table", "db.t", "--no-dry-run", "--distributed-delete-min", "1"]
    code, out = run_job_main(capsys, remove_orphans.main, *args)
    assert code == EXIT_OK, out
    assert out["sample_paths"] == [crashed] and out["deleted_files"] == 1
    assert not os.path.exists(os.path.join(root, "dt=2099-01-01"))
    assert all(os.path.exists(p) for p in kept)
    assert sorted_rows(table) == expected
