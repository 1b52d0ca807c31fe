"""What building a commit's index manifest costs: per change, not per change and index file (a
commit of many buckets over a large index, e.g. a dynamic-bucket ingest or a deletion-vector
compaction across many partitions)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import index_commit
from lake_assets.spec.manifest import IndexManifestEntry

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def test_the_index_manifest_of_a_commit_of_many_buckets_costs_per_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    # one key per bucket: every key is a bucket with a hash index file of its own
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"],
                         options={"dynamic-bucket.target-row-num": "1", "write-only": "true"})
    t.write_arrow(pa.table({"id": list(range(200)), "v": ["a"] * 200}, schema=SCHEMA))
    w = t.new_writer("w", write_only=True)
    w.write_arrow(pa.table({"id": list(range(200, 300)), "v": ["b"] * 100}, schema=SCHEMA))
    messages = w.prepare_commit()
    assert len(messages) == 100
    calls = 0
    real = index_commit._identity

    def counting(e: IndexManifestEntry) -> tuple[bytes, int, str, str]:
        nonlocal calls
        calls += 1
        return real(e)

    monkeypatch.setattr(index_commit, "_identity", counting)
    t.new_committer("w").commit(messages, 1)
    # a look per index file and per file a change names (300 here); a scan of the index per change ~25,000
    assert calls < 1_000, calls
    assert len(t.store.index_entries(t.latest_snapshot().index_manifest)) == 300
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(300))


def test_an_index_manifest_a_commit_wrote_is_not_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next commit and the next writer's restore start from the index manifest the last commit
    wrote: it is taken as written, not read back and decoded (a deletion-vector upsert round)."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"id": list(range(100)), "v": ["a"] * 100}, schema=SCHEMA))
    read: list[str] = []
    real = type(t.store.file_io).read_bytes

    def spy(self, path: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(path)
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(type(t.store.file_io), "read_bytes", spy)
    for round_ in range(3):
        t.write_arrow(pa.table({"id": list(range(50, 150)), "v": [f"b{round_}"] * 100}, schema=SCHEMA))
    assert [p for p in read if "/manifest/index-manifest-" in p] == []
    monkeypatch.undo()
    latest = t.latest_snapshot()
    assert latest.index_manifest is not None
    fresh = Catalog(str(tmp_path / "wh")).get_table("db.t")  # what was cached is what is stored
    assert fresh.store.index_entries(latest.index_manifest) == t.store.index_entries(latest.index_manifest)
    assert sorted(t.to_arrow().column("v").to_pylist()) == ["a"] * 50 + ["b2"] * 100
