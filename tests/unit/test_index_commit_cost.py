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
