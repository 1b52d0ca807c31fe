"""A damaged write-task result in a real Spark job (issue 14, session 18): the job fails with the
driver's `InvalidCommitMessageError` naming the task and field, commits nothing, and Spark's abort
deletes the files of the task that passed the checks (the other checks: the in-process cases of
`tests/reliability/test_trust_task_outputs.py`)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def test_truncated_task_result_fails_the_job_and_commits_nothing(spark, tmp_path: Path) -> None:
    from tests.spark.task_output_damage import DamagingSource

    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write_arrow(pa.table({"k": [1], "dt": ["a"], "v": ["x"]}, schema=SCHEMA))
    live = set(Path(wh).rglob("data-*"))
    canary = tmp_path / "canary"
    canary.write_bytes(b"precious")
    marker = tmp_path / "workers"
    spark.dataSource.register(DamagingSource)
    # two input partitions: task 0 writes k=10 into dt=a, task 1 (damaged) k=20 into dt=b
    df = spark.range(0, 2, 1, 2).selectExpr("id * 10 + 10 as k", "if(id = 0, 'a', 'b') as dt", "'y' as v")
    with pytest.raises(Exception, match="Invalid result of Spark write task 1: message 0: Invalid commit message"):
        (df.write.format("lake-damaging").option("warehouse", wh).option("path", "db.t")
         .option("test.worker-marker", str(marker)).mode("append").save())
    assert t.snapshot_manager.latest_id() == 1 and t.refresh().to_arrow()["k"].to_pylist() == [1]
    left = set(Path(wh).rglob("data-*")) - live
    # task 0's file deleted by the abort; the damaged task's left to orphan removal (its result is not trusted)
    assert left and all("dt=b" in str(p) for p in left), left
    assert canary.read_bytes() == b"precious"
    # the workers imported this checkout's lake_assets (PYTHONPATH)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert marker.read_text().split() and set(marker.read_text().split()) == {here}
