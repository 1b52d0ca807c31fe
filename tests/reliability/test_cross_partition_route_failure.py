"""A cross-partition upsert write failing after its rows were routed, before they were buffered
(issue 14 round 4): the batch's placements must not survive in the writer's key index, or its
next batch retracts a moved key where the table never had it and leaves it live twice. A real
full disk while the index spills (a small tmpfs), and an interrupt at the step between routing and
buffering; the same writer then goes on, and the table is checked against a dict model."""

from __future__ import annotations

import contextlib
import errno
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.ops.write import TableWriter
from tests.reliability.tmpfs import small_tmpfs

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
Model = dict[int, tuple[str, str]]


def _table(tmp_path: Path, engine: str, **options: str) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                            options={"merge-engine": engine, "dynamic-bucket.target-row-num": "500", **options})


def _rows(ids: range | list[int], name: str, dt: str) -> list[tuple[int, str, str]]:
    return [(i, name, dt) for i in ids]


def _write(w: TableWriter, model: Model | None, rows: list[tuple[int, str, str]], engine: str) -> None:
    """Write ``rows``; apply them to ``model`` (None: the write is expected to fail first)."""
    w.write_arrow(pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows], "dt": [r[2] for r in rows]},
                           schema=SCHEMA))
    assert model is not None
    for i, name, dt in rows:
        # deduplicate: a key moves to its row's partition; partial-update: it stays where it lives
        model[i] = (name, dt if engine == "deduplicate" or i not in model else model[i][1])


def _check(t: Table, model: Model) -> None:
    rows = [(r["id"], r["name"], r["dt"]) for r in t.refresh().to_arrow().to_pylist()]
    assert len(rows) == len({r[0] for r in rows}), "a key lives twice"
    assert {i: (name, dt) for i, name, dt in rows} == model


def _fill(path: Path) -> None:
    with contextlib.suppress(OSError), open(path, "wb") as fh:
        while True:
            fh.write(b"\0" * 4096)
            fh.flush()


def test_a_full_disk_while_the_key_index_spills_leaves_no_placement(tmp_path: Path) -> None:
    """The writer's index lives in shard files on a small tmpfs (write-buffer-size 128 KiB: 64 KiB
    of entries in memory); the disk fills, and a batch's placements pass a quarter of that, so
    merging them into the shards fails with ENOSPC. Before, the entries stayed added in memory
    and a shard rewritten in place was left cut short: the next batch retracted moved keys where
    the table never had them (two live rows), or took lost keys for new ones."""
    engine = "deduplicate"
    t = _table(tmp_path, engine, **{"write-buffer-size": "128 kb"})
    model: Model = {}
    t.write_arrow(pa.table({"id": list(range(3000)), "name": ["v0"] * 3000, "dt": ["a"] * 3000}, schema=SCHEMA))
    model.update((i, ("v0", "a")) for i in range(3000))
    with small_tmpfs(tmp_path / "tmpfs", "1m") as disk:
        w = t.refresh().new_writer("w", spill_dir=str(disk))
        assert isinstance(w, TableWriter)
        try:
            _write(w, model, _rows(range(100), "v1", "b"), engine)
            router = w._router.cross_router
            assert router is not None and router.index.spilled
            t.new_committer("w").commit(w.prepare_commit(), 1)
            filler = disk / f"filler-{uuid.uuid4().hex}"
            _fill(filler)
            with pytest.raises(OSError) as failed:
                # moves, and new keys: the shards grow (rewritten in place, moves alone fitted again)
                _write(w, None, _rows(range(1000), "lost", "c") + _rows(range(5000, 6500), "lost", "c"), engine)
            assert failed.value.errno == errno.ENOSPC  # really
            filler.unlink()
            _write(w, model, _rows(range(200), "v2", "d") + _rows(range(500, 600), "v2", "b")
                   + _rows(range(2500, 2550), "v2", "b"), engine)
            t.new_committer("w").commit(w.prepare_commit(), 2)
        finally:
            w.close()
        assert list(disk.iterdir()) == []
    _check(t, model)


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_an_interrupt_between_routing_and_buffering_leaves_no_placement(tmp_path: Path, engine: str) -> None:
    """Ctrl-C at the step after the batch was routed (``write.cross_partition_routed``): its
    moves (deduplicate) and new keys (partial-update: a new key's home is its first partition)
    are taken back, and the bucket counts with them."""
    t = _table(tmp_path, engine)
    model: Model = {}
    with t.refresh().new_writer("w") as w:
        assert isinstance(w, TableWriter)
        _write(w, model, _rows(range(20), "v0", "a"), engine)
        t.new_committer("w").commit(w.prepare_commit(), 1)

        def interrupt(step: str) -> None:
            if step == "write.cross_partition_routed":
                raise KeyboardInterrupt

        w.store.fault_hook = interrupt
        with pytest.raises(KeyboardInterrupt):
            _write(w, None, _rows(range(10), "lost", "b") + _rows(range(20, 30), "lost", "c"), engine)
        w.store.fault_hook = None
        assert w.buffered_bytes == 0
        router = w._router.cross_router
        assert router is not None
        assert {p: c for p, c in router.counts.items() if any(c.values())} == {0: {0: 20}}
        _write(w, model, _rows(range(5), "v1", "d") + _rows(range(25, 28), "v1", "d"), engine)
        t.new_committer("w").commit(w.prepare_commit(), 2)
    _check(t, model)
