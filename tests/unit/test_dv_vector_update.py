"""How a deletion-vector compaction adds its marks (`ops.dv_compact.VectorUpdate`, issue 14): into
a copy of each looked-up file's old vector (the cached one is shared with readers and never
changed), run-optimized before it is written as Java's ``RoaringBitmap32.serialize`` does, and
`add_positions` checks positions as `new_vector` does."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index
from lake_assets.spec.deletion_vector import MAX_POSITION, add_positions, read_vector

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def _stored_vectors(table) -> dict[str, BitMap]:  # type: ignore[no-untyped-def]
    """Each data file's vector as the latest snapshot's index files store it (bytes decoded)."""
    out = {}
    for entries in snapshot_index(table.store, table.latest_snapshot()).values():
        for e in entries:
            data = table.store.file_io.read_bytes(table.store.paths.index_file(e.file_name))
            for rng in e.dv_ranges or ():
                out[rng.data_file] = read_vector(data, rng, e.file_name)
    return out


def test_marks_go_into_a_copy_of_the_old_vector_and_are_stored_run_optimized(tmp_path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true",
                                  # the top file keeps its vector (not rewritten at 25% or 60% deleted)
                                  "compaction.delete-ratio-threshold": "0.99"})
    t.write_arrow(_rows(range(20_000), "a"))  # one top file, rows in key order
    t.write_arrow(_rows(range(0, 10_000, 2), "b"))  # marks the even rows 0..9998 of the top file
    entries = [e for es in snapshot_index(t.store, t.latest_snapshot()).values() for e in es]
    shared = VectorLoader(t.store).vectors(entries)  # the cached objects the next round starts from
    (top,) = [name for name, v in shared.items() if len(v) == 5000]
    before = {name: BitMap(v) for name, v in shared.items()}
    t.write_arrow(_rows(range(1, 10_000, 2), "c"))  # ... and the odd ones: every row 0..9999
    assert {name: BitMap(v) for name, v in shared.items()} == before, "a cached vector was changed in place"
    stored = _stored_vectors(t)
    assert stored[top] == BitMap(range(10_000))
    # the union of old and new marks is stored as Java stores it (runOptimize before serialize):
    # one run container, not the bitset container the union of two bitsets makes
    expected = BitMap(range(10_000))
    expected.run_optimize()
    assert stored[top].get_statistics()["n_run_containers"] == 1
    assert stored[top].serialize() == expected.serialize()
    got = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert [got[k] for k in (0, 1, 9998, 9999, 10_000)] == ["b0", "c1", "b9998", "c9999", "a10000"]


def test_add_positions_checks_like_new_vector_and_changes_nothing_on_refusal() -> None:
    vector = BitMap([1, 2])
    add_positions(vector, np.array([7, 3, 3], dtype=np.int64), "f.parquet")
    assert vector == BitMap([1, 2, 3, 7])
    with pytest.raises(InvalidDataError, match=r"-1 of f\.parquet is negative"):
        add_positions(vector, np.array([5, -1], dtype=np.int64), "f.parquet")
    with pytest.raises(UnsupportedFeatureError, match="does not fit"):
        add_positions(vector, np.array([MAX_POSITION + 1], dtype=np.int64), "f.parquet")
    assert vector == BitMap([1, 2, 3, 7])
    add_positions(vector, np.empty(0, dtype=np.int64))
    assert vector == BitMap([1, 2, 3, 7])


def test_a_relabelling_unit_builds_no_reader_and_a_rewriting_one_builds_one(tmp_path, monkeypatch) -> None:
    """A unit that relabels a level-0 file whose keys the writer cached reads no row: its
    `SplitReader` (the schema's read plan, merge function, ...) is never built (bench/RESULTS.md,
    "Relabel-only compaction units"). A unit that rewrites still reads through one, and the
    vectors it writes hide exactly the replaced rows either way."""
    from lake_assets.ops.compact import rewrite

    built: list[int] = []

    class CountedReader(rewrite.SplitReader):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            built.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(rewrite, "SplitReader", CountedReader)
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(range(20_000), "a"))
    built.clear()
    t.write_arrow(_rows(range(0, 20_000, 4), "b"))  # 5,000 rows: relabelled up, looked up above
    compacts = [s for s in t.snapshots() if s.commit_kind.name == "COMPACT"]
    assert compacts, "the round compacted"
    assert built == [], "a relabel-only unit built a reader"
    assert sum(len(v) for v in _stored_vectors(t).values()) == 5000
    # a delete round: its level-0 file holds retracts, so the unit rewrites it (reads rows)
    deletes = _rows(range(1, 20_000, 4), "d").append_column("op", pa.array(["-D"] * 5000))
    t2 = cat.create_table("db.d", deletes.schema, primary_keys=["k"],
                          options={"bucket": "1", "deletion-vectors.enabled": "true", "rowkind.field": "op"})
    t2.write_arrow(_rows(range(20_000), "a").append_column("op", pa.array(["+I"] * 20_000)))
    built.clear()
    t2.write_arrow(deletes)
    assert built, "a rewriting unit reads through a reader"
    got = t2.to_arrow()
    assert got.num_rows == 15_000 and not set(range(1, 20_000, 4)) & set(got.column("k").to_pylist())
    got = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert len(got) == 20_000 and got[0] == "b0" and got[1] == "a1" and got[19_996] == "b19996"


def test_ascending_positions_are_checked_by_their_ends_and_refused_unchanged() -> None:
    """`VectorUpdate.record` passes its (ascending) positions with ``ascending=True``: the ends are
    the bounds, and a bad end is refused before anything is added, as for unsorted positions."""
    vector = BitMap([1, 2])
    add_positions(vector, np.array([3, 7, 9], dtype=np.int64), "f.parquet", ascending=True)
    assert vector == BitMap([1, 2, 3, 7, 9])
    with pytest.raises(InvalidDataError, match=r"-1 of f\.parquet is negative"):
        add_positions(vector, np.array([-1, 5], dtype=np.int64), "f.parquet", ascending=True)
    with pytest.raises(UnsupportedFeatureError, match="does not fit"):
        add_positions(vector, np.array([5, MAX_POSITION + 1], dtype=np.int64), "f.parquet", ascending=True)
    assert vector == BitMap([1, 2, 3, 7, 9])


def test_only_a_streaming_merge_makes_a_spill_directory(tmp_path, monkeypatch) -> None:
    """A unit sets up its spill directory (codec, disk budget, finalizer) at its first streaming
    merge: a deletion-vector round that relabels level 0 makes none; a merge of more input rows
    than ``compaction.merge-rows`` streams, makes one, and merges right."""
    from lake_assets.ops.compact import rewrite

    made: list[int] = []
    real = rewrite.spill_directory

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(rewrite, "spill_directory", counted)
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true", "compaction.merge-rows": "1000"})
    t.write_arrow(_rows(range(4_000), "a"))
    made.clear()
    t.write_arrow(_rows(range(0, 800, 2), "b"))  # 400 rows: relabelled up, looked up above
    assert [s.commit_kind.name for s in t.snapshots()][-1] == "COMPACT"
    assert made == [], "a relabel-only unit made a spill directory"
    t.compact(full=True)  # every file into one: 4,400 input rows > 1,000 merge rows, streamed
    assert made, "a streaming merge made no spill directory"
    got = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert len(got) == 4_000 and got[0] == "b0" and got[1] == "a1" and got[798] == "b798" and got[800] == "a800"
