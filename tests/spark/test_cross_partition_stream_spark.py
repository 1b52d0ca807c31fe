"""A streaming write of a cross-partition upsert table (issue 14 round 4): each micro-batch hands
the writer's key index to the next through the executor's local disk, whichever Python worker runs
it, while the table moves by the query's own rounds only (its lease, ops/writer_lease.py, stays
the same consumer), and reads it again after another writer's commit; every micro-batch against a
dict model. (An index kept in a worker's memory missed: Spark hands tasks to its idle workers in
turn, and an index taken across workers by the commit user alone placed keys twice.)"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException

import lake_assets
from lake_assets import Catalog, Table
from lake_assets.ops.writer_lease import LEASE_PREFIX

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ORDERS = pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])


def _leases(t: Table) -> dict[str, int]:
    return {c: v.next_snapshot for c, v in t.refresh().store.consumer_manager().consumers().items()
            if c.startswith(LEASE_PREFIX)}


def _state(t: Table) -> dict[int, tuple[str, float]]:
    got = t.refresh().to_arrow().to_pylist()
    assert len(got) == len({r["order_id"] for r in got}), "a key lives twice"
    return {r["order_id"]: (r["dt"], r["amount"]) for r in got}


def test_micro_batches_keep_the_key_index_until_another_writer_commits(spark, tmp_path: Path) -> None:
    # this checkout's lake_assets (the workers' is checked by tests/spark/test_worker_imports.py)
    assert Path(lake_assets.__file__).resolve().is_relative_to(Path(__file__).resolve().parents[2])
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.cdc", ORDERS, primary_keys=["order_id"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "20"})
    table.write_arrow(pa.table({"order_id": list(range(40)), "dt": ["d1"] * 40, "amount": [0.0] * 40}, schema=ORDERS))
    model = {i: ("d1", 0.0) for i in range(40)}
    land = tmp_path / "land"
    land.mkdir()
    df = spark.readStream.schema("order_id long, dt string, amount double").parquet(str(land))
    query = (df.writeStream.format("lake").option("warehouse", wh)
             .option("checkpointLocation", str(tmp_path / "ck")).start("db.cdc"))
    leases = []
    try:
        for n, (ids, dt) in enumerate([(range(0, 15), "d2"), (range(10, 25), "d3"), (range(5, 12), "d1"),
                                       (range(20, 30), "d2")]):
            if n == 3:  # another writer moves keys the next micro-batch moves again
                table.refresh().write_arrow(pa.table({"order_id": [20, 21], "dt": ["d9", "d9"],
                                                      "amount": [9.0, 9.0]}, schema=ORDERS))
                model.update({20: ("d9", 9.0), 21: ("d9", 9.0)})
            rows = pa.table({"order_id": list(ids), "dt": [dt] * len(ids),
                             "amount": [float(100 * (n + 1) + i) for i in ids]}, schema=ORDERS)
            pq.write_table(rows, land / f"part-{n}.parquet")
            query.processAllAvailable()
            model.update({i: (dt, float(100 * (n + 1) + i)) for i in ids})
            assert _state(table) == model, f"micro-batch {n}"
            leases.append(_leases(table))
    finally:
        query.stop()
    # one lease, the same index for the first three micro-batches, its lease moved with its commits;
    # a new index (and lease) after the other writer's commit
    assert [len(x) for x in leases] == [1, 1, 1, 1]
    ids = [next(iter(x)) for x in leases]
    assert ids[0] == ids[1] == ids[2] != ids[3]
    assert leases[0][ids[0]] < leases[1][ids[0]] < leases[2][ids[0]]


def _files(t: Table) -> tuple[set[str], set[str]]:
    """(data files the latest snapshot references, data files in the table's directory)."""
    live = {f.file_name for s in t.refresh().plan() for f in s.files}
    return live, {p.name for p in Path(t.paths.root).rglob("data-*.parquet")}


def test_a_lost_micro_batch_is_written_again_and_only_an_unknown_outcome_leaves_its_files(
        spark, tmp_path: Path) -> None:
    """Micro-batch 1's commit is refused before its snapshot (known not landed): its files are
    deleted, and the index the task kept holds that lost round, so the replay's task does not
    adopt it (it checks before writing: `CrossPartitionRouter.resume`) and reads the table again;
    no commit refuses. Micro-batch 2's commit ends with an unknown outcome: Spark's abort keeps its
    files (a snapshot could still reference them), the replay lands, and orphan removal deletes
    them. The table follows a dict model of the landed micro-batches throughout."""
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.cdc", ORDERS, primary_keys=["order_id"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "20"})
    table.write_arrow(pa.table({"order_id": list(range(20)), "dt": ["d1"] * 20, "amount": [0.0] * 20}, schema=ORDERS))
    model = {i: ("d1", 0.0) for i in range(20)}
    land, marker = tmp_path / "land", tmp_path / "fail-once"
    land.mkdir()

    def run(**options: str) -> None:  # one availableNow run of the query from its checkpoint
        df = spark.readStream.schema("order_id long, dt string, amount double").option(
            "maxFilesPerTrigger", 1).parquet(str(land))
        writer = (df.writeStream.format("lake").option("warehouse", wh)
                  .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True))
        for k, v in options.items():
            writer = writer.option(k, v)
        query = writer.start("db.cdc")
        try:
            query.awaitTermination(120)
        finally:
            query.stop()

    def micro_batch(n: int, ids: range, dt: str) -> None:
        rows = pa.table({"order_id": list(ids), "dt": [dt] * len(ids),
                         "amount": [float(100 * n + i) for i in ids]}, schema=ORDERS)
        pq.write_table(rows, land / f"part-{n}.parquet")

    def landed(n: int, ids: range, dt: str) -> None:
        model.update({i: (dt, float(100 * n + i)) for i in ids})

    def fail(point: str) -> dict[str, str]:
        marker.touch()
        return {"test.fail-commit": point, "test.fail-commit-marker": str(marker)}

    micro_batch(0, range(0, 8), "d2")
    run()
    landed(0, range(0, 8), "d2")
    assert _state(table) == model
    (first_lease,) = _leases(table)

    micro_batch(1, range(4, 12), "d3")  # moves keys the kept index placed in d2
    with pytest.raises(StreamingQueryException, match="injected commit failure before"):
        run(**fail("before"))
    live, present = _files(table)
    assert present == live and _state(table) == model  # the refused micro-batch left nothing
    run()  # the replay: the kept index holds the lost round, so it is read again (a new lease)
    landed(1, range(4, 12), "d3")
    assert _state(table) == model
    assert list(_leases(table)) != [first_lease] and len(_leases(table)) == 1

    micro_batch(2, range(10, 16), "d1")
    with pytest.raises(StreamingQueryException, match="outcome of the snapshot put unknown"):
        run(**fail("unknown"))
    live, present = _files(table)
    in_doubt = present - live
    assert in_doubt and _state(table) == model  # not landed, and its files kept
    run()
    landed(2, range(10, 16), "d1")
    assert _state(table) == model
    live, present = _files(table)
    assert in_doubt <= present - live
    table.refresh().remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    live, present = _files(table)
    assert present == live and _state(table) == model
