"""Merge engines against Paimon Java 0.9, both ways on one warehouse (see scenario.py).

Each test runs one sequence of writes, compactions and expirations on three tables of a warehouse:
Java alone, lake_assets alone, and the two engines alternating step by step (each reads, compacts
and writes on top of what the other wrote). After every step both engines' batch reads, their
one-snapshot incremental reads and their streaming scans must equal Java's reads of Java's table.
"""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import LakeError, OptionError
from tests.java.oracle import JavaError, PaimonJava

from .scenario import C, Scenario, W, X, assert_agree

KEY = pa.field("k", pa.int64(), nullable=False)
OP = pa.field("op", pa.string())
RK = {"rowkind.field": "op"}
# Expiry steps keep the 3 latest snapshots (Java's committers also expire on commit with these).
RETAIN_3 = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3", "snapshot.expire.limit": "100"}


def _w(kind: str, *rows: dict) -> W:
    """One commit of ``rows``, all of row kind ``kind`` (+I, -U, +U, -D)."""
    return W(*({**r, "op": kind} for r in rows))


def _mixed(*rows: tuple[str, dict]) -> W:
    """One commit of (kind, row) pairs, in that order."""
    return W(*({**r, "op": kind} for kind, r in rows))


# ------------------------------------------------------------------------------------ deduplicate


def test_deduplicate_sequence_field_ties_and_nulls(java: PaimonJava, wh: str) -> None:
    """A larger ``sequence.field`` wins whatever the arrival order; ties and NULL sequences (the
    smallest) fall back to arrival order; a -D with the winning sequence deletes."""
    schema = pa.schema([KEY, ("v", pa.string()), ("seq", pa.int64()), OP])
    steps = [
        _w("+I", {"k": 1, "v": "a", "seq": 5}, {"k": 2, "v": "b", "seq": None}, {"k": 3, "v": "c", "seq": 1},
           {"k": 4, "v": "d", "seq": 3}),
        # k1 an older sequence loses, k2 NULL vs NULL: the later write, k3 a tie: the later write,
        # k4 a NULL sequence is older than any value
        _w("+U", {"k": 1, "v": "old", "seq": 4}, {"k": 2, "v": "b2", "seq": None}, {"k": 3, "v": "c2", "seq": 1},
           {"k": 4, "v": "d-null", "seq": None}),
        C(),
        _mixed(("+U", {"k": 2, "v": "b3", "seq": 0}), ("-D", {"k": 3, "v": "c", "seq": 1}),
               ("-D", {"k": 1, "v": "a", "seq": 2})),
        # within one commit: the larger sequence wins even when it comes first
        X(),
        _w("+U", {"k": 1, "v": "a9", "seq": 9}, {"k": 1, "v": "a7", "seq": 7}, {"k": 5, "v": "e", "seq": 1},
           {"k": 5, "v": "e2", "seq": 1}),
        C(),
        X(),
    ]
    sc = Scenario(java, wh, schema, ["k"], {"sequence.field": "seq", **RK, **RETAIN_3}, steps)
    assert_agree(sc.run_all())


def test_deduplicate_multi_column_sequence_field(java: PaimonJava, wh: str) -> None:
    """``sequence.field = a,b`` compares (a, b) lexicographically."""
    schema = pa.schema([KEY, ("v", pa.string()), ("a", pa.int32()), ("b", pa.timestamp("ms")), OP])
    t = pa.scalar(1_700_000_000_000, pa.timestamp("ms")).as_py()
    later = pa.scalar(1_700_000_000_001, pa.timestamp("ms")).as_py()
    steps = [
        _w("+I", {"k": 1, "v": "x", "a": 1, "b": later}, {"k": 2, "v": "y", "a": 1, "b": t}),
        _w("+U", {"k": 1, "v": "x-old", "a": 1, "b": t}, {"k": 2, "v": "y-new", "a": 2, "b": None}),
        C(),
    ]
    sc = Scenario(java, wh, schema, ["k"], {"sequence.field": "a,b", **RK}, steps)
    assert_agree(sc.run_all(("java", "lake-java", "java-lake")))


def test_sequence_field_sort_order_is_a_1x_option(java: PaimonJava, wh: str) -> None:
    """``sequence.field.sort-order = descending`` (Paimon 1.x: the smallest sequence wins) does not
    exist in Java 0.9, which keeps the option in the schema and ignores it. lake_assets follows
    1.x, so the two engines read the same files differently: this pins both behaviours."""
    schema = pa.schema([KEY, ("v", pa.string()), ("seq", pa.int64())])
    java.create_table(wh, "db.desc", schema, ["k"], options={
        "bucket": "1", "sequence.field": "seq", "sequence.field.sort-order": "descending"})
    rows = pa.Table.from_pylist([{"k": 1, "v": "small", "seq": 1}, {"k": 1, "v": "large", "seq": 9}], schema=schema)
    java.write(wh, "db.desc", rows)
    table = Catalog(wh).get_table("db.desc")
    table.write_arrow(pa.Table.from_pylist([{"k": 2, "v": "small", "seq": 1}, {"k": 2, "v": "large", "seq": 9}],
                                           schema=schema))
    # Java 0.9 files: each file holds its commit's winner, chosen by Java (ascending: "large").
    # lake_assets files: "small". Across files, each reader applies its own order again.
    assert sorted(java.read(wh, "db.desc").to_pylist(), key=repr) == [
        {"k": 1, "v": "large", "seq": 9}, {"k": 2, "v": "small", "seq": 1}]
    assert sorted(table.to_arrow().to_pylist(), key=repr) == [
        {"k": 1, "v": "large", "seq": 9}, {"k": 2, "v": "small", "seq": 1}]
    # A later write of k1 with a middle sequence: descending (1.x) lets it beat the stored 9...
    table.write_arrow(pa.Table.from_pylist([{"k": 1, "v": "mid", "seq": 5}], schema=schema))
    assert {r["k"]: r["v"] for r in table.to_arrow().to_pylist()} == {1: "mid", 2: "small"}
    # ...while Java 0.9 (ascending) keeps the stored 9.
    assert {r["k"]: r["v"] for r in java.read(wh, "db.desc").to_pylist()} == {1: "large", 2: "small"}


# ------------------------------------------------------------------------------------ partial-update

PU_SCHEMA = pa.schema([KEY, ("a", pa.string()), ("b", pa.int64()), ("c", pa.float64()), OP])


def test_partial_update_plain(java: PaimonJava, wh: str) -> None:
    """Non-null fields overwrite; NULLs keep the stored value; several updates in one commit fold."""
    steps = [
        _w("+I", {"k": 1, "a": "x", "b": 1}, {"k": 2, "c": 0.5}, {"k": 3}),
        _w("+I", {"k": 1, "b": 2, "c": 1.5}, {"k": 2, "a": "y"}, {"k": 2, "a": "z", "b": 7}),
        C(),
        _w("+I", {"k": 1, "a": "x2"}, {"k": 3, "b": 3}, {"k": 4, "a": "new"}),
        C(full=False),
        _w("+I", {"k": 4, "c": -0.0}),
    ]
    sc = Scenario(java, wh, PU_SCHEMA, ["k"], {"merge-engine": "partial-update", **RK}, steps)
    assert_agree(sc.run_all())


# A key's only record in a commit is stored as written (Java's writer emits a single buffered
# record unchanged; known disagreement 1's class, fixed): incremental reads and streams of that
# snapshot return it with its row kind and values.
LONE_RECORD_CASES = {
    # a lone +U stays +U
    "update": ({}, [_w("+I", {"k": 1, "a": "x"}), _w("+U", {"k": 1, "b": 2})]),
    # a lone -D with remove-record-on-delete stays the -D row as written (op='-D', a='x')
    "remove-on-delete": ({"partial-update.remove-record-on-delete": "true"},
                         [_w("+I", {"k": 1, "a": "x"}), _w("-D", {"k": 1, "a": "x"})]),
    # a lone record whose group sequence is NULL is stored as written (c='c' although g2 is NULL)
    "sequence-group": ({"fields.g1.sequence-group": "a,b", "fields.g2.sequence-group": "c"},
                       [_w("+I", {"k": 1, "a": "x", "g1": 1}), _w("+I", {"k": 1, "c": "c", "g2": None})]),
}


@pytest.mark.parametrize("case", sorted(LONE_RECORD_CASES))
def test_partial_update_lone_record_is_stored_as_written(java: PaimonJava, wh: str, case: str) -> None:
    options, steps = LONE_RECORD_CASES[case]
    schema = pa.schema([KEY, ("a", pa.string()), ("b", pa.int64()), ("g1", pa.int64()), ("c", pa.string()),
                        ("g2", pa.int64()), OP])
    sc = Scenario(java, wh, schema, ["k"], {"merge-engine": "partial-update", **options, **RK}, steps)
    assert_agree(sc.run_all())


def test_partial_update_ignore_delete(java: PaimonJava, wh: str) -> None:
    steps = [
        _w("+I", {"k": 1, "a": "x", "b": 1}, {"k": 2, "a": "y"}),
        _mixed(("-D", {"k": 1, "a": "x", "b": 1}), ("+I", {"k": 2, "b": 2}), ("-U", {"k": 2, "a": "y"})),
        C(),
        _mixed(("-D", {"k": 2}), ("+I", {"k": 3, "c": 3.0})),
    ]
    sc = Scenario(java, wh, PU_SCHEMA, ["k"],
                  {"merge-engine": "partial-update", "partial-update.ignore-delete": "true", **RK}, steps)
    assert_agree(sc.run_all())


def test_ignore_delete_commit_of_only_retractions(java: PaimonJava, wh: str) -> None:
    steps = [_w("+I", {"k": 1, "a": "x"}), _w("-D", {"k": 1})]
    sc = Scenario(java, wh, PU_SCHEMA, ["k"],
                  {"merge-engine": "partial-update", "partial-update.ignore-delete": "true", **RK}, steps)
    assert_agree(sc.run_all(("java", "lake")), what=("states",))


def test_partial_update_remove_record_on_delete(java: PaimonJava, wh: str) -> None:
    """A -D removes the whole row; inserts in later commits start a new row."""
    steps = [
        _w("+I", {"k": 1, "a": "x", "b": 1}, {"k": 2, "a": "y", "c": 2.0}, {"k": 3, "a": "z"}),
        _mixed(("+I", {"k": 1, "b": 5}), ("-D", {"k": 2}), ("+I", {"k": 1, "c": 9.0}), ("+I", {"k": 3, "b": 3})),
        C(),
        _mixed(("-D", {"k": 3}), ("+I", {"k": 2, "b": 22}), ("+I", {"k": 1, "a": "x3"})),
        C(),
        _w("+I", {"k": 3, "c": 1.0}),
    ]
    sc = Scenario(java, wh, PU_SCHEMA, ["k"],
                  {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true", **RK}, steps)
    assert_agree(sc.run_all())


def test_java_09_remove_record_on_delete_crashes_on_insert_after_delete(java: PaimonJava, wh: str) -> None:
    """Java 0.9 bug, pinned so the scenarios above avoid it: with
    ``partial-update.remove-record-on-delete``, a -D followed by an insert of the same key in one
    write buffer throws a NullPointerException in PartialUpdateMergeFunction (the row it nulled on
    the -D is reused). lake_assets starts a new row from the insert, as Paimon 1.x does."""
    options = {"bucket": "1", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
               **RK}
    java.create_table(wh, "db.pu", PU_SCHEMA, ["k"], options=options)
    rows = [{"k": 1, "a": "x", "op": "+I"}, {"k": 1, "op": "-D"}, {"k": 1, "b": 2, "op": "+I"}]
    with pytest.raises(JavaError) as err, java.open_writer(wh, "db.pu") as writer:
        writer.write(rows, schema=PU_SCHEMA)
        writer.commit(1)
    assert err.value.java_class == "java.lang.NullPointerException"
    table = Catalog(wh).get_table("db.pu")
    table.write_arrow(pa.Table.from_pylist(rows, schema=PU_SCHEMA))
    assert table.to_arrow().to_pylist() == [{"k": 1, "a": None, "b": 2, "c": None, "op": "+I"}]
    assert java.read(wh, "db.pu").to_pylist() == [{"k": 1, "a": None, "b": 2, "c": None, "op": "+I"}]


SG_SCHEMA = pa.schema([
    KEY, ("a", pa.string()), ("b", pa.int64()), ("g1", pa.int64()),
    ("c", pa.string()), ("total", pa.int64()), ("g2", pa.int32()), ("free", pa.string()), OP,
])
SG_OPTIONS = {
    "merge-engine": "partial-update",
    "fields.g1.sequence-group": "a,b",
    "fields.g2.sequence-group": "c,total",
    "fields.total.aggregate-function": "sum",
    **RK,
}


def test_partial_update_sequence_groups(java: PaimonJava, wh: str) -> None:
    """Each group updates only from records whose group sequence is not older; a NULL group
    sequence leaves the group alone; per-field ``sum`` inside a group; columns outside groups
    behave as plain partial-update."""
    steps = [
        _w("+I", {"k": 1, "a": "a1", "b": 1, "g1": 1, "c": "c1", "total": 10, "g2": 1, "free": "f1"},
           {"k": 2, "a": "a1", "g1": 5}),
        # k1: g1 older -> a/b stay; g2 newer -> c replaced, total summed; free replaced (non-null)
        _w("+U", {"k": 1, "a": "stale", "b": 99, "g1": 0, "c": "c2", "total": 5, "g2": 2, "free": "f2"},
           {"k": 2, "a": "a2", "b": 2, "g1": 5, "c": "only-c", "g2": None}),
        C(),
        # equal group sequence wins; an out-of-order pair inside one commit
        _w("+U", {"k": 1, "a": "a3", "g1": 1, "total": 1, "g2": 4}, {"k": 2, "a": "late", "g1": 9},
           {"k": 2, "a": "early", "g1": 7}),
        C(full=False),
    ]
    sc = Scenario(java, wh, SG_SCHEMA, ["k"], SG_OPTIONS, steps)
    assert_agree(sc.run_all())


def test_partial_update_sequence_group_retractions(java: PaimonJava, wh: str) -> None:
    """A retraction carrying a group's sequence nulls that group (and subtracts inside ``sum``);
    a retraction with an older sequence is ignored."""
    steps = [
        _w("+I", {"k": 1, "a": "a1", "b": 1, "g1": 1, "c": "c1", "total": 10, "g2": 1},
           {"k": 2, "a": "x", "b": 2, "g1": 3, "c": "y", "total": 4, "g2": 3}),
        _mixed(("+U", {"k": 1, "free": "f"}), ("-U", {"k": 1, "a": "a1", "b": 1, "g1": 2}),
               ("+U", {"k": 2, "free": "g"}), ("-D", {"k": 2, "c": "y", "total": 1, "g2": 1})),
        C(),
        _mixed(("+I", {"k": 1, "c": "c9", "total": 3, "g2": 5}), ("-U", {"k": 1, "c": "c9", "total": 2, "g2": 6})),
        C(),
    ]
    sc = Scenario(java, wh, SG_SCHEMA, ["k"], SG_OPTIONS, steps)
    assert_agree(sc.run_all())


# ------------------------------------------------------------------------------------ aggregation

AGG_SCHEMA = pa.schema([
    KEY,
    ("s", pa.int64()), ("p", pa.int64()), ("dsum", pa.decimal128(10, 2)), ("fsum", pa.float64()),
    ("mn", pa.int32()), ("mx", pa.string()), ("lv", pa.string()), ("lnn", pa.string()),
    ("fv", pa.string()), ("fnn", pa.string()), ("la", pa.string()), ("la2", pa.string()),
    ("band", pa.bool_()), ("bor", pa.bool_()), ("dflt", pa.int64()), OP,
])
AGG_FUNCTIONS = {
    "s": "sum", "p": "product", "dsum": "sum", "fsum": "sum", "mn": "min", "mx": "max", "lv": "last_value",
    "lnn": "last_non_null_value", "fv": "first_value", "fnn": "first_non_null_value", "la": "listagg",
    "la2": "listagg", "band": "bool_and", "bor": "bool_or",
}
AGG_OPTIONS = {
    "merge-engine": "aggregation",
    **{f"fields.{c}.aggregate-function": f for c, f in AGG_FUNCTIONS.items()},
    "fields.la2.list-agg-delimiter": "|",
    **RK,
}
D = decimal.Decimal


def test_aggregation_functions(java: PaimonJava, wh: str) -> None:
    """Every aggregate function of Java 0.9 (there is no ``count``), NULLs skipped, folded in
    sequence order across commits and compactions; ``dflt`` has no function (last_non_null_value).
    No blank listagg input here: Java 0.9 joins it where Paimon 2.0+ and lake_assets skip it
    (pinned in test_aggregation_reset_java.py::test_float_min_max_in_java_order_and_listagg_blanks)."""
    steps = [
        _w("+I",
           {"k": 1, "s": 1, "p": 2, "dsum": D("1.25"), "fsum": 0.5, "mn": 5, "mx": "m", "lv": "a", "lnn": "a",
            "fv": None, "fnn": None, "la": "x", "la2": "x", "band": True, "bor": False, "dflt": 1},
           {"k": 2, "s": None, "p": None, "mn": None, "lv": "keep", "band": None, "bor": None},
           {"k": 1, "s": 10, "p": 3, "dsum": D("-0.25"), "fsum": 0.25, "mn": 3, "mx": "z", "lv": None, "lnn": None,
            "fv": "first", "fnn": "fnn", "la": "y", "la2": None, "band": True, "bor": True, "dflt": None}),
        _w("+I",
           {"k": 1, "s": -4, "p": -1, "dsum": D("0.01"), "fsum": 2.0, "mn": 4, "mx": "a", "lv": "last", "lnn": "b",
            "fv": "later", "fnn": "later", "la": "z", "la2": "w", "band": False, "bor": None, "dflt": 7},
           {"k": 2, "s": 7, "p": 5, "mn": -1, "lv": None, "fnn": "x", "la": "only"}),
        C(),
        X(),
        _w("+I", {"k": 2, "s": 1, "la": "more", "band": True, "bor": False}, {"k": 3, "la": "solo"}),
        C(full=False),
    ]
    sc = Scenario(java, wh, AGG_SCHEMA, ["k"], {**AGG_OPTIONS, **RETAIN_3}, steps)
    assert_agree(sc.run_all())


def test_aggregation_retractions(java: PaimonJava, wh: str) -> None:
    """-U/-D retract where the function can (sum subtracts, product divides, last_value nulls,
    last_non_null_value nulls a non-null value); ``fields.<f>.ignore-retract`` drops them for the
    others. Each retraction shares its commit with an insert of the same key (a lone one: below)."""
    schema = pa.schema([KEY, ("s", pa.int64()), ("p", pa.int64()), ("lv", pa.string()), ("lnn", pa.string()),
                        ("mn", pa.int64()), ("mx", pa.int64()), ("fv", pa.string()), ("la", pa.string()),
                        ("bor", pa.bool_()), OP])
    functions = {"s": "sum", "p": "product", "lv": "last_value", "lnn": "last_non_null_value", "mn": "min",
                 "mx": "max", "fv": "first_value", "la": "listagg", "bor": "bool_or"}
    options = {"merge-engine": "aggregation", **RK,
               **{f"fields.{c}.aggregate-function": f for c, f in functions.items()},
               **{f"fields.{c}.ignore-retract": "true" for c in ("mn", "mx", "fv", "la", "bor")}}
    steps = [
        _w("+I", {"k": 1, "s": 10, "p": 6, "lv": "a", "lnn": "a", "mn": 5, "mx": 5, "fv": "f", "la": "x", "bor": False},
           {"k": 2, "s": 1, "p": 4, "lv": "b", "lnn": "b"}),
        _mixed(("+U", {"k": 1, "s": 1, "p": 2, "lnn": "c"}),
               ("-U", {"k": 1, "s": 3, "p": 3, "lv": "z", "lnn": "z", "mn": 1, "mx": 9, "fv": "g", "la": "y",
                       "bor": True}),
               ("+I", {"k": 2, "s": 5, "lv": None}), ("-D", {"k": 2, "s": 2, "p": 2, "lnn": None})),
        C(),
        _mixed(("+U", {"k": 1, "s": 100, "lv": "v"}), ("-U", {"k": 1, "s": 1, "lv": "v", "lnn": None})),
        C(),
    ]
    sc = Scenario(java, wh, schema, ["k"], options, steps)
    assert_agree(sc.run_all())


def test_aggregation_lone_retraction(java: PaimonJava, wh: str) -> None:
    """A commit whose only record for a key is a retraction keeps it as a -U (known disagreement 1,
    fixed): every reader then sees s=7, p=3, lnn=None, before and after compaction."""
    schema = pa.schema([KEY, ("s", pa.int64()), ("p", pa.int64()), ("lnn", pa.string()), OP])
    options = {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
               "fields.p.aggregate-function": "product", **RK}
    steps = [_w("+I", {"k": 1, "s": 10, "p": 6, "lnn": "a"}), _w("-U", {"k": 1, "s": 3, "p": 2, "lnn": "b"}), C()]
    sc = Scenario(java, wh, schema, ["k"], options, steps)
    obs = sc.run_all()
    assert_agree(obs)
    # op (last_non_null_value by default) is retracted too
    assert obs["java"].states["java"][-1] == [(1, 7, 3, None, None)]


# ------------------------------------------------------------------------------------ first-row

FR_SCHEMA = pa.schema([KEY, ("v", pa.string()), OP])


def test_first_row_with_dedicated_compaction(java: PaimonJava, wh: str) -> None:
    """first-row keeps each key's first row; with ``write-only`` writers rows become visible when a
    dedicated compaction runs (both engines read only compacted files of first-row tables)."""
    steps = [
        _w("+I", {"k": 1, "v": "first"}, {"k": 1, "v": "second"}, {"k": 2, "v": "b"}),
        C(),
        _w("+I", {"k": 1, "v": "third"}, {"k": 3, "v": "c"}),
        _w("+I", {"k": 3, "v": "c-late"}, {"k": 4, "v": "d"}),
        C(),
    ]
    sc = Scenario(java, wh, FR_SCHEMA, ["k"], {"merge-engine": "first-row", "write-only": "true", **RK}, steps)
    assert_agree(sc.run_all(), what=("states",))


def test_first_row_ignore_delete(java: PaimonJava, wh: str) -> None:
    steps = [
        _w("+I", {"k": 1, "v": "first"}),
        C(),
        _mixed(("-D", {"k": 1, "v": "first"}), ("+I", {"k": 2, "v": "b"})),
        C(),
    ]
    sc = Scenario(java, wh, FR_SCHEMA, ["k"],
                  {"merge-engine": "first-row", "first-row.ignore-delete": "true", "write-only": "true", **RK}, steps)
    assert_agree(sc.run_all(), what=("states",))


# ``ignore-delete`` is one option of every engine with three fallback keys; Paimon's Options.get
# takes the key when set, else the first fallback key set (so the key set to false wins).
IGNORE_DELETE_CASES = {
    "dedup-key-false-wins": ({}, {"ignore-delete": "false", "deduplicate.ignore-delete": "true"}),
    "dedup-other-engines-key": ({}, {"partial-update.ignore-delete": "true"}),
    "agg-key-false-wins": ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
                           {"ignore-delete": "false", "partial-update.ignore-delete": "true"}),
    "agg-first-row-key": ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
                          {"first-row.ignore-delete": "true"}),
    "agg-first-fallback-wins": ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
                                {"first-row.ignore-delete": "false", "deduplicate.ignore-delete": "true"}),
}


@pytest.mark.parametrize("case", sorted(IGNORE_DELETE_CASES))
def test_ignore_delete_fallback_keys(java: PaimonJava, wh: str, case: str) -> None:
    engine, ignore = IGNORE_DELETE_CASES[case]
    schema = pa.schema([KEY, ("v", pa.int64()), OP])
    steps = [
        _w("+I", {"k": 1, "v": 5}, {"k": 2, "v": 7}, {"k": 3, "v": 1}),
        _mixed(("-D", {"k": 1, "v": 5}), ("-U", {"k": 2, "v": 7}), ("+U", {"k": 2, "v": 8})),
        C(),
        _mixed(("-D", {"k": 3, "v": 1}), ("+I", {"k": 4, "v": 2})),
    ]
    sc = Scenario(java, wh, schema, ["k"], {**engine, **ignore, **RK}, steps)
    assert_agree(sc.run_all(), what=("states",))


def test_first_row_rows_visible_after_each_commit(java: PaimonJava, wh: str) -> None:
    """Without ``write-only`` the writer compacts level 0 on every commit, so rows are visible at
    once (known disagreement 3, fixed)."""
    steps = [_w("+I", {"k": 1, "v": "first"}), _w("+I", {"k": 1, "v": "second"}, {"k": 2, "v": "b"})]
    sc = Scenario(java, wh, FR_SCHEMA, ["k"], {"merge-engine": "first-row", **RK}, steps)
    obs = sc.run_all()
    assert_agree(obs, what=("states",))
    assert obs["java"].states["java"][0] == [(1, "first", "+I")]


# ------------------------------------------------------------------------------------ refusals

REFUSED = {
    # Java 0.9 has no count function (nor does Paimon 1.x)
    "count": {"merge-engine": "aggregation", "fields.n.aggregate-function": "count"},
    "unknown-function": {"merge-engine": "aggregation", "fields.n.aggregate-function": "no_such_function"},
    # partial-update takes aggregate functions only inside sequence groups
    "pu-agg-outside-group": {"merge-engine": "partial-update", "fields.n.aggregate-function": "sum"},
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_both_engines_refuse(java: PaimonJava, wh: str, case: str) -> None:
    """Options Java refuses when it creates or writes a table, lake_assets refuses when creating it."""
    schema = pa.schema([KEY, ("n", pa.int64()), ("g", pa.int64())])
    options = {"bucket": "1", **REFUSED[case]}
    with pytest.raises(JavaError):
        # Java checks merge options on create, or on the first write at the latest.
        java.create_table(wh, "db.java_t", schema, ["k"], options=options)
        java.write(wh, "db.java_t", [{"k": 1, "n": 1, "g": 1}], schema=schema)
    catalog = Catalog(wh)
    catalog.create_database("db")
    with pytest.raises(LakeError):
        catalog.create_table("db.lake_t", schema, primary_keys=["k"], options=options)


def test_sequence_group_with_a_key_column_is_refused_as_in_1x(java: PaimonJava, wh: str) -> None:
    """A primary-key column inside a sequence group: Java 0.9 predates the check and accepts the
    table; lake_assets refuses it as Paimon 1.x does (docs/format.md §10.1)."""
    schema = pa.schema([KEY, ("n", pa.int64()), ("g", pa.int64())])
    options = {"bucket": "1", "merge-engine": "partial-update", "fields.g.sequence-group": "k,n"}
    java.create_table(wh, "db.java_t", schema, ["k"], options=options)
    java.write(wh, "db.java_t", [{"k": 1, "n": 1, "g": 1}], schema=schema)
    assert java.read(wh, "db.java_t").to_pylist() == [{"k": 1, "n": 1, "g": 1}]
    catalog = Catalog(wh)
    with pytest.raises(OptionError, match="k"):
        catalog.create_table("db.lake_t", schema, primary_keys=["k"], options=options)


def test_aggregation_remove_record_on_delete_is_a_1x_option(java: PaimonJava, wh: str) -> None:
    """``aggregation.remove-record-on-delete`` (Paimon 1.x: a -D removes the row) does not exist in
    Java 0.9, which ignores it and retracts the -D's values through the functions. lake_assets
    follows 1.x: this pins both readings of the same files."""
    schema = pa.schema([KEY, ("s", pa.int64()), OP])
    options = {"bucket": "1", "merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
               "aggregation.remove-record-on-delete": "true", **RK}
    java.create_table(wh, "db.agg", schema, ["k"], options=options)
    java.write(wh, "db.agg", [{"k": 1, "s": 10, "op": "+I"}, {"k": 2, "s": 5, "op": "+I"}], schema=schema)
    java.write(wh, "db.agg", [{"k": 1, "s": 3, "op": "-D"}], schema=schema)
    table = Catalog(wh).get_table("db.agg")
    assert {r["k"]: r["s"] for r in java.read(wh, "db.agg").to_pylist()} == {1: 7, 2: 5}
    assert {r["k"]: r["s"] for r in table.to_arrow().to_pylist()} == {2: 5}
