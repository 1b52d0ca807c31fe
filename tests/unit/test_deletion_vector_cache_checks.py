"""The process-wide cache of deletion-vector index files never answers differently from a fresh
process: a cached file is checked on storage once per read (exists, size as its index manifest
records it), so an expired snapshot's vectors and a damaged file fail as a fresh read fails."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import ConcurrentMaintenanceError, CorruptMetadataError, LakeError
from lake_assets.ops.deletion_vector_cache import INDEX_FILE_CACHE
from lake_assets.ops.deletion_vectors import snapshot_index
from lake_assets.ops.read import SplitReader
from lake_assets.table import Table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
N = 5_000


def _dv_table(catalog: Catalog) -> Table:
    """One bucket: a base file at the top level, then updates compacted at commit into
    deletion vectors on it (the base file stays live while its index file is replaced)."""
    t = catalog.create_table("db.dv", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true",
                                      "num-sorted-run.compaction-trigger": "2"})
    t.write_arrow(pa.table({"k": pa.array(range(N), pa.int64()), "v": ["a"] * N}))
    t.compact(full=True)
    return t


def _update(t: Table, start: int, tag: str) -> None:
    keys = list(range(start, N, 97))
    t.write_arrow(pa.table({"k": pa.array(keys, pa.int64()), "v": [tag] * len(keys)}))


def _error(read: Callable[[], Any]) -> LakeError:
    with pytest.raises(LakeError) as info:
        read()
    return info.value


def test_a_read_of_an_expired_snapshot_fails_alike_cached_or_fresh(catalog: Catalog) -> None:
    t = _dv_table(catalog)
    _update(t, 0, "u0")
    old = t.latest_snapshot()
    assert snapshot_index(t.store, old), "no deletion vectors were written: the test proves nothing"
    splits = t.plan(snapshot=old)
    (split,) = splits
    base = max(split.files, key=lambda f: f.level)  # the base file: live in every later snapshot
    INDEX_FILE_CACHE.clear()
    first = SplitReader(t.store, t.schema)
    first.snapshot_id = old.id
    assert first.read_file(split, base, False).num_rows < N  # its vector applied, and now cached
    for i in range(1, 4):  # each compaction writes the bucket's vectors into a new index file
        _update(t, i, f"u{i}")
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert not t.snapshot_manager.exists(old.id)
    assert os.path.exists(t.store.data_file_path(split.partition, split.bucket, base))
    gone = [e.file_name for e in split.dv_entries]
    assert not any(os.path.exists(t.store.paths.index_file(n)) for n in gone)

    def read() -> None:
        reader = SplitReader(t.store, t.schema)  # a new read of the old plan
        reader.snapshot_id = old.id
        reader.read_file(split, base, False)

    cached = _error(read)
    INDEX_FILE_CACHE.clear()
    fresh = _error(read)  # as a fresh process: nothing cached
    assert isinstance(cached, ConcurrentMaintenanceError)
    assert (type(cached), str(cached)) == (type(fresh), str(fresh))


def _damage(t: Table, change: Callable[[bytes], bytes]) -> None:
    for entries in snapshot_index(t.store, t.latest_snapshot()).values():
        for e in entries:
            path = Path(t.store.paths.index_file(e.file_name))
            path.write_bytes(change(path.read_bytes()))


@pytest.mark.parametrize("change", [lambda b: b[:-3], lambda b: b + b"\x00"], ids=["truncated", "appended"])
def test_a_damaged_index_file_fails_alike_cached_or_fresh(catalog: Catalog, change: Callable[[bytes], bytes]) -> None:
    t = _dv_table(catalog)
    _update(t, 0, "u0")
    INDEX_FILE_CACHE.clear()
    t.to_arrow()  # caches the index file
    _damage(t, change)
    cached = _error(t.to_arrow)
    INDEX_FILE_CACHE.clear()
    fresh = _error(t.to_arrow)
    assert isinstance(cached, CorruptMetadataError)
    assert (type(cached), str(cached)) == (type(fresh), str(fresh))
    assert "index manifest records" in str(cached)


def test_a_cached_index_file_is_checked_once_per_read(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _dv_table(catalog)
    _update(t, 0, "u0")
    INDEX_FILE_CACHE.clear()
    expected = t.to_arrow().sort_by("k")
    sizes: list[str] = []
    original = t.store.file_io.size

    def size(path: str) -> int:
        if "/index/" in path:
            sizes.append(path)
        return original(path)

    monkeypatch.setattr(t.store.file_io, "size", size)
    assert t.to_arrow().sort_by("k").equals(expected)
    files = sum(len(v) for v in snapshot_index(t.store, t.latest_snapshot()).values())
    assert len(sizes) == files  # one check per index file, however many data files it covers
