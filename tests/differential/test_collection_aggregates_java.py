"""collect, merge_map and nested_update against Paimon Java 0.9 (issue 14).

Java 0.9 writes rows over several commits (NULL arrays and maps, NULL and duplicate elements,
retractions) into aggregation tables; lake_assets' merged reads must equal Java's, and the same
rounds written and compacted by lake_assets must read the same in Java. Where Java's result
order is its HashSet/HashMap's hash order (distinct collect of non-ROW elements, merge_map,
nested_update with a nested key), the comparison ignores element order: lake_assets keeps first
appearance instead (see lake_assets/lsm/merge_engine/aggregate_collections.py).

Java 0.9 bugs the rounds avoid, each fixed in Paimon 1.x and followed by lake_assets (unit tests
in tests/unit/test_collection_aggregates.py pin our side): a NULL retracted array or map throws
a NullPointerException in collect and merge_map (1.x: the retraction does nothing), so every
retraction row carries an (empty) array/map there; nested_update with a nested key throws on a
NULL element (1.x skips it), and without one keeps it (1.x drops it). One Java crash 1.x still
has: distinct collect of ROWs throws a NullPointerException when a NULL element meets a later
element (its equaliser is called on the NULL); lake_assets treats NULL as one more value, as
Java's distinct collect of other element types does, so the rounds hold no NULL ROW element
that meets another record. Java 0.9 also reads a ROW element whose fields are all NULL back as a
NULL element (its Parquet reader), so every ROW here has a non-NULL field.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import JavaError, PaimonJava

from .scenario import C, Scenario, W, assert_agree

KEY = pa.field("k", pa.int64(), nullable=False)
OP = pa.field("op", pa.string())
PAIR = pa.struct([("a", pa.int32()), ("b", pa.string())])
ITEM = pa.struct([("id", pa.int32()), ("v", pa.string())])


def _rows(kind: str, *rows: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**r, "op": kind} for r in rows]


# ------------------------------------------------- order-deterministic columns, every read path

ORDERED_SCHEMA = pa.schema([
    KEY,
    ("c", pa.list_(pa.int32())),               # collect: concatenation in record order
    ("cr", pa.list_(PAIR)),                    # collect distinct ROWs: Java keeps first appearance
    ("m", pa.map_(pa.string(), pa.int64())),   # merge_map: helpers compare map entries as a set
    ("nn", pa.list_(ITEM)),                    # nested_update without a nested key: concatenation
    OP,
])
ORDERED_OPTIONS = {
    "merge-engine": "aggregation", "rowkind.field": "op",
    "fields.c.aggregate-function": "collect",
    "fields.cr.aggregate-function": "collect", "fields.cr.distinct": "true",
    "fields.m.aggregate-function": "merge_map",
    "fields.nn.aggregate-function": "nested_update",
}


def _p(a: int | None, b: str | None) -> dict[str, Any]:
    return {"a": a, "b": b}


def _i(i: int | None, v: str | None) -> dict[str, Any]:
    return {"id": i, "v": v}


ORDERED_STEPS = [
    W(*_rows("+I",
             {"k": 1, "c": [1, 2, 2, None], "cr": [_p(1, "x"), _p(1, "x"), _p(None, "n")],
              "m": [("a", 1), ("b", None)], "nn": [_i(1, "a"), _i(2, "b")]},
             {"k": 2, "c": None, "cr": None, "m": None, "nn": None},
             {"k": 1, "c": [], "cr": [_p(2, "y"), _p(1, "x")], "m": [("a", 10), ("c", 3)], "nn": [_i(1, "a")]},
             {"k": 3, "c": [7], "cr": [], "m": [], "nn": []})),
    # k1's lone -U (kept as a retraction until it meets k1's older row) retracts the oldest 2, a
    # never-seen 9, the NULL element, a ROW, key 'a' and every equal nested row; k2's retraction
    # finds a NULL accumulator in the write buffer and does nothing; k3's retracts its own insert
    W(*_rows("-U", {"k": 1, "c": [2, 9, None], "cr": [_p(1, "x")], "m": [("a", 0)], "nn": [_i(1, "a")]},
             {"k": 2, "c": [1], "cr": [_p(1, "x")], "m": [("a", 1)], "nn": [_i(1, "a")]}),
      *_rows("+I", {"k": 2, "c": [4, 4], "cr": [_p(5, "q"), _p(5, "q")], "m": [("z", 26)], "nn": [_i(9, "z")]},
             {"k": 3, "c": [7, 8], "cr": [_p(7, "s")], "m": [("s", 7)], "nn": [_i(7, "s")]}),
      *_rows("-U", {"k": 3, "c": [7], "cr": [_p(7, "s")], "m": [("s", 0)], "nn": [_i(7, "s")]})),
    C(),
    # k3's lone retraction removes two 7s of [7, 8]... of which one is left; a re-added ROW goes last
    W(*_rows("-U", {"k": 3, "c": [7, 7], "cr": [], "m": [("missing", 0)], "nn": [_i(5, "e")]}),
      *_rows("+U", {"k": 1, "c": [2], "cr": [_p(1, "x")], "m": [("a", 11), ("b", 2)], "nn": [_i(2, "b")]})),
    C(full=False),
    # a lone record: Java's lookup compaction folds it (agg(null, x)), as lake_assets' does since the
    # lookup merge follows LookupMergeFunction
    W(*_rows("+I", {"k": 4, "c": [None], "cr": [None], "m": [("k", None)], "nn": [_i(None, "n")]},
             {"k": 3, "c": [8], "cr": [_p(8, "h")], "m": None, "nn": None})),
    C(),
]


def test_ordered_collections_every_read_path(java: PaimonJava, wh: str) -> None:
    """Batch, incremental and streaming reads, compaction and lookup changelogs of collect,
    distinct collect of ROWs, merge_map and key-less nested_update: Java alone, lake_assets alone
    and the two alternating step by step all read what Java reads of its own table."""
    # default num-levels: Java's lookup compaction writes a key's merged row to a middle level above
    # the older row, which LookupMergeFunction skips on read; so does lake_assets (lsm/lookup_merge.py)
    options = {**ORDERED_OPTIONS, "changelog-producer": "lookup"}
    sc = Scenario(java, wh, ORDERED_SCHEMA, ["k"], options, ORDERED_STEPS)
    obs = sc.run_all()
    assert_agree(obs)
    # not vacuous: the hand-computed final state
    final = Catalog(wh).get_table("db.t_lake").to_arrow().sort_by("k").to_pylist()
    assert [(r["k"], r["c"], r["cr"], sorted(r["m"] or []), r["nn"]) for r in final] == [
        (1, [1, 2, 2], [_p(None, "n"), _p(2, "y"), _p(1, "x")],
         [("a", 11), ("b", 2), ("c", 3)], [_i(2, "b"), _i(2, "b")]),
        (2, [4, 4], [_p(5, "q")], [("z", 26)], [_i(9, "z")]),
        (3, [8, 8], [_p(8, "h")], [], []),
        (4, [None], [None], [("k", None)], [_i(None, "n")]),
    ]


# ------------------------------------------------- hash-ordered columns (Java's HashSet/HashMap)

HASHED_SCHEMA = pa.schema([
    KEY,
    ("cd", pa.list_(pa.string())),   # collect distinct of strings: Java's HashSet order
    ("n", pa.list_(ITEM)),           # nested_update keyed by id: Java's HashMap order
    ("m", pa.map_(pa.int32(), pa.string())),
    OP,
])
HASHED_OPTIONS = {
    "bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op",
    "fields.cd.aggregate-function": "collect", "fields.cd.distinct": "true",
    "fields.n.aggregate-function": "nested_update", "fields.n.nested-key": "id",
    "fields.m.aggregate-function": "merge_map",
}
HASHED_ROUNDS = [
    _rows("+I",
          {"k": 1, "cd": ["b", "a", "b", None, "c"], "n": [_i(1, "a"), _i(2, "b")], "m": [(1, "x")]},
          {"k": 1, "cd": None, "n": [_i(2, "b2"), _i(3, "c")], "m": [(1, "y"), (2, None)]},
          {"k": 2, "cd": [], "n": [], "m": []}),
    # k1's lone -U: 'a', NULL and a never-seen value; nested key 2 whatever the row; map key 2
    _rows("-U", {"k": 1, "cd": ["a", "zz", None], "n": [_i(2, "whatever")], "m": [(2, "?")]})
    + _rows("+I", {"k": 2, "cd": ["x", "x"], "n": [_i(7, None)], "m": [(7, None)]}),
    _rows("-D", {"k": 2, "cd": ["x"], "n": [_i(7, "other")], "m": [(7, "")]})
    + _rows("+I", {"k": 1, "cd": ["a", "d"], "n": [_i(4, "d"), _i(1, "a2")], "m": [(3, "z")]}),
    _rows("+I", {"k": 2, "cd": ["y"], "n": [_i(None, "null key")], "m": [(8, "h")]},
          {"k": 3, "cd": [None, None], "n": None, "m": None}),
]


def _unordered(table: pa.Table) -> list[Any]:
    """Rows with every list's elements sorted: Java's order here is its hash order."""
    out = []
    for r in table.to_pylist():
        out.append(tuple(
            tuple(sorted(v, key=repr)) if isinstance(v, list) else v for v in r.values()))
    return sorted(out, key=repr)


def test_hash_ordered_collections_both_ways(java: PaimonJava, lake: Catalog, wh: str) -> None:
    """distinct collect of strings, keyed nested_update and merge_map: Java writes and compacts,
    lake_assets reads the same rows after every round; lake_assets writes the same rounds and
    compacts, Java reads the same rows."""
    java.create_table(wh, "db.j", HASHED_SCHEMA, ["k"], options=HASHED_OPTIONS)
    mine = lake.create_table("db.l", HASHED_SCHEMA, primary_keys=["k"], options=HASHED_OPTIONS)
    for i, rows in enumerate(HASHED_ROUNDS):
        java.write(wh, "db.j", rows, schema=HASHED_SCHEMA)
        if i == 1:
            java.compact(wh, "db.j", [], 0, full=True)
        mine.write_arrow(pa.Table.from_pylist(rows, schema=HASHED_SCHEMA))
        expected = _unordered(java.read(wh, "db.j"))
        assert _unordered(lake.get_table("db.j").to_arrow()) == expected, f"lake reads Java's table, round {i}"
        assert _unordered(java.read(wh, "db.l")) == expected, f"Java reads lake_assets' table, round {i}"
    final = _unordered(java.read(wh, "db.j"))
    # lake_assets compacts its own table and Java's: Java reads both as before
    lake.get_table("db.l").compact(full=True)
    lake.get_table("db.j").compact(full=True)
    assert _unordered(java.read(wh, "db.l")) == final
    assert _unordered(java.read(wh, "db.j")) == final
    assert _unordered(lake.get_table("db.l").to_arrow()) == _unordered(lake.get_table("db.j").to_arrow()) == final
    assert final == _unordered(pa.Table.from_pylist([
        {"k": 1, "cd": ["b", "c", "a", "d"], "n": [_i(1, "a2"), _i(3, "c"), _i(4, "d")],
         "m": [(1, "y"), (3, "z")], "op": "+I"},
        {"k": 2, "cd": ["y"], "n": [_i(None, "null key")], "m": [(8, "h")], "op": "+I"},
        # a key's only record is kept as written, even by a full compaction (Java's too)
        {"k": 3, "cd": [None, None], "n": None, "m": None, "op": "+I"},
    ], schema=HASHED_SCHEMA))


# ------------------------------------------------------------- partial-update sequence groups

PU_SCHEMA = pa.schema([KEY, ("g", pa.int64()), ("c", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int64())),
                       ("n", pa.list_(ITEM)), ("x", pa.string()), OP])
PU_OPTIONS = {
    "bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op", "fields.g.sequence-group": "c,m,n",
    "fields.c.aggregate-function": "collect", "fields.m.aggregate-function": "merge_map",
    "fields.n.aggregate-function": "nested_update", "fields.n.nested-key": "id",
}
# group sequences arrive in order (out of order, Java appends a late collect array at the end while
# lake_assets folds in sequence order: partial_update's docstring); a retraction of the group
# retracts from its functions; x is an ungrouped column (last non-null value)
PU_ROUNDS = [
    _rows("+I", {"k": 1, "g": 1, "c": [1, 2], "m": [("a", 1)], "n": [_i(1, "a")], "x": "x1"},
          {"k": 1, "g": 2, "c": [2], "m": [("a", 2), ("b", 1)], "n": [_i(2, "b")]},
          {"k": 2, "g": 1, "c": [5], "m": [], "n": [], "x": "y"}),
    _rows("-U", {"k": 1, "g": 3, "c": [2], "m": [("b", 0)], "n": [_i(1, "?")]})
    + _rows("+I", {"k": 2, "g": None, "c": [9], "x": "y2"}),  # a NULL group sequence leaves the group alone
    _rows("+I", {"k": 1, "g": 4, "c": [7], "m": [("c", 3)], "n": [_i(3, "c")], "x": "x2"}),
]


def test_partial_update_sequence_groups_both_ways(java: PaimonJava, lake: Catalog, wh: str) -> None:
    """collect, merge_map and keyed nested_update inside a partial-update sequence group: each
    engine reads what the other wrote, round by round, and after lake_assets' full compaction."""
    java.create_table(wh, "db.j", PU_SCHEMA, ["k"], options=PU_OPTIONS)
    mine = lake.create_table("db.l", PU_SCHEMA, primary_keys=["k"], options=PU_OPTIONS)
    for i, rows in enumerate(PU_ROUNDS):
        java.write(wh, "db.j", rows, schema=PU_SCHEMA)
        mine.write_arrow(pa.Table.from_pylist(rows, schema=PU_SCHEMA))
        expected = _unordered(java.read(wh, "db.j"))
        assert _unordered(lake.get_table("db.j").to_arrow()) == expected, f"lake reads Java's table, round {i}"
        assert _unordered(java.read(wh, "db.l")) == expected, f"Java reads lake_assets' table, round {i}"
    lake.get_table("db.l").compact(full=True)
    lake.get_table("db.j").compact(full=True)
    assert _unordered(java.read(wh, "db.l")) == _unordered(java.read(wh, "db.j")) == _unordered(
        pa.Table.from_pylist([
            {"k": 1, "g": 4, "c": [1, 2, 7], "m": [("a", 2), ("c", 3)], "n": [_i(2, "b"), _i(3, "c")], "x": "x2",
             "op": "+I"},
            {"k": 2, "g": 1, "c": [5], "m": [], "n": [], "x": "y2", "op": "+I"},
        ], schema=PU_SCHEMA))


def test_java_distinct_collect_of_rows_crashes_on_a_null_element(java: PaimonJava, lake: Catalog, wh: str) -> None:
    """Java bug (0.9, and 1.x's FieldCollectAgg is unchanged there), pinned so the rounds above avoid
    it: a distinct collect of ROWs throws a NullPointerException when a NULL element meets a later
    element (its equaliser is called on the NULL). lake_assets keeps NULL as one more value."""
    schema = pa.schema([KEY, ("cr", pa.list_(PAIR))])
    options = {"bucket": "1", "merge-engine": "aggregation", "fields.cr.aggregate-function": "collect",
               "fields.cr.distinct": "true"}
    rows = [{"k": 1, "cr": [None, _p(1, "x")]}, {"k": 1, "cr": [None, _p(1, "x"), _p(2, "y")]}]
    java.create_table(wh, "db.j", schema, ["k"], options=options)
    with pytest.raises(JavaError) as err:
        java.write(wh, "db.j", rows, schema=schema)
    assert err.value.java_class == "java.lang.NullPointerException"
    mine = lake.create_table("db.l", schema, primary_keys=["k"], options=options)
    mine.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    assert mine.to_arrow().to_pylist() == [{"k": 1, "cr": [None, _p(1, "x"), _p(2, "y")]}]
