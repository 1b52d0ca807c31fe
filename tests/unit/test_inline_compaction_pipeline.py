"""A writer's inline compaction of a bucket starts once that bucket is flushed, beside another
thread's flush rather than another compaction (no barrier after all flushes, issue 14), and a
failure leaves no compaction output."""

from __future__ import annotations

import threading
from datetime import timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import write as write_module
from lake_assets.ops.level0_flush import Level0Flush

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(range(200), "a"))
    return t


def test_a_failed_flush_removes_the_compaction_another_bucket_finished(table, monkeypatch) -> None:
    compacted = threading.Event()
    flushed: list[int] = []
    real_flush, real_compact = Level0Flush.flush, write_module.compact_inline

    def compact(store, base, num_buckets, key, buf, msg, **kw):
        out = real_compact(store, base, num_buckets, key, buf, msg, **kw)
        compacted.set()
        return out

    def flush(self, buf):
        real_flush(self, buf)
        flushed.append(buf.bucket)
        if len(flushed) == 2:  # the second bucket's flush fails once the first one has compacted
            compacted.wait(timeout=5)
            raise OSError("disk gone")

    monkeypatch.setattr(Level0Flush, "flush", flush)
    monkeypatch.setattr(write_module, "compact_inline", compact)
    before = table.to_arrow().sort_by("k")
    snapshots = [s.id for s in table.snapshots()]
    with pytest.raises(OSError, match="disk gone"):
        table.write_arrow(_rows(range(100, 300), "b"))
    assert compacted.is_set(), "the first bucket compacted before the second one's flush ended"
    assert [s.id for s in table.snapshots()] == snapshots
    assert table.to_arrow().sort_by("k").equals(before)
    # neither the level-0 files nor the finished bucket's compaction (its deletion vectors) remain
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


def test_a_flushed_bucket_flushes_on_while_another_compacts(tmp_path, monkeypatch) -> None:
    """Four buckets on two threads: the thread that ends its first flush while the other compacts
    starts the next flush (an encode beside the compaction's Python) rather than a second
    compaction beside the first (`ops.flush_schedule`); every bucket compacts after its flush."""
    monkeypatch.setenv("LAKE_ASSETS_CPUS", "2")
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "4", "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(range(400), "a"))
    events: list[tuple[str, int]] = []
    third_flush = threading.Event()
    real_flush, real_compact = Level0Flush.flush, write_module.compact_inline

    def flush(self, buf):
        events.append(("flush", buf.bucket))
        if sum(kind == "flush" for kind, _ in events) == 3:
            third_flush.set()
        real_flush(self, buf)
        events.append(("flushed", buf.bucket))

    def compact(store, base, num_buckets, key, buf, msg, **kw):
        events.append(("compact", buf.bucket))
        if sum(kind == "compact" for kind, _ in events) == 1:
            assert third_flush.wait(timeout=10), "the other thread did not flush on"
        return real_compact(store, base, num_buckets, key, buf, msg, **kw)

    monkeypatch.setattr(Level0Flush, "flush", flush)
    monkeypatch.setattr(write_module, "compact_inline", compact)
    t.write_arrow(_rows(range(200, 600), "b"))
    compactions = [i for i, (kind, _) in enumerate(events) if kind == "compact"]
    flushes = [i for i, (kind, _) in enumerate(events) if kind == "flush"]
    assert len(compactions) == len(flushes) == 4
    assert compactions[0] < flushes[2] < compactions[1]
    for bucket in range(4):
        assert events.index(("flushed", bucket)) < events.index(("compact", bucket))
    got = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert got == {**{k: f"a{k}" for k in range(200)}, **{k: f"b{k}" for k in range(200, 600)}}
