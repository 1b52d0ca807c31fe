"""A deletion-vector compaction's index file is cached as written (issue 14): the bucket's next
inline compaction starts from its vectors without reading the file back, and gets the same
vectors a fresh process decodes from storage."""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.deletion_vector_cache import INDEX_FILE_CACHE
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def test_the_next_compaction_does_not_read_back_the_index_files_the_last_one_wrote(tmp_path, monkeypatch) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    INDEX_FILE_CACHE.clear()
    t.write_arrow(_rows(range(1000), "a"))
    read: list[str] = []
    io_type = type(t.store.file_io)
    real = io_type.read_bytes

    def spy(self, path: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(path)
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(io_type, "read_bytes", spy)
    for round_ in range(3):  # each round's compaction marks rows of the files the last one wrote
        t.write_arrow(_rows(range(round_ * 100, round_ * 100 + 300), f"b{round_}"))
    monkeypatch.undo()
    assert [p for p in read if "/index/index-" in p] == []
    expected = {k: "a" + str(k) for k in range(1000)}
    for round_ in range(3):
        expected.update({k: f"b{round_}{k}" for k in range(round_ * 100, round_ * 100 + 300)})
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    # what was cached is what is stored: a cold cache decodes the same vectors
    entries = [e for es in snapshot_index(t.store, t.latest_snapshot()).values() for e in es]
    assert entries
    cached = VectorLoader(t.store).vectors(entries)
    INDEX_FILE_CACHE.clear()
    fresh = Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert VectorLoader(fresh.store).vectors(entries) == cached
