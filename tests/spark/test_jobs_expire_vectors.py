"""The expire job on a deletion-vector table: its figures count the index files it deletes
(deletion vector files and their index manifests), so ``files_to_delete`` is what
``deleted_files`` counts and a dry run lists them (session 16's maintenance review: they were
deleted but left out of ``files_to_delete`` and the sample)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from lake_assets.spark.jobs import expire
from lake_assets.spark.jobs.errors import EXIT_OK
from tests.spark.test_jobs_common import make_pk_table, run_job_main, sorted_rows, write_batches

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_expire_job_counts_the_vector_files_it_deletes(capsys, spark, tmp_path) -> None:
    wh = str(tmp_path)
    table = make_pk_table(wh, options={"deletion-vectors.enabled": "true"})
    write_batches(table, 2)
    table.compact(full=True)
    for i in range(3):  # each write's inline compaction marks replaced rows: new vector files each time
        table.write_arrow(pa.table({"id": list(range(0, 40, 3)), "dt": ["2024-01-01"] * 14, "v": [float(i)] * 14}))
    expected = sorted_rows(table)
    index_dir = table.store.paths.index_dir
    before = set(os.listdir(index_dir))
    args = ["--warehouse", wh, "--table", "db.t", "--retain-min", "1", "--retain-max", "1", "--older-than", "0s"]
    code, dry = run_job_main(capsys, expire.main, *args, "--dry-run")
    assert code == EXIT_OK, dry
    assert dry["deleted_index_files"] > 0
    code, out = run_job_main(capsys, expire.main, *args)
    assert code == EXIT_OK, out
    gone = before - set(os.listdir(index_dir))
    assert out["deleted_index_files"] == dry["deleted_index_files"] == len(gone)
    assert out["deleted_files"] == out["files_to_delete"] == dry["files_to_delete"]
    assert sorted_rows(table) == expected
