"""The expire job: dry runs delete nothing; real runs delete, on executors when there are many files."""

from __future__ import annotations

import os

import pytest

from lake_assets.spark.jobs import expire
from lake_assets.spark.jobs.errors import EXIT_CONFIG, EXIT_OK
from tests.spark.test_jobs_common import make_pk_table, run_job_main, sorted_rows, write_batches

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def test_expire_dry_run_then_distributed_deletes(capsys, spark, tmp_path):
    wh = str(tmp_path)
    table = make_pk_table(wh)
    write_batches(table, 6)
    table.compact(full=True)  # snapshot 7: the level-0 files of 1-6 are now only in old snapshots
    expected = sorted_rows(table)
    files = _files(table.paths.root)
    args = ["--warehouse", wh, "--table", "db.t", "--retain-min", "1", "--retain-max", "1", "--older-than", "0s"]
    code, out = run_job_main(capsys, expire.main, *args, "--dry-run")
    assert code == EXIT_OK, out
    assert out["dry_run"] is True and out["expired_snapshots"] == 6 and out["deleted_files"] == 0
    assert out["deleted_data_files"] == 24 and out["sample_paths"]
    assert _files(table.paths.root) == files and len(table.snapshots()) == 7
    # every delete goes through the executors (threshold 0)
    code, out = run_job_main(capsys, expire.main, *args, "--distributed-delete-min", "0")
    assert code == EXIT_OK, out
    assert out["expired_snapshots"] == 6 and out["earliest"] == 7 and out["distributed_delete"] is True
    assert out["deleted_files"] == out["files_to_delete"] > 24
    assert [s.id for s in table.snapshots()] == [7]
    remaining = _files(table.paths.root)
    assert len(files - remaining) == out["deleted_files"] + 6  # plus the six snapshot files
    assert sorted_rows(table) == expected


def test_expire_uses_table_retention_by_default(capsys, spark, tmp_path):
    wh = str(tmp_path)
    # write-only: its writers' commits expire nothing (else they would have applied the retention)
    table = make_pk_table(wh, options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3",
                                       "write-only": "true"})
    write_batches(table, 5)
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]
    code, out = run_job_main(capsys, expire.main, "--warehouse", wh, "--table", "db.t")
    assert code == EXIT_OK, out
    assert out["expired_snapshots"] == 2 and out["distributed_delete"] is False
    assert [s.id for s in table.snapshots()] == [3, 4, 5]
    code, out = run_job_main(capsys, expire.main, "--warehouse", wh, "--table", "db.t",
                             "--retain-min", "3", "--retain-max", "2")
    assert code == EXIT_CONFIG and "--retain-min" in out["error"]
