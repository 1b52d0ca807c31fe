"""The ``partition.sink-strategy`` warning of a plain, unclustered ``df.write`` / ``df.writeStream``
(lake_assets/spark/sink_distribution.py): once per batch write, once per streaming query (not
every micro-batch), seen by a user of a default pyspark session (the commit runs in a Python worker
of the driver: Python's last-resort handler writes the record to the worker's stderr, which the
driver JVM copies to its own), and its text names the table, the option and the fix."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.spark.sink_distribution import check_sink_distribution
from lake_assets.spark.task_sequences import TaskFiles

REPO = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
NEEDLE = "option partition.sink-strategy = hash asks for each partition's rows in one writer task"


def rows(n: int, start: int = 0) -> pa.Table:
    ks = list(range(start, start + n))
    return pa.table({"k": ks, "dt": [f"d{k % 3}" for k in ks], "v": [f"v{k}" for k in ks]}, schema=SCHEMA)


def make(wh: str, name: str) -> None:
    cat = Catalog(wh)
    if "db" not in cat.list_databases():
        cat.create_database("db")
    cat.create_table(name, SCHEMA, partition_keys=["dt"], options={"bucket": "-1", "partition.sink-strategy": "hash"})


def test_the_warning_names_the_table_the_option_and_the_fix(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    wh = str(tmp_path / "wh")
    make(wh, "db.t")
    t = Catalog(wh).get_table("db.t")
    tasks = []
    for start in (0, 100):  # two "tasks", each holding rows of every partition
        w = t.new_writer("u", write_only=True)
        w.write_arrow(rows(30, start))
        tasks.append(TaskFiles(w.prepare_commit()))
        w.close()
    with caplog.at_level(logging.DEBUG, logger="lake_assets.spark.sink_distribution"):
        assert len(check_sink_distribution(t.store, tasks)) == 3
        assert len(check_sink_distribution(t.store, tasks, warn=lambda: False)) == 3
        assert check_sink_distribution(t.store, tasks[:1]) == {}  # one task per partition: met, silent
    warned, quiet = caplog.records
    assert warned.levelno == logging.WARNING and quiet.levelno == logging.DEBUG
    text = warned.getMessage()
    assert text.startswith("Write to db.t: option partition.sink-strategy = hash")
    assert "3 partition(s) were written by several tasks" in text and "by 2)" in text
    assert "df.repartition('dt') before df.write or df.writeStream" in text
    assert "lake_assets.spark.write_table" in text


SCRIPT = """
import sys
import lake_assets
from pyspark.sql import SparkSession
from lake_assets.spark.datasource import register

print("lake_assets at", lake_assets.__file__, flush=True)
wh, landing, checkpoint = sys.argv[1:4]
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
register(spark)
# a batch write of unclustered rows
spark.read.parquet(landing).repartition(2).write.format("lake").mode("append").option("warehouse", wh).save("db.b")
# a stream of three micro-batches (one landing file each), each unclustered
query = (spark.readStream.schema("k long, dt string, v string").option("maxFilesPerTrigger", 1).parquet(landing)
         .repartition(2).writeStream.format("lake").option("warehouse", wh)
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start("db.s"))
query.awaitTermination()
print("batches", len(query.recentProgress), flush=True)
spark.stop()
"""


def test_a_default_session_user_sees_it_once_per_write_and_once_per_stream(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    wh, landing = str(tmp_path / "wh"), tmp_path / "landing"
    landing.mkdir()
    for i in range(3):
        pq.write_table(rows(60, 1000 * i), landing / f"part-{i}.parquet")
    make(wh, "db.b")
    make(wh, "db.s")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, "-c", SCRIPT, wh, str(landing), str(tmp_path / "checkpoint")], env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    assert f"lake_assets at {REPO}/lake_assets/__init__.py" in run.stdout  # this worktree's, in the driver
    cat = Catalog(wh)
    assert cat.get_table("db.b").to_arrow().num_rows == 180
    stream = cat.get_table("db.s")
    assert stream.to_arrow().num_rows == 180 and len(stream.snapshots()) == 3  # three micro-batches
    warned = [line for line in run.stderr.splitlines() if NEEDLE in line]
    assert [line.split(":")[0] for line in warned] == ["Write to db.b", "Write to db.s"], warned
    # text only this worktree's sink_distribution has: the driver's Python worker imported it too
    assert "A streaming query says so at its first micro-batch only." in warned[1]
