"""Decoded deletion-vector index files are cached per process (they are immutable), bounded by
bytes, and never served to a table directory created again under the same root."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyroaring import BitMap

from lake_assets import Catalog
from lake_assets.ops.deletion_vector_cache import INDEX_FILE_CACHE, IndexFileCache
from lake_assets.ops.deletion_vectors import snapshot_index

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
N = 20_000  # base rows: small updates then compact into it with deletion vectors, not by rewriting it


def _dv_table(catalog: Catalog, updates: list[range]):
    t = catalog.create_table("db.dv", SCHEMA, primary_keys=["k"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true",
                                      "num-sorted-run.compaction-trigger": "3"})
    t.write_arrow(pa.table({"k": pa.array(range(N), pa.int64()), "v": ["a"] * N}))
    t.compact(full=True)
    for i, keys in enumerate(updates):
        t.write_arrow(pa.table({"k": pa.array(keys, pa.int64()), "v": [f"u{i}"] * len(keys)}))
        # compacted at commit (trigger 3): the updated rows' old positions become deletion vectors
    assert snapshot_index(t.store, t.latest_snapshot()), "no deletion vectors were written: the test proves nothing"
    return t


def _index_reads(t, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    original = t.store.file_io.read_bytes

    def read_bytes(path: str, *a, **kw):
        if "/index/" in path:
            reads.append(path)
        return original(path, *a, **kw)

    monkeypatch.setattr(t.store.file_io, "read_bytes", read_bytes)
    return reads


def test_repeated_reads_decode_each_index_file_once(catalog: Catalog, monkeypatch: pytest.MonkeyPatch):
    t = _dv_table(catalog, [range(j, N, 701) for j in range(6)])
    INDEX_FILE_CACHE.clear()
    reads = _index_reads(t, monkeypatch)
    first = t.to_arrow().sort_by("k")
    files = len(reads)
    assert files > 0
    for _ in range(3):
        assert t.to_arrow().sort_by("k").equals(first)
    assert len(reads) == files  # later reads (a new loader each) are served from the cache
    assert first["v"].to_pylist() == [f"u{k % 701}" if k % 701 < 6 else "a" for k in range(N)]


def test_a_table_created_again_under_the_same_root_reads_its_own_vectors(tmp_path: Path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    before = _dv_table(cat, [range(0, N, 400)] * 4).to_arrow()
    cat.drop_table("db.dv")
    again = _dv_table(cat, [range(1, N, 400)] * 4).to_arrow()
    assert {(r["k"] % 400, r["v"]) for r in before.to_pylist() if r["v"] != "a"} == {(0, "u3")}
    assert {(r["k"] % 400, r["v"]) for r in again.to_pylist() if r["v"] != "a"} == {(1, "u3")}


def test_the_cache_is_bounded_by_bytes_least_recently_used_first():
    cache = IndexFileCache(max_bytes=100)
    cache.put(("/t", "index-a", 40), {"f": BitMap([1])}, 40)
    cache.put(("/t", "index-b", 40), {"f": BitMap([2])}, 40)
    assert cache.get(("/t", "index-a", 40)) is not None  # a is now the most recently used
    cache.put(("/t", "index-c", 40), {"f": BitMap([3])}, 40)
    assert cache.get(("/t", "index-b", 40)) is None
    assert cache.get(("/t", "index-a", 40)) is not None and cache.nbytes == 80
    cache.put(("/t", "index-huge", 101), {"f": BitMap([4])}, 101)  # larger than the bound: not kept
    assert cache.get(("/t", "index-huge", 101)) is None and cache.nbytes == 80
