"""The Spark layer on tables asking for empty snapshots (`lake_assets.ops.commit_empty`) and for
codec suffixes in file names (`lake_assets.formats.file_names`): a streaming micro-batch whose
rows were all filtered out commits an empty APPEND snapshot under its batch id with
``commit.force-create-snapshot`` (and none without it), a batch ``df.write`` of no rows one with
``snapshot.ignore-empty-commit = false``, and the native write names its files with the codec.
The workers import this worktree's lake_assets (PYTHONPATH reaches them)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lake_assets
from lake_assets import Catalog
from lake_assets.spark.native_write import write_table_native
from lake_assets.spark.schema import spark_schema
from lake_assets.spark.streaming import plan_between
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EVENTS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def test_workers_import_this_worktree(spark) -> None:
    where = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()
    assert where == [lake_assets.__file__]


def _stream_nothing(spark, warehouse: str, identifier: str, tmp_path: Path) -> None:
    landing, checkpoint = tmp_path / "landing", tmp_path / f"checkpoint-{identifier}"
    landing.mkdir(exist_ok=True)
    pq.write_table(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=EVENTS), landing / "part-0.parquet")
    df = spark.readStream.schema("id long, v string").parquet(str(landing)).filter("id > 100")
    query = (df.writeStream.format("lake").option("warehouse", warehouse)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start(identifier))
    try:
        query.awaitTermination(120)
    finally:
        query.stop()


@pytest.mark.parametrize("force", [True, False])
def test_a_micro_batch_of_no_rows_commits_an_empty_snapshot_when_forced(spark, catalog: Catalog, warehouse: str,
                                                                        tmp_path: Path, force: bool) -> None:
    options = {"bucket": "1"} | ({"commit.force-create-snapshot": "true"} if force else {})
    t = catalog.create_table("db.s", EVENTS, primary_keys=["id"], options=options)
    t.write_arrow(pa.table({"id": [9], "v": ["z"]}, schema=EVENTS))
    _stream_nothing(spark, warehouse, "db.s", tmp_path)
    t = catalog.get_table("db.s")
    if not force:
        assert t.snapshot_manager.latest_id() == 1
        return
    assert t.snapshot_manager.latest_id() == 2
    snap = t.snapshot(2)
    assert (snap.commit_kind, snap.commit_identifier, snap.delta_record_count) == (CommitKind.APPEND, 0, 0)
    assert snap.commit_user.startswith("spark-")
    assert t.to_arrow().to_pylist() == [{"id": 9, "v": "z"}]


def test_a_batch_write_of_no_rows_commits_an_empty_snapshot(spark, catalog: Catalog, warehouse: str) -> None:
    t = catalog.create_table("db.b", EVENTS, primary_keys=["id"],
                             options={"bucket": "1", "snapshot.ignore-empty-commit": "false"})
    empty = spark.createDataFrame([], spark_schema(t.arrow_schema))
    empty.write.format("lake").option("warehouse", warehouse).mode("append").save("db.b")
    snap = catalog.get_table("db.b").latest_snapshot()
    assert snap is not None and (snap.id, snap.commit_kind, snap.commit_identifier) == (
        1, CommitKind.APPEND, BATCH_COMMIT_IDENTIFIER)


def test_the_native_write_names_files_with_the_codec(spark, catalog: Catalog, warehouse: str) -> None:
    t = catalog.create_table("db.n", EVENTS, primary_keys=["id"], options={
        "bucket": "2", "file.suffix.include.compression": "true", "file.compression": "snappy"})
    df = spark.createDataFrame([(i, f"v{i}") for i in range(20)], spark_schema(t.arrow_schema))
    assert write_table_native(df, warehouse, "db.n", require_native=True).native
    t = catalog.get_table("db.n")
    names = [f.file_name for s in t.plan() for f in s.files]
    assert names and all(n.endswith(".snappy.parquet") for n in names), names
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == list(range(20))


def _stream_once(spark, warehouse: str, source: str, sink: str, checkpoint: Path) -> None:
    df = spark.readStream.format("lake").option("warehouse", warehouse).load(source)
    query = (df.writeStream.format("lake").option("warehouse", warehouse)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start(sink))
    try:
        query.awaitTermination(120)
    finally:
        query.stop()


@pytest.mark.parametrize("asks", [{"commit.force-create-snapshot": "true"}, {"snapshot.ignore-empty-commit": "false"}])
def test_a_micro_batch_of_no_input_partitions_commits_an_empty_snapshot_when_asked(
        spark, catalog: Catalog, warehouse: str, tmp_path: Path, asks: dict[str, str]) -> None:
    """A lake-to-lake stream whose next upstream snapshot has nothing to stream (a compaction):
    the micro-batch plans no input partition (`plan_between` gives none); Spark still runs one
    write task over nothing (SPARK-23271), whose commit user the driver commits the empty APPEND
    with, under the batch id, as Java's streaming commit does."""
    src = catalog.create_table("db.src", EVENTS, primary_keys=["id"], options={"bucket": "1"})
    catalog.create_table("db.sink", EVENTS, primary_keys=["id"], options={"bucket": "1", **asks})
    src.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=EVENTS))
    src.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=EVENTS))
    checkpoint = tmp_path / "checkpoint-sink"
    _stream_once(spark, warehouse, "db.src", "db.sink", checkpoint)
    sink = catalog.get_table("db.sink")
    first = [(s.commit_kind, s.delta_record_count) for s in sink.snapshots()]
    assert first and all(kind == CommitKind.APPEND for kind, _ in first)
    assert sorted(r["id"] for r in sink.to_arrow().to_pylist()) == [1, 2, 3]
    catalog.get_table("db.src").compact(full=True)  # a COMPACT snapshot: no rows to stream
    src = catalog.get_table("db.src")
    compacted = src.snapshot_manager.latest_id()
    assert compacted is not None and src.snapshot(compacted).commit_kind == CommitKind.COMPACT
    assert plan_between(src, {"snapshot": compacted, "full": False}, {"snapshot": compacted + 1, "full": False}) == []
    _stream_once(spark, warehouse, "db.src", "db.sink", checkpoint)
    sink = catalog.get_table("db.sink")
    snaps = list(sink.snapshots())
    assert len(snaps) == len(first) + 1
    last = snaps[-1]
    assert (last.commit_kind, last.delta_record_count) == (CommitKind.APPEND, 0)
    assert last.commit_user == snaps[-2].commit_user and last.commit_user.startswith("spark-")
    assert last.commit_identifier > snaps[-2].commit_identifier
    assert sorted(r["id"] for r in sink.to_arrow().to_pylist()) == [1, 2, 3]
