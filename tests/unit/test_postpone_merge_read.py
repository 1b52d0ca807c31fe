"""``postpone.merge-on-read = true`` (ops/postpone_merge_read.py): batch reads of a postpone-bucket
table merge the rows waiting in ``bucket-postpone`` into the real buckets, as Paimon 2.0's batch
sources do.

No engine we can drive reads with the option (Java 0.9 predates it, pypaimon 2.1 and pypaimon-rust
0.4 have no merge-on-read), so the oracle is our own compaction: a merge-on-read before the
postpone compaction returns exactly the rows a plain read returns after it, for every merge engine
postpone tables support, on seeded random rounds of inserts, updates and deletes from several
writers over partitions with and without real buckets. A fixed-bucket table fed the same rows is
a second oracle for the engines whose result does not depend on the bucket count.
"""

from __future__ import annotations

import os
import random
import shutil
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import LakeError, UnsupportedFeatureError
from lake_assets.ops import postpone_merge_read
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("n", pa.int64()), ("s", pa.int64()), ("op", pa.string())])
MOR = {"postpone.merge-on-read": "true"}


def make(catalog: Catalog, name: str, bucket: str = "-2", **options: str) -> Table:
    return catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": bucket, "rowkind.field": "op", **options})


def content(t: Table, **kw: object) -> list[dict]:
    return t.to_arrow(**kw).sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()


def random_batch(rng: random.Random, tag: str, *, deletes: bool) -> pa.Table:
    n = rng.randint(1, 40)
    ids = [rng.randint(0, 60) for _ in range(n)]
    dts = [rng.choice(["d1", "d2", "d3"]) for _ in range(n)]
    ops = [("-D" if deletes and rng.random() < 0.2 else rng.choice(["+I", "+U"])) for _ in range(n)]
    return pa.table({"id": ids, "dt": dts, "v": [f"{tag}{i}" for i in range(n)],
                     "n": [rng.randint(-5, 9) for _ in range(n)], "s": [rng.randint(0, 5) for _ in range(n)],
                     "op": ops}, schema=SCHEMA)


# engine -> (options, whether rounds carry deletes, whether a fixed-bucket table is an oracle). With
# sequence.field and deletes it is not: when a compaction drops a key's delete at the top level
# decides whether a later row with a smaller sequence field shows (as in Paimon), and the postpone
# table compacts at other times than the fixed-bucket table.
ENGINES = {
    "deduplicate": ({}, True, True),
    "deduplicate-sequence-field": ({"sequence.field": "s"}, True, False),
    "partial-update": ({"merge-engine": "partial-update", "ignore-delete": "true"}, False, True),
    "aggregation": ({"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                     "fields.v.aggregate-function": "last_non_null_value", "ignore-delete": "true"}, False, True),
    "first-row": ({"merge-engine": "first-row"}, False, True),
    "deletion-vectors": ({"deletion-vectors.enabled": "true"}, True, True),
}


def compacted_copy(catalog: Catalog, t: Table, name: str) -> Table:
    """A copy of ``t``'s directory (same history: a sequence.field table's result depends on when
    its compactions ran), compacted: the oracle of a merge-on-read of ``t``."""
    src = os.path.join(catalog.warehouse_url, "db.db", t.name.split(".")[-1])
    shutil.copytree(src, os.path.join(catalog.warehouse_url, "db.db", name))
    copy = catalog.get_table(f"db.{name}")
    copy.compact()
    return copy


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("seed", [1, 2])
def test_merge_on_read_equals_the_compacted_table(catalog: Catalog, engine: str, seed: int) -> None:
    """Rounds of several writers each; ``post`` is compacted now and then (some partitions only,
    so later rounds merge with real buckets while other partitions have none yet). After every
    round its merge-on-read equals a plain read of a compacted copy; where it is one, so does a
    fixed-bucket table of the same count fed the same rows."""
    options, deletes, fixed_oracle = ENGINES[engine]
    rng = random.Random(seed)
    post = make(catalog, "p", **options, **MOR, **{"postpone.default-bucket-num": "3"})
    fixed = make(catalog, "f", "3", **options)
    for rnd in range(6):
        for w in range(rng.randint(1, 3)):
            batch = random_batch(rng, f"r{rnd}w{w}-", deletes=deletes)
            post.write_arrow(batch)
            fixed.write_arrow(batch)
        merged = content(post)
        copy = compacted_copy(catalog, post, f"c{rnd}")
        assert not [e for e in copy.store.file_store_scan().live_entries(copy.store.snapshot_manager.latest())
                    if e.bucket == -2]
        assert merged == content(copy)
        if fixed_oracle:
            assert merged == content(fixed)
        if rnd == 1:
            post.compact(partitions=[{"dt": "d1"}])
        elif rnd == 3:
            post.compact()
        assert content(post) == merged
    latest = post.store.snapshot_manager.latest()
    assert {e.bucket for e in post.store.file_store_scan().live_entries(latest)} >= {-2, 0}


def test_plain_reads_skip_what_merge_on_read_shows(catalog: Catalog) -> None:
    t = make(catalog, "p", **{"postpone.default-bucket-num": "2"})
    t.write_arrow(pa.table({"id": [1, 2], "dt": ["d1", "d1"], "v": ["a", "b"], "n": [1, 1], "s": [0, 0],
                            "op": ["+I", "+I"]}, schema=SCHEMA))
    t.compact()
    t.write_arrow(pa.table({"id": [2, 3, 1], "dt": ["d1", "d1", "d1"], "v": ["B", "c", None], "n": [2, 3, 0],
                            "s": [0, 0, 0], "op": ["+U", "+I", "-D"]}, schema=SCHEMA))
    assert [r["v"] for r in content(t)] == ["a", "b"]
    t.update_schema().set_option("postpone.merge-on-read", "true").commit()
    assert [(r["id"], r["v"]) for r in content(t)] == [(2, "B"), (3, "c")]


def two_rounds(catalog: Catalog, **options: str) -> Table:
    """Keys 1, 2 in real buckets; then, waiting: 2 updated, 3 new, 1 deleted, 4 in a partition
    without real buckets."""
    t = make(catalog, "p", **{"postpone.default-bucket-num": "2", **MOR, **options})
    t.write_arrow(pa.table({"id": [1, 2], "dt": ["d1", "d1"], "v": ["a", "b"], "n": [1, 1], "s": [0, 0],
                            "op": ["+I", "+I"]}, schema=SCHEMA))
    t.compact()
    t.write_arrow(pa.table({"id": [2, 3, 1, 4], "dt": ["d1", "d1", "d1", "d2"], "v": ["B", "c", None, "d"],
                            "n": [2, 3, 0, 4], "s": [0, 0, 0, 0], "op": ["+U", "+I", "-D", "+I"]}, schema=SCHEMA))
    return t


def test_filters_apply_after_the_merge(catalog: Catalog) -> None:
    """A value filter is applied to merged rows: the real bucket's old ``v = 'b'`` of key 2 must not
    come back because the waiting update does not match; key and partition filters prune."""
    t = two_rounds(catalog)
    assert content(t, filter=[("v", "=", "b")]) == []
    assert [r["id"] for r in content(t, filter=[("v", "=", "B")])] == [2]
    assert [r["id"] for r in content(t, filter=[("v", "in", ["a", "b", "B"])])] == [2]
    assert [r["id"] for r in content(t, filter=[("id", "=", 1)])] == []  # deleted while waiting
    assert [r["id"] for r in content(t, filter=[("id", "<=", 3)])] == [2, 3]
    assert [(r["dt"], r["id"]) for r in content(t, filter=[("dt", "=", "d2")])] == [("d2", 4)]
    assert t.to_arrow(columns=["v"], filter=[("n", ">", 2)]).sort_by("v").column("v").to_pylist() == ["c", "d"]


def test_batches_spill_and_time_travel(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """``to_batches`` in small batches, a write buffer small enough to spill runs, and a read of an
    older snapshot (its waiting rows only) all read what the merge gives."""
    from lake_assets.ops import spill

    spilled: list[int] = []
    write_run = spill.SpillDirectory.write_run

    def counted(self: spill.SpillDirectory, *a: Any, **kw: Any) -> spill.SpillRun:
        run = write_run(self, *a, **kw)
        spilled.append(run.rows)
        return run

    rng = random.Random(7)
    t = make(catalog, "p", **MOR, **{"postpone.default-bucket-num": "2", "write-buffer-size": "1 kb"})
    first_id = t.write_arrow(random_batch(rng, "r0-", deletes=True))
    first = content(compacted_copy(catalog, t, "c0"))
    for rnd in range(1, 4):
        t.write_arrow(random_batch(rng, f"r{rnd}-", deletes=True))
    expected = content(compacted_copy(catalog, t, "c"))
    monkeypatch.setattr(spill.SpillDirectory, "write_run", counted)
    got = pa.Table.from_batches(list(t.to_batches(batch_size=3)))
    assert max(b.num_rows for b in t.to_batches(batch_size=3)) <= 6
    assert got.sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist() == expected
    assert spilled and sum(spilled) > 0, "the 1 kb write buffer spilled no run"
    assert content(t) == expected
    assert first_id is not None and content(t, snapshot_id=first_id) == first != expected


def test_unspillable_buffer_overflow_is_an_error(catalog: Catalog) -> None:
    t = make(catalog, "p", **MOR, **{"postpone.default-bucket-num": "2", "write-buffer-size": "1 kb",
                                     "write-buffer-spillable": "false"})
    n = 200
    t.write_arrow(pa.table({"id": list(range(n)), "dt": ["d1"] * n, "v": [f"value {i}" for i in range(n)],
                            "n": [1] * n, "s": [0] * n, "op": ["+I"] * n}, schema=SCHEMA))
    with pytest.raises(LakeError, match="write-buffer-spillable is false"):
        t.to_arrow()


def test_streams_and_change_reads_are_refused(catalog: Catalog) -> None:
    t = two_rounds(catalog)
    with pytest.raises(UnsupportedFeatureError, match=r"postpone.merge-on-read = true.*full snapshot scan"):
        t.read_changes(1, 2)
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot stream from db\.p: postpone.merge-on-read = true"):
        t.stream()
    assert postpone_merge_read.configured(t.schema)
    # without the option the same table streams and reads real buckets only, as before
    t.update_schema().set_option("postpone.merge-on-read", "false").commit()
    assert not postpone_merge_read.configured(t.schema)
    assert [(r["id"], r["v"]) for r in content(t)] == [(1, "a"), (2, "b")]
    t.stream()


def test_column_changes_over_waiting_rows_are_refused(catalog: Catalog) -> None:
    """Postponed rows are replayed as the table's columns: after a column change the read refuses,
    naming the file (as the postpone compaction does)."""
    t = two_rounds(catalog)
    t.update_schema().add_column("extra", pa.int32()).commit()
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot read db\.p: postpone file .* across column changes"):
        t.to_arrow()
