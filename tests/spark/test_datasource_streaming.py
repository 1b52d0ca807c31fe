"""Structured Streaming: the lake sink is exactly-once across failures and restarts; the lake source
follows snapshots from a checkpoint without losing or repeating a change."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException

from lake_assets import Catalog
from lake_assets.spark import repartition_by_bucket

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EVENTS = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _land(landing: Path, ids: range) -> None:
    """Drop one Parquet file of events into the landing directory."""
    landing.mkdir(exist_ok=True)
    name = f"part-{len(list(landing.iterdir())):05d}.parquet"  # file order = batch order
    pq.write_table(pa.table({"id": list(ids), "v": [f"v{i}" for i in ids]}, schema=EVENTS), landing / name)


def _run_sink(spark, landing: Path, checkpoint: Path, warehouse: str, identifier: str,
              route: Catalog | None = None, max_files: int = 1, shuffle: bool = False,
              **options: str) -> None:
    """One availableNow run of landing files → lake table, ``max_files`` files per micro-batch.

    ``shuffle`` spreads rows over two tasks at random; ``route`` over tasks by bucket.
    """
    df = spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", max_files).parquet(str(landing))
    if shuffle:
        df = df.repartition(2)
    if route is not None:
        df = repartition_by_bucket(df, route.get_table(identifier), num_partitions=2)
    writer = (df.writeStream.format("lake").option("warehouse", warehouse)
              .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True))
    for k, v in options.items():
        writer = writer.option(k, v)
    query = writer.start(identifier)
    try:
        query.awaitTermination(120)
    finally:
        query.stop()


def _live_and_present_files(table) -> tuple[set[str], set[str]]:
    live = {f.file_name for s in table.plan() for f in s.files}
    present = {p.name for p in Path(table.paths.root).rglob("data-*.parquet")}
    return live, present


def test_stream_sink_commits_each_batch_exactly_once(spark, catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    table = catalog.create_table("db.events", EVENTS)
    landing, checkpoint = tmp_path / "landing", tmp_path / "checkpoint"
    marker = tmp_path / "fail-once"
    _land(landing, range(0, 10))
    _land(landing, range(10, 20))

    # 1. batch 0 commits its snapshot, then the commit call fails: Spark never logs batch 0 done
    marker.touch()
    with pytest.raises(StreamingQueryException, match="injected commit failure"):
        _run_sink(spark, landing, checkpoint, warehouse, "db.events",
                  **{"test.fail-commit": "after", "test.fail-commit-marker": str(marker)})
    assert [s.commit_identifier for s in table.snapshots()] == [0]
    user = table.latest_snapshot().commit_user
    assert user.startswith("spark-")

    # 2. the restart replays batch 0 (committed already: nothing is added) and then batch 1 fails
    #    before its snapshot
    marker.touch()
    with pytest.raises(StreamingQueryException, match="injected commit failure"):
        _run_sink(spark, landing, checkpoint, warehouse, "db.events",
                  **{"test.fail-commit": "before", "test.fail-commit-marker": str(marker)})
    assert [s.commit_identifier for s in table.snapshots()] == [0]

    # 3. the next restart commits batch 1; a new file later is batch 2, same query id throughout
    _run_sink(spark, landing, checkpoint, warehouse, "db.events")
    _land(landing, range(20, 25))
    _run_sink(spark, landing, checkpoint, warehouse, "db.events")
    snaps = table.snapshots()
    assert [s.commit_identifier for s in snaps] == [0, 1, 2]
    assert {s.commit_user for s in snaps} == {user}
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(25))
    # the replayed batch's second copy of files was deleted, not left as orphans
    live, present = _live_and_present_files(table)
    assert present - live == set()


def test_stream_sink_pk_table_routed_or_not(spark, catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    table = catalog.create_table("db.users", EVENTS, primary_keys=["id"], options={"bucket": "2"})
    landing = tmp_path / "landing"
    _land(landing, range(0, 40))
    _land(landing, range(0, 40, 2))  # same keys again: updates
    # unrouted, two tasks write the same buckets with interleaved sequence numbers
    _run_sink(spark, landing, tmp_path / "ck1", warehouse, "db.users", max_files=2, shuffle=True)
    assert len(table.snapshots()) == 1
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(40))
    _run_sink(spark, landing, tmp_path / "ck2", warehouse, "db.users", route=catalog, max_files=2)
    assert len(table.snapshots()) == 2
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(40))


def _run_source(spark, warehouse: str, checkpoint: Path, **options: str) -> tuple[list[tuple], int]:
    """One availableNow run of lake table → Parquet files (an exactly-once sink that, unlike the
    memory sink, resumes from a checkpoint): all rows delivered so far, and this run's batches."""
    out = checkpoint.with_name(checkpoint.name + "-out")
    reader = spark.readStream.format("lake").option("warehouse", warehouse)
    for k, v in options.items():
        reader = reader.option(k, v)
    stream = reader.load("db.t")
    query = (stream.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
        batches = sum(1 for p in query.recentProgress if p["numInputRows"])
    finally:
        query.stop()
    rows = [tuple(r) for r in spark.read.schema(stream.schema).parquet(str(out)).collect()]
    return sorted(rows), batches


def test_stream_source_resumes_from_checkpoint(spark, catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())]),
                                 primary_keys=["id"], options={"bucket": "2", "rowkind.field": "op"})
    table.write_arrow(pa.table({"id": range(10), "v": ["a"] * 10, "op": ["+I"] * 10}))
    checkpoint = tmp_path / "checkpoint"
    consumer = f"c{uuid.uuid4().hex[:8]}"
    opts = {"read.changelog": "true", "consumer-id": consumer, "max-files-per-trigger": "1"}

    # run 1: the initial full scan of snapshot 1 (latest-full), however many files it has
    rows, batches = _run_source(spark, warehouse, checkpoint, **opts)
    initial = [(i, "a", "+I", "+I") for i in range(10)]
    assert rows == initial
    assert batches == 1
    # not recorded at the start of a full phase (a restart before Spark's first offset must plan
    # it again: a consumer position would resume with plain changes), and Spark commits a batch's
    # end only when it starts the next one
    recorded = table.store.consumer_manager().get(consumer)
    assert recorded is None

    # more commits: an update and a delete, a compaction (no new changes), two inserts
    table.write_arrow(pa.table({"id": [1, 2], "v": ["b", "a"], "op": ["+U", "-D"]}))
    table.compact(full=True)
    table.write_arrow(pa.table({"id": [10], "v": ["c"], "op": ["+I"]}))
    table.write_arrow(pa.table({"id": [11], "v": ["c"], "op": ["+I"]}))

    # run 2 resumes after the full scan: only the changes, a batch per file
    rows, batches = _run_source(spark, warehouse, checkpoint, **opts)
    changes = [(1, "b", "+U", "+U"), (2, "a", "-D", "-D"), (10, "c", "+I", "+I"), (11, "c", "+I", "+I")]
    assert rows == sorted(initial + changes)
    assert batches == 3
    # Spark commits a batch's end when it starts the next batch: the consumer trails by one
    assert table.store.consumer_manager().get(consumer).next_snapshot == 5

    # run 3: nothing new, nothing delivered
    rows, batches = _run_source(spark, warehouse, checkpoint, **opts)
    assert rows == sorted(initial + changes)
    assert batches == 0
    assert table.store.consumer_manager().get(consumer).next_snapshot in (5, 6)

    # without read.changelog the stream is upserts only (no _row_kind, retractions dropped)
    rows, _ = _run_source(spark, warehouse, tmp_path / "ck-upsert",
                          **{"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
    assert rows == [(1, "b", "+U"), (10, "c", "+I"), (11, "c", "+I")]
    # no scan.mode: a snapshot id starts there, as Paimon's default mode (it used to be ignored)
    default, _ = _run_source(spark, warehouse, tmp_path / "ck-default", **{"scan.snapshot-id": "2"})
    assert default == rows
