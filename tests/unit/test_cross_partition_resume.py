"""A cross-partition writer's key index handed to the next writer of the same commit user (the
next micro-batch of a streaming write, issue 14 round 4): taken where the table holds exactly
what the index says, read from the table again otherwise; the table checked against a dict model."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.ops.cross_partition import CrossPartitionRouter
from lake_assets.ops.write import TableWriter
from lake_assets.ops.writer_lease import LEASE_PREFIX
from lake_assets.spark import key_index_cache

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
Model = dict[int, tuple[str, str]]


def _table(tmp_path: Path) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                            options={"dynamic-bucket.target-row-num": "4"})


def _data(rows: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows], "dt": [r[2] for r in rows]},
                    schema=SCHEMA)


def _batch(t: Table, kept: CrossPartitionRouter | None, rows: list[tuple[int, str, str]], batch_id: int,
           model: Model | None, *, commit: bool = True) -> tuple[CrossPartitionRouter | None, bool]:
    """One micro-batch as the streaming sink writes it: a new writer of user "q" that adopts the
    kept index, writes, prepares, hands the index on, closes; committed unless not ``commit``.
    (the index handed on, whether the kept one was adopted)."""
    w = t.refresh().new_writer("q", write_only=True)
    assert isinstance(w, TableWriter)
    adopted = kept is not None and w.adopt_key_index(kept)
    try:
        w.write_arrow(_data(rows))
        messages = w.prepare_commit()
        router = w.detach_key_index()
    finally:
        w.close()
    if commit:
        t.new_committer("q").commit(messages, batch_id)
        if model is not None:
            model.update((i, (name, dt)) for i, name, dt in rows)
    return router, adopted


def _check(t: Table, model: Model) -> None:
    rows = [(r["id"], r["name"], r["dt"]) for r in t.refresh().to_arrow().to_pylist()]
    assert len(rows) == len({r[0] for r in rows}), "a key lives twice"
    assert {i: (n, dt) for i, n, dt in rows} == model


def _leases(t: Table) -> list[str]:
    return [c for c in t.refresh().store.consumer_manager().consumers() if c.startswith(LEASE_PREFIX)]


def test_the_index_is_kept_while_the_table_moves_by_the_writers_commits_only(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.write_arrow(_data([(i, "0", "a") for i in range(10)]))
    model: Model = {i: ("0", "a") for i in range(10)}
    kept, adopted = _batch(t, None, [(1, "1", "b"), (2, "1", "b"), (11, "1", "c")], 1, model)
    assert kept is not None and not adopted
    lease = _leases(t)
    for n, rows in enumerate([[(1, "2", "c"), (3, "2", "b")], [(1, "3", "a"), (12, "3", "b"), (3, "3", "a")]]):
        kept, adopted = _batch(t, kept, rows, 2 + n, model)
        assert adopted and _leases(t) == lease  # the same index, its lease moved on
    t.refresh().compact(full=True)  # a compaction moves no key: the index still holds
    kept, adopted = _batch(t, kept, [(2, "4", "c"), (4, "4", "c")], 4, model)
    assert adopted
    _check(t, model)
    assert kept is not None
    kept.close()
    assert _leases(t) == []


def test_the_index_is_read_again_after_another_writer_or_a_round_not_landed(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.write_arrow(_data([(i, "0", "a") for i in range(6)]))
    model: Model = {i: ("0", "a") for i in range(6)}
    kept, _ = _batch(t, None, [(1, "1", "b")], 1, model)
    # another writer moved key 2: the kept index does not know it
    t.refresh().write_arrow(_data([(2, "x", "c")]))
    model[2] = ("x", "c")
    kept, adopted = _batch(t, kept, [(2, "2", "b"), (1, "2", "c")], 2, model)
    assert not adopted
    # a micro-batch whose commit never landed (Spark replays it): its placements are not the table's
    kept, adopted = _batch(t, kept, [(3, "lost", "c"), (4, "lost", "b")], 3, None, commit=False)
    assert adopted
    kept, adopted = _batch(t, kept, [(3, "3", "b"), (4, "3", "c")], 3, model)
    assert not adopted
    _check(t, model)
    assert kept is not None and len(_leases(t)) == 1
    kept.close()


def test_an_index_kept_by_another_worker_is_not_taken_after_the_other_workers_micro_batch(tmp_path: Path) -> None:
    """Micro-batches of one query share the commit user but run in whichever worker is free:
    worker A keeps its index after micro-batch 0, worker B (reading the index from the table)
    writes micro-batch 1, moving keys A's index placed; A's index must not serve micro-batch 2
    (its own commit user's snapshot is not its round). It did when the commit user decided."""
    t = _table(tmp_path)
    t.write_arrow(_data([(i, "0", "a") for i in range(8)]))
    model: Model = {i: ("0", "a") for i in range(8)}
    worker_a, _ = _batch(t, None, [(i, "1", "b") for i in range(6)], 1, model)
    worker_b, _ = _batch(t, None, [(i, "2", "c") for i in range(2, 8)], 2, model)
    worker_a, adopted = _batch(t, worker_a, [(i, "3", "d") for i in range(0, 5)], 3, model)
    assert not adopted
    _check(t, model)
    # B's index is stale now too (A's micro-batch 3); an empty micro-batch's commit moves nothing
    t.new_committer("q").commit([], 4)
    worker_b, adopted = _batch(t, worker_b, [(i, "4", "a") for i in range(3, 8)], 5, model)
    assert not adopted
    worker_b, adopted = _batch(t, worker_b, [(i, "5", "b") for i in range(0, 4)], 6, model)
    assert adopted
    _check(t, model)
    for router in (worker_a, worker_b):
        assert router is not None
        router.close()


@pytest.mark.parametrize("buffer", ["256 mb", "64 kb"], ids=["in-memory", "spilled"])
def test_the_index_is_handed_over_through_the_local_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         buffer: str) -> None:
    """The streaming sink's handoff (`lake_assets.spark.key_index_cache`): each micro-batch's
    writer takes the index the previous one left on the local disk, in memory or as shards (a
    64 KiB write buffer: 32 KiB of entries in memory), with its counts, rounds and lease."""
    local = tmp_path / "local"
    local.mkdir()
    monkeypatch.setenv("LAKE_ASSETS_SPILL_DIR", str(local))
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                         options={"dynamic-bucket.target-row-num": "700", "write-buffer-size": buffer})
    t.write_arrow(_data([(i, "0", "a") for i in range(3000)]))
    model: Model = {i: ("0", "a") for i in range(3000)}
    adopted = []
    for n in range(4):
        rows = [(i, str(n + 1), "abcd"[(i + n) % 4]) for i in range(n * 300, n * 300 + 900)]
        w = t.refresh().new_writer("q", write_only=True)
        assert isinstance(w, TableWriter)
        kept = key_index_cache.take(t, "q", w.spill_dir)
        adopted.append(kept is not None and w.adopt_key_index(kept))
        try:
            w.write_arrow(_data(rows))
            messages = w.prepare_commit()
            router = w.detach_key_index()
            assert router is not None and router.index.spilled == (buffer == "64 kb")
            key_index_cache.keep(t, "q", router)
        finally:
            w.close()
        t.new_committer("q").commit(messages, n)
        model.update((i, (name, dt)) for i, name, dt in rows)
        assert len(_leases(t)) == 1
    assert adopted == [False, True, True, True]
    _check(t, model)
    left = key_index_cache.take(t, "q", None)
    assert left is not None and key_index_cache.take(t, "q", None) is None
    left.close()
    assert _leases(t) == [] and [p.name for p in local.iterdir()] == []
