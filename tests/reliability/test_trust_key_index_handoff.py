"""Trust boundary: the key index a streaming micro-batch hands the next one (issue 14, session 18).

A cross-partition table's writer leaves its key index on the executor's local disk for the
query's next micro-batch (`lake_assets.spark.key_index_cache`, `ops/key_index_handoff.py`). That
directory is storage another process wrote: each field of its ``state.json`` and its shard file is
damaged here between two real micro-batches (`write_task` and the stream writer's commit, run in
this process as a worker and the driver run them). The next micro-batch never fails on it and
never trusts it: it reads the index from the table instead, or adopts it only where the table
holds what it says, so every key stays in exactly one partition; a canary is never touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.spark.source_options import SourceOptions
from lake_assets.spark.write_task import write_task
from lake_assets.spark.writer import LakeStreamWriter

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def _state(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def damage(directory: Path) -> None:
        path = directory / "state.json"
        state = json.loads(path.read_text())
        change(state)
        path.write_text(json.dumps(state))
    return damage


def _files(change: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def damage(directory: Path) -> None:
        for p in directory.iterdir():
            if p.name != "state.json" and p.is_file():
                p.write_bytes(change(p.read_bytes()))
    return damage


DAMAGE: dict[str, Callable[[Path], None]] = {
    "none": lambda d: None,
    "state not JSON": lambda d: (d / "state.json").write_text("{"),
    "state a list": lambda d: (d / "state.json").write_text("[]"),
    "base snapshot a string": _state(lambda s: s.update(base_snapshot="x")),
    "base snapshot negative": _state(lambda s: s.update(base_snapshot=-5)),
    "base snapshot huge": _state(lambda s: s.update(base_snapshot=2**70)),
    "base snapshot of another history": _state(lambda s: s.update(base_identity="1/2/x/y/z")),
    "shards 10**9": _state(lambda s: s.update(shards=10**9)),
    "shards negative": _state(lambda s: s.update(shards=-1)),
    "bucket count 2**62": _state(lambda s: s.update(counts={p: {b: 2**62 for b in c} for p, c in s["counts"].items()})),
    "counts of strings": _state(lambda s: s.update(counts={"x": {"y": "z"}})),
    "partitions not hex": _state(lambda s: s.update(partitions=["zz"])),
    "partitions dropped": _state(lambda s: s.update(partitions=[])),
    "pending outside": _state(lambda s: s.update(pending=["../../canary"])),
    "lease position a string": _state(lambda s: s["lease"].update(next_snapshot="5")),
    "lease of another consumer": _state(lambda s: s["lease"].update(consumer_id="reader")),
    "lease id with a path": _state(lambda s: s["lease"].update(consumer_id="consumer-lake-writer-../../canary")),
    "another table": _state(lambda s: s.update(table="/elsewhere")),
    "index file cut": _files(lambda b: b[: len(b) // 2]),
    "index file garbage": _files(lambda b: b"\x00" * len(b)),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_handoff_is_never_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    handoff = tmp_path / "local"
    handoff.mkdir()
    monkeypatch.setenv("LAKE_ASSETS_SPILL_DIR", str(handoff))
    canary = tmp_path / "canary"
    canary.write_bytes(b"precious")
    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], partition_keys=["dt"], options={"bucket": "-1"})
    t.write_arrow(pa.table({"k": range(6), "dt": ["a"] * 6, "v": [0] * 6}, schema=SCHEMA))
    options = SourceOptions.parse({"path": "db.t", "warehouse": wh})
    sink = LakeStreamWriter(options, overwrite=False)

    def batch(batch_id: int, keys: list[int], dt: str) -> None:
        rows = pa.RecordBatch.from_pydict({"k": keys, "dt": [dt] * len(keys), "v": [batch_id] * len(keys)},
                                          schema=SCHEMA)
        sink.commit([write_task(options, "spark-q1", iter([rows]), keep_key_index=True)], batch_id)

    batch(1, [0, 1, 2], "b")  # keys move from a to b; the index is kept for the next micro-batch
    [kept] = [p for p in handoff.iterdir() if p.name.startswith("lake-key-index-")]
    DAMAGE[case](kept)
    batch(2, [1, 2, 3], "c")  # keys move again, one of them from a
    got = sorted(t.refresh().to_arrow().to_pylist(), key=lambda r: r["k"])
    assert got == [{"k": 0, "dt": "b", "v": 1}, {"k": 1, "dt": "c", "v": 2}, {"k": 2, "dt": "c", "v": 2},
                   {"k": 3, "dt": "c", "v": 2}, {"k": 4, "dt": "a", "v": 0}, {"k": 5, "dt": "a", "v": 0}], case
    assert canary.read_bytes() == b"precious"
    assert {c for c in t.store.consumer_manager().consumers()} <= {c for c in t.store.consumer_manager().consumers()
                                                                    if c.startswith("lake-writer-")}
