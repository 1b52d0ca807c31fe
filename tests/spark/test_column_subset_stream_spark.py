"""Structured Streaming of some columns of a data-evolution table (`lake_assets.spark.column_subset`):
``df.writeStream.format("lake")`` of a DataFrame holding only some of the table's columns writes
each micro-batch as the batch path writes the same rows (files of those columns in ``_WRITE_COLS``,
the same row ids), exactly once across a restart from the checkpoint, and refuses what the batch
path refuses with the same message. pypaimon 2.1 (the reference engine for data evolution; Paimon
Java 0.9 predates it) reads both tables' rows alike."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException

from lake_assets import Catalog
from tests.interop.paimon import missing, read_ipc
from tests.interop.test_row_tracking_interop import FIELDS, OPTIONS, SCHEMA, RowTrackingPaimon, _rows

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SUBSET = pa.schema([("p", pa.string()), ("id", pa.int64())])  # the DataFrame's order, not the table's
BATCHES = [pa.table({"p": ["a", "b"], "id": [1, 2]}, schema=SUBSET),
           pa.table({"p": ["a"], "id": [3]}, schema=SUBSET),
           pa.table({"p": ["b", "b", "a"], "id": [4, 5, 6]}, schema=SUBSET)]


def _land(landing: Path, data: pa.Table) -> None:
    landing.mkdir(exist_ok=True)
    n = len(list(landing.iterdir()))
    path = landing / f"part-{n:05d}.parquet"
    pq.write_table(data, path)
    # file order = batch order: Spark's file source takes files by modification time, and two files
    # landed in the same clock tick came in either order (a full-suite run gave id 3 row id 0)
    stamp = time.time() - 60 + n
    os.utime(path, (stamp, stamp))


def _run(spark, landing: Path, checkpoint: Path, warehouse: str, identifier: str, schema: str = "p string, id long",
         **options: str) -> None:
    """One availableNow run of the landing files into ``identifier``, a micro-batch per file."""
    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(landing))
    writer = (df.writeStream.format("lake").option("warehouse", warehouse)
              .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True))
    for k, v in options.items():
        writer = writer.option(k, v)
    query = writer.start(identifier)
    try:
        query.awaitTermination(120)
    finally:
        query.stop()


def _files(table: Any) -> list[tuple]:
    """Each snapshot's new files as (commit kind, columns, row count, first row id, schema id)."""
    scan = table.store.file_store_scan()
    return [(s.commit_kind, e.file.write_cols, e.file.row_count, e.file.first_row_id, e.file.schema_id)
            for s in table.snapshots() for e in scan.delta_entries(s)]


def test_stream_of_some_columns_writes_as_the_batch_path_exactly_once(
        spark, catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    stream = catalog.create_table("db.s", SCHEMA, partition_keys=["p"], options=OPTIONS)
    batch = catalog.create_table("db.b", SCHEMA, partition_keys=["p"], options=OPTIONS)
    landing, checkpoint, marker = tmp_path / "landing", tmp_path / "checkpoint", tmp_path / "fail-once"
    _land(landing, BATCHES[0])
    _land(landing, BATCHES[1])
    import lake_assets

    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()
    assert worker == [lake_assets.__file__]  # the Python workers import this checkout
    # 1. micro-batch 0 commits, then its commit call fails: Spark never logs it done
    marker.touch()
    with pytest.raises(StreamingQueryException, match="injected commit failure"):
        _run(spark, landing, checkpoint, warehouse, "db.s",
             **{"test.fail-commit": "after", "test.fail-commit-marker": str(marker)})
    assert [s.commit_identifier for s in stream.snapshots()] == [0]
    # 2. the restart replays micro-batch 0 (committed already: no second copy, no new row ids), then
    #    writes the second file and a new one as micro-batches 1 and 2
    _land(landing, BATCHES[2])
    _run(spark, landing, checkpoint, warehouse, "db.s")
    assert [s.commit_identifier for s in stream.snapshots()] == [0, 1, 2]
    assert len({s.commit_user for s in stream.snapshots()}) == 1

    # the batch path, one write per landed file (one task each, as each micro-batch): the same
    # files and row ids, snapshot by snapshot
    for path in sorted(landing.iterdir()):
        spark.read.schema("p string, id long").parquet(str(path)).write.format("lake") \
            .option("warehouse", warehouse).mode("append").save("db.b")
    stream, batch = catalog.get_table("db.s"), catalog.get_table("db.b")
    assert _files(stream) == _files(batch)
    assert {f[1] for f in _files(stream)} == {("id", "p")}  # in the table's order
    assert stream.latest_snapshot().next_row_id == batch.latest_snapshot().next_row_id == 6
    ours = _rows(stream.to_arrow(columns=FIELDS))
    assert [{k: r[k] for k in ("id", "p", "v", "_ROW_ID")} for r in ours] == \
        [{k: r[k] for k in ("id", "p", "v", "_ROW_ID")} for r in _rows(batch.to_arrow(columns=FIELDS))]
    assert sorted((r["id"], r["p"], r["v"]) for r in ours) == \
        [(i, p, None) for i, p in ((1, "a"), (2, "b"), (3, "a"), (4, "b"), (5, "b"), (6, "a"))]
    assert sorted(r["_ROW_ID"] for r in ours) == list(range(6))
    # the replayed micro-batch's spare files were deleted, not left behind
    live = {f.file_name for s in stream.plan() for f in s.files}
    assert {p.name for p in Path(stream.paths.root).rglob("data-*.parquet")} == live

    # refused as the batch path refuses, with its message, before anything is written
    latest = stream.latest_snapshot().id
    only_id = tmp_path / "only-id"
    _land(only_id, pa.table({"id": [7]}))
    with pytest.raises(Exception, match=r"partition columns \['p'\] are left out") as refused:
        _run(spark, only_id, tmp_path / "checkpoint-2", warehouse, "db.s", schema="id long")
    with pytest.raises(Exception, match=r"partition columns \['p'\] are left out") as batch_refused:
        spark.createDataFrame([(7,)], "id long").write.format("lake").option("warehouse", warehouse) \
            .mode("append").save("db.s")
    message = "Cannot write columns ['id'] to db.s: partition columns ['p'] are left out"
    assert message in str(refused.value) and message in str(batch_refused.value)
    # (a table without data evolution refuses the DataFrame in its write tasks, as the batch path
    # does: test_column_subset_spark.py)
    assert catalog.get_table("db.s").latest_snapshot().id == latest

    driver = RowTrackingPaimon()
    if not driver.available():
        missing(f"pypaimon venv not found ({driver.python})")
    driver.steps(warehouse, tmp_path, [{"op": "read", "table": t, "columns": FIELDS,
                                        "out": str(tmp_path / f"{t}.arrow")} for t in ("db.s", "db.b")])
    assert _rows(read_ipc(tmp_path / "db.s.arrow")) == ours
    assert _rows(read_ipc(tmp_path / "db.b.arrow")) == _rows(batch.to_arrow(columns=FIELDS))
