"""A writer's inline compaction of a bucket starts as soon as that bucket is flushed, on the same
thread (no barrier after all flushes, issue 14), and a failure leaves no compaction output."""

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


def test_each_bucket_compacts_on_the_thread_that_flushed_it(table, monkeypatch) -> None:
    threads: dict[tuple[str, int], str] = {}
    real_flush, real_compact = Level0Flush.flush, write_module.compact_inline

    def flush(self, buf):
        threads[("flush", buf.bucket)] = threading.current_thread().name
        real_flush(self, buf)

    def compact(store, base, num_buckets, key, buf, msg, **kw):
        threads[("compact", buf.bucket)] = threading.current_thread().name
        return real_compact(store, base, num_buckets, key, buf, msg, **kw)

    monkeypatch.setattr(Level0Flush, "flush", flush)
    monkeypatch.setattr(write_module, "compact_inline", compact)
    table.write_arrow(_rows(range(100, 300), "b"))
    assert {b for _, b in threads} == {0, 1}
    for bucket in (0, 1):
        assert threads[("compact", bucket)] == threads[("flush", bucket)]
    got = {r["k"]: r["v"] for r in table.to_arrow().to_pylist()}
    assert got == {**{k: f"a{k}" for k in range(100)}, **{k: f"b{k}" for k in range(100, 300)}}
