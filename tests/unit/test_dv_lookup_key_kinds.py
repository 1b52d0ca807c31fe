"""The deletion-vector lookup of a compaction (`ops.dv_key_lookup`) for every kind of key it takes a
different path for: one integer column with dense keys (the rank bitmap of
`lsm.int_key_positions`), one integer column with sparse keys (its binary search), a 32-bit
integer, a double key (-0.0 and 0.0 two keys), a string key and a two-column key (a slice of each
file by binary searches in Paimon's key order, then Arrow's hash lookups). Each history is read without a
merge (the vectors alone hide replaced rows) against a dict model, with keys at the files' edges,
a round replacing every key of the table (its files fully deleted) and deletes."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import lake_assets.ops.read as read_mod
from lake_assets import Catalog
from lake_assets.errors import LakeError
from lake_assets.ops import dv_compact, dv_key_lookup
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index

KINDS: dict[str, tuple[pa.DataType, list[str], Any]] = {
    # name: (type of k, primary key, key value of i)
    "int64 dense": (pa.int64(), ["k"], lambda i: i),
    "int64 sparse": (pa.int64(), ["k"], lambda i: i * 1_000_003 - 2**40),
    "int32": (pa.int32(), ["k"], lambda i: i - 500),
    "string": (pa.string(), ["k"], lambda i: f"key-{i:05d}"),
    # negative and positive, -0.0 and 0.0 as two keys (Paimon orders them apart)
    "double": (pa.float64(), ["k"], lambda i: -0.0 if i == 1 else (i - 1500) / 4 if i != 1500 else 0.0),
    "two columns": (pa.int64(), ["k", "j"], lambda i: i // 3),
}


def schema(kind: str) -> pa.Schema:
    return pa.schema([("k", KINDS[kind][0]), ("j", pa.int32()), ("v", pa.string()), ("op", pa.string())])


def rows(kind: str, ids: list[int], tag: str, op: str = "+I") -> pa.Table:
    key = KINDS[kind][2]
    return pa.table({"k": [key(i) for i in ids], "j": [i % 3 for i in ids], "v": [f"{tag}{i}" for i in ids],
                     "op": [op] * len(ids)}, schema=schema(kind))


def no_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("read merged a deletion-vector bucket")

    monkeypatch.setattr(read_mod, "sort_and_merge", refuse)
    monkeypatch.setattr(read_mod, "winner_masks", refuse)


def marked(table: Any) -> int:
    loader = VectorLoader(table.store)
    return sum(len(v) for entries in snapshot_index(table.store, table.latest_snapshot()).values()
               for v in loader.vectors(entries).values())


@pytest.mark.parametrize("kind", list(KINDS))
def test_vectors_hide_exactly_the_replaced_rows(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    keys = KINDS[kind][1]
    table = catalog.create_table("db.t", schema(kind), primary_keys=keys,
                                 options={"bucket": "2", "deletion-vectors.enabled": "true", "rowkind.field": "op",
                                          "target-file-size": "8 kb", "num-sorted-run.compaction-trigger": "3"})
    # files roll every 1,000 rows written at most (as Java's): enough rows for several per bucket
    n = 6000
    model: dict[int, str] = {}
    rng = random.Random(11)

    def write(ids: list[int], tag: str, op: str = "+I") -> None:
        table.write_arrow(rows(kind, sorted(ids), tag, op))
        for i in ids:
            if op == "-D":
                model.pop(i, None)
            else:
                model[i] = f"{tag}{i}"
        with monkeypatch.context() as m:
            no_merge(m)
            got = table.to_arrow()
        assert sorted(got.column("v").to_pylist()) == sorted(model.values()), tag

    write(list(range(n)), "r0-")
    table.compact(full=True)
    # the top level's files' first and last ids, their neighbours and ids past both ends
    write([0, 1, n - 2, n - 1, n, n + 1, *rng.sample(range(2, n - 2), 40)], "r1-")
    write(rng.sample(range(n + 2), 600), "r2-")
    write(rng.sample(range(n), 200), "r3-", "-D")
    write(rng.sample(range(n + 2), 900), "r4-")
    assert marked(table), "no deletion vectors were written: the test proves nothing"
    write(list(range(n + 2)), "r5-")  # every key again: every live row above goes, files fully deleted
    table.compact(full=True)
    assert table.to_arrow().num_rows == len(model)


def test_integer_keys_are_found_through_a_cached_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the top level's index is built once and found in the cache by later rounds ...
    built: list[int] = []
    real = dv_key_lookup.IntKeyPositions

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, keys: Any) -> None:
            built.append(int(keys.size))
            super().__init__(keys)

    monkeypatch.setattr(dv_key_lookup, "IntKeyPositions", Counting)
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema("int64 dense"), primary_keys=["k"],
                                 options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.write_arrow(rows("int64 dense", list(range(5000)), "a"))
    for r in range(3):
        table.write_arrow(rows("int64 dense", list(range(r, 5000, 97)), f"r{r}-"))
    assert built.count(5000) == 1, built
    # ... and a round's small file (300 keys) is tested against a mark of the next round's keys
    # (dense: 300 keys, overlapping it by 200): no index is built for it
    built.clear()
    for r in range(3):
        table.write_arrow(rows("int64 dense", list(range(100 * r, 100 * r + 300)), f"d{r}-"))
    assert built == [], built
    got = table.to_arrow().sort_by("k")
    assert got.num_rows == 5000
    # keys 0-99 last written by the first loop or d0, 100-199 by d1, 200-499 by d2
    assert got.column("v").to_pylist()[100:500] == [f"d1-{i}" for i in range(100, 200)] + [
        f"d2-{i}" for i in range(200, 500)]


def test_a_null_key_is_refused(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema("int64 dense"), primary_keys=["k"],
                                 options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.write_arrow(rows("int64 dense", list(range(10)), "a"))
    bad = rows("int64 dense", [1, 2], "b").set_column(0, "k", pa.array([1, None], pa.int64()))
    with pytest.raises(LakeError):
        table.write_arrow(bad)
    assert table.to_arrow().num_rows == 10


def held_rows(obj: object) -> int:
    """Rows of Arrow tables and numpy arrays an object holds in its attributes (one level of
    lists, tuples and dicts deep): what a `VectorUpdate` keeps between merge steps."""
    total = 0
    for value in vars(obj).values():
        items = list(value.values()) if isinstance(value, dict) else value
        for item in items if isinstance(items, (list, tuple)) else [items]:
            if isinstance(item, pa.Table):
                total += item.num_rows
            elif isinstance(item, np.ndarray):
                total += item.size
    return total


@pytest.mark.parametrize("kind", ["int64 dense", "string"])
def test_the_lookup_holds_one_merge_step_not_the_units_output(tmp_path: Path, kind: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # A unit outputs many merge steps (compaction.merge-rows); between steps the update keeps
    # found positions per file (bitmaps), never the keys it was handed.
    step = 400
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema(kind), primary_keys=["k"],
                                 options={"bucket": "1", "deletion-vectors.enabled": "true", "write-only": "true",
                                          "compaction.merge-rows": str(step)})
    n = 6000
    table.write_arrow(rows(kind, list(range(n)), "a"))
    table.compact(full=True)
    table.write_arrow(rows(kind, list(range(0, n, 2)), "b"))
    table.write_arrow(rows(kind, list(range(1, n, 4)), "c"))
    held: list[int] = []
    noted: list[int] = []
    real_note = dv_compact.VectorUpdate.note

    def note(self: dv_compact.VectorUpdate, merged: pa.Table) -> None:
        real_note(self, merged)
        noted.append(merged.num_rows)
        held.append(held_rows(self))

    monkeypatch.setattr(dv_compact.VectorUpdate, "note", note)
    table.compact()
    assert len(noted) > 4 and sum(noted) > 8 * step, "the unit merged in one step: the test proves nothing"
    assert max(held) == 0, held
    model = {i: "a" for i in range(n)} | {i: "b" for i in range(0, n, 2)} | {i: "c" for i in range(1, n, 4)}
    got = table.to_arrow()
    assert sorted(got.column("v").to_pylist()) == sorted(f"{t}{i}" for i, t in model.items())
