"""The writer's memory follows ``write-buffer-size``: flushes by buffered bytes, and buffered bytes
are the Arrow memory the buffer really holds. Counts and bytes only, never wall-clock."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.write import TableWriter

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string()), ("x", pa.float64())])
KiB = 1024


def _data(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n)
    return pa.table({"id": ids, "p": pa.array([f"p{i % 5}" for i in range(n)]),
                     "v": pa.array([f"value-{i:08d}" for i in ids]), "x": ids * 0.5}, schema=SCHEMA)


def _table(tmp_path, buffer: str, name: str = "t", **extra: str):
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    return cat.create_table(f"db.{name}", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                            options={"bucket": "2", "write-only": "true", "write-buffer-size": buffer, **extra})


def _count_flushes(monkeypatch) -> list[int]:
    """Buffered bytes at each flush the buffer triggered (prepare_commit's final flush excluded)."""
    seen: list[int] = []
    original = TableWriter.flush

    def flush(self: TableWriter) -> None:
        seen.append(self.buffered_bytes)
        original(self)

    monkeypatch.setattr(TableWriter, "flush", flush)
    return seen


@pytest.mark.parametrize("buffer_kib", [128, 512])
def test_flushes_follow_the_configured_buffer(tmp_path, monkeypatch, buffer_kib):
    t = _table(tmp_path, f"{buffer_kib} kb")
    batches = [_data(5_000, i * 5_000) for i in range(12)]
    total = sum(b.nbytes for b in batches)
    seen = _count_flushes(monkeypatch)
    w = t.new_writer("u")
    for b in batches:
        w.write_arrow(b)
    by_buffer = list(seen)
    w.prepare_commit()
    buffer = buffer_kib * KiB
    # every flush the buffer triggered came once it was full, and before it overshot by more
    # than the half-buffer slice the router adds at a time
    assert by_buffer and all(buffer <= b <= 1.5 * buffer + 64 * KiB for b in by_buffer)
    # so the number of flushes is set by the buffer: about total / buffer
    assert total / (1.5 * buffer + 64 * KiB) - 1 <= len(by_buffer) <= total / buffer
    # and every flushed byte was accounted (the final flush takes what is left)
    assert w.buffered_bytes == 0


def test_a_bigger_buffer_means_fewer_level0_files(tmp_path):
    counts = {}
    for name, buffer in (("small", "128 kb"), ("big", "1 mb")):
        # without spilling each buffer fill is a level-0 file (with it, one per bucket: test_write_spill)
        t = _table(tmp_path, buffer, name, **{"write-buffer-spillable": "false"})
        t.write_arrow(pa.concat_tables([_data(5_000, i * 5_000) for i in range(12)]))
        counts[name] = sum(len(s.files) for s in t.plan())
    assert counts["small"] >= 4 * counts["big"]


def test_buffered_bytes_are_the_arrow_memory_the_buffer_holds(tmp_path):
    t = _table(tmp_path, "256 mb")  # never fills: everything stays buffered
    data = _data(60_000)
    w = t.new_writer("u")
    before = pa.total_allocated_bytes()
    w.write_arrow(data)
    held = pa.total_allocated_bytes() - before
    assert w.buffered_bytes > 0
    # the buffer keeps one sorted copy of the rows (plus the two system columns), not more
    assert 0.7 * w.buffered_bytes <= held <= 1.3 * w.buffered_bytes + 256 * KiB
    w.close()
    assert w.buffered_bytes == 0
