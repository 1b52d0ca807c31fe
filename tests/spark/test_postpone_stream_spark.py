"""The Spark streaming source (``spark.readStream.format("lake")``) on postpone-bucket tables
(``bucket = -2``): the same changes as the core's streams (ops/stream_postpone.py), from a
checkpoint and a consumer id across runs. Paimon Java 0.9 predates postpone tables; the semantics
are those of Paimon 1.2+'s stream scans (tests/unit/test_postpone_stream.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])


def _rows(*items: tuple[int, str, str]) -> pa.Table:
    return pa.table({"id": [i[0] for i in items], "v": [i[1] for i in items], "op": [i[2] for i in items]},
                    schema=SCHEMA)


def _run(spark, warehouse: str, name: str, checkpoint: Path, **options: str) -> list[tuple]:
    """One availableNow run of the lake source into Parquet files: every row delivered so far."""
    out = checkpoint.with_name(checkpoint.name + "-out")
    reader = spark.readStream.format("lake").option("warehouse", warehouse)
    for k, v in options.items():
        reader = reader.option(k, v)
    stream = reader.load(name)
    query = (stream.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
    finally:
        query.stop()
    return sorted(tuple(r) for r in spark.read.schema(stream.schema).parquet(str(out)).collect())


def test_stream_source_follows_postponed_commits_and_compactions(spark, catalog: Catalog, warehouse: str,
                                                                 tmp_path: Path) -> None:
    """changelog-producer none: the full phase holds the rows waiting in bucket-postpone (as
    written, with their kinds), each later commit comes as written and the compaction adds
    nothing. lookup: nothing until the compaction, then its changelog."""
    none = catalog.create_table("db.n", SCHEMA, primary_keys=["id"],
                                options={"bucket": "-2", "rowkind.field": "op"})
    lookup = catalog.create_table("db.l", SCHEMA, primary_keys=["id"],
                                  options={"bucket": "-2", "rowkind.field": "op", "changelog-producer": "lookup"})
    for t in (none, lookup):
        t.write_arrow(_rows((1, "a", "+I"), (2, "a", "+I"), (1, "b", "+U")))
        t.write_arrow(_rows((2, "a", "-D"), (3, "a", "+I")))
    consumer = f"c{uuid.uuid4().hex[:8]}"
    opts = {"read.changelog": "true", "consumer-id": consumer}

    # run 1 (latest-full): none's full phase is what waits, as written; lookup's real buckets are empty
    first = [(1, "a", "+I", "+I"), (1, "b", "+U", "+U"), (2, "a", "+I", "+I"), (2, "a", "-D", "-D"),
             (3, "a", "+I", "+I")]
    assert _run(spark, warehouse, "db.n", tmp_path / "ck-n", **opts) == sorted(first)
    assert _run(spark, warehouse, "db.l", tmp_path / "ck-l", **opts) == []

    for t in (none, lookup):
        t.compact()
        t.write_arrow(_rows((3, "b", "+I"), (4, "a", "+I")))
        t.compact()
    # run 2 resumes from the checkpoint: none emits only the new commit (COMPACT snapshots add
    # nothing), lookup the changelog of both compactions
    later = [(3, "b", "+I", "+I"), (4, "a", "+I", "+I")]
    assert _run(spark, warehouse, "db.n", tmp_path / "ck-n", **opts) == sorted(first + later)
    # (columns: id, v, the op column as written, _row_kind)
    assert _run(spark, warehouse, "db.l", tmp_path / "ck-l", **opts) == sorted([
        (1, "b", "+U", "+I"), (3, "a", "+I", "+I"),    # the first compaction: new keys
        (3, "a", "+I", "-U"), (3, "b", "+I", "+U"), (4, "a", "+I", "+I"),  # the second
    ])
    # the consumer id stored where each stream is (Spark commits a batch's end when it starts the next)
    assert none.store.consumer_manager().get(consumer) is not None

    # without read.changelog: upserts only, retractions dropped (here the -D of the full phase)
    upserts = _run(spark, warehouse, "db.n", tmp_path / "ck-upserts", **{"scan.mode": "from-snapshot",
                                                                           "scan.snapshot-id": "1"})
    assert upserts == sorted([(1, "a", "+I"), (2, "a", "+I"), (1, "b", "+U"), (3, "a", "+I"),
                              (3, "b", "+I"), (4, "a", "+I")])


def test_latest_full_with_a_consumer_id_reads_the_full_state(spark, catalog: Catalog, warehouse: str,
                                                              tmp_path: Path) -> None:
    """Any table: Spark asks for the initial offset twice (availableNow); the second answer used
    to resume from the consumer position the first had recorded, so a stream started with a
    consumer id read the latest snapshot's delta instead of the full state (key 1 was lost)."""
    table = catalog.create_table("db.f", SCHEMA, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"})
    table.write_arrow(_rows((1, "a", "+I"), (2, "a", "+I"), (1, "b", "+U")))
    table.write_arrow(_rows((2, "a", "-D"), (3, "a", "+I")))
    rows = _run(spark, warehouse, "db.f", tmp_path / "ck", **{"read.changelog": "true",
                                                               "consumer-id": f"c{uuid.uuid4().hex[:8]}"})
    # key 1 is merged from two level-0 records; its newest is +U and the full phase keeps the
    # merged kind as Paimon Java's reader does (tests/differential/test_stream_full_phase_kinds.py)
    assert rows == [(1, "b", "+U", "+U"), (3, "a", "+I", "+I")]


def test_a_query_that_died_before_its_first_batch_restarts_with_the_full_phase(catalog: Catalog,
                                                                                 warehouse: str) -> None:
    """A stream with a consumer id whose first query died before Spark wrote its first offset:
    the restart must plan the full phase again. The source used to record the consumer when it
    answered the initial offset, so the restart resumed from that position as plain changes and
    read only the latest snapshot's delta (Paimon's consumers move at checkpoints only)."""
    from lake_assets.spark.datasource import LakeDataSource

    table = catalog.create_table("db.r", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    table.write_arrow(_rows((1, "a", "+I"), (2, "a", "+I")))
    table.write_arrow(_rows((3, "a", "+I")))
    options = {"path": "db.r", "warehouse": warehouse, "consumer-id": "dies-early", "scan.mode": "latest-full"}

    def initial() -> dict:
        source = LakeDataSource(options)
        return source.streamReader(source.schema()).initialOffset()

    first = initial()
    assert first["full"]
    assert initial() == first  # the dead query left nothing that changes where a restart starts
