"""collect, merge_map, nested_update and nested_partial_update (issue 14): the vectorized folds
against a per-record reference fold written from Paimon 1.x's Java classes, the 1.x behaviours
Java 0.9 lacks, and the option checks. Java 0.9 itself: tests/differential/test_collection_aggregates_java.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError, LakeError, OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge import sort_for_merge
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.options import CoreOptions

INS, UB, UA, DEL = 0, 1, 2, 3
KEY = pa.field("k", pa.int64(), nullable=False)
ROW = pa.struct([("id", pa.int32()), ("v", pa.string()), ("s", pa.int32())])
TYPES = {
    "collect": pa.list_(pa.int32()),
    "merge_map": pa.map_(pa.string(), pa.int32()),
    "nested_update": pa.list_(ROW),
    "nested_partial_update": pa.list_(ROW),
}
HYPO = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def merge_column(func: str, options: Mapping[str, str], records: Sequence[tuple[int, int, Any]],
                 dtype: pa.DataType | None = None) -> dict[int, Any]:
    """Each key's merged value of column ``c`` (aggregate function ``func``) over (key, kind, value)
    records in arrival order, merged by the aggregation engine."""
    dtype = dtype or TYPES[func]
    schema = pa.schema([KEY, ("c", dtype)])
    fn = Aggregation([(f.name, f.type) for f in schema], ["k"],
                     CoreOptions({"fields.c.aggregate-function": func, **options}))
    t = pa.Table.from_pylist([{"k": k, "c": v} for k, _, v in records], schema=schema)
    t = t.append_column("_SEQUENCE_NUMBER", pa.array(range(len(records)), type=pa.int64()))
    t = t.append_column("_VALUE_KIND", pa.array([kind for _, kind, _ in records], type=pa.int8()))
    merged = fn.merge(sort_for_merge(t, ["k"]), ["k"])
    return {r["k"]: r["c"] for r in merged.to_pylist()}


# ------------------------------------------------------------- the reference: Java, record by record
# Written from Paimon 1.x's FieldCollectAgg, FieldMergeMapAgg, FieldNestedUpdateAgg and
# FieldNestedPartialUpdateAgg, with one deliberate change: results ordered by first appearance
# (Python lists and dicts) where Java's come out of a HashSet/HashMap.

Value = Any


def _collect(distinct: bool) -> tuple[Callable[[Value, Value], Value], Callable[[Value, Value], Value]]:
    def agg(acc: Value, v: Value) -> Value:
        if acc is None and v is None:
            return None
        if not distinct:
            return list(v) if acc is None else list(acc) if v is None else acc + v
        out = list(acc or [])
        for e in v or []:
            if e not in out:
                out.append(e)
        return out

    def retract(acc: Value, v: Value) -> Value:
        if acc is None or v is None:
            return acc
        remaining, out = list(v), []
        for e in acc:
            if e in remaining:
                remaining.remove(e)
            else:
                out.append(e)
        return out

    return agg, retract


def _merge_map() -> tuple[Callable[[Value, Value], Value], Callable[[Value, Value], Value]]:
    def agg(acc: Value, v: Value) -> Value:
        if acc is None or v is None:
            return v if acc is None else acc
        out = dict(acc)
        out.update(dict(v))
        return list(out.items())

    def retract(acc: Value, v: Value) -> Value:
        if acc is None or v is None:
            return acc
        gone = {key for key, _ in v}
        return [(key, x) for key, x in acc if key not in gone]

    return agg, retract


def _nested(key: Sequence[str], seq: Sequence[str], limit: int, nulls: str
            ) -> tuple[Callable[[Value, Value], Value], Callable[[Value, Value], Value]]:
    def key_of(row: dict[str, Any]) -> tuple[Any, ...] | None:
        k = tuple(row[f] for f in key)
        if None in k and nulls == "ignore":
            return None
        return k

    def seq_of(row: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
        return tuple((row[f] is not None, row[f] or 0) for f in seq)  # nulls first

    def agg(acc: Value, v: Value) -> Value:
        if v is None:
            return acc
        if not key:
            rows = [r for r in acc or []]
            for r in v:
                if r is not None and len(rows) < limit:
                    rows.append(r)
            return rows
        held: dict[Any, dict[str, Any]] = {}
        for new_keys, rows in ((False, acc or []), (True, v)):
            for r in rows:
                k = None if r is None else key_of(r)
                if k is None:
                    continue
                if k in held:
                    if not seq or seq_of(r) >= seq_of(held[k]):
                        held[k] = r
                elif not new_keys or len(held) < limit:
                    held[k] = r
        return list(held.values())

    def retract(acc: Value, v: Value) -> Value:
        if acc is None or v is None:
            return acc
        if not key:
            rows = [r for r in acc if r is not None]
            for r in v:
                if r is not None:
                    rows = [x for x in rows if x != r]
            return rows
        gone = {key_of(r) for r in v if r is not None}
        return [r for r in acc if r is not None and key_of(r) is not None and key_of(r) not in gone]

    return agg, retract


def _nested_partial(key: Sequence[str]) -> tuple[Callable[[Value, Value], Value], Callable[[Value, Value], Value]]:
    def agg(acc: Value, v: Value) -> Value:
        if v is None:
            return acc
        held: dict[Any, dict[str, Any]] = {}
        for r in [*(acc or []), *v]:
            if r is None:
                continue
            row = held.setdefault(tuple(r[f] for f in key), {f: None for f in r})
            row.update({f: x for f, x in r.items() if x is not None})
        return list(held.values())

    def retract(acc: Value, v: Value) -> Value:
        raise AssertionError("nested_partial_update cannot retract")

    return agg, retract


def reference(fold: tuple[Callable[[Value, Value], Value], Callable[[Value, Value], Value]],
              records: Sequence[tuple[int, int, Any]]) -> dict[int, Any]:
    """Java's fold, record by record from a null accumulator; a key's only record as written."""
    agg, retract = fold
    by_key: dict[int, list[tuple[int, Any]]] = {}
    for k, kind, v in records:
        by_key.setdefault(k, []).append((kind, v))
    out = {}
    for k, recs in by_key.items():
        if len(recs) == 1:
            out[k] = recs[0][1]
            continue
        acc = None
        for kind, v in recs:
            acc = retract(acc, v) if kind in (UB, DEL) else agg(acc, v)
        out[k] = acc
    return out


# ------------------------------------------------------------------------------ generated records

INTS = st.one_of(st.none(), st.integers(0, 3))
ROWS = st.one_of(st.none(), st.fixed_dictionaries({"id": INTS, "v": st.sampled_from([None, "x", "y"]), "s": INTS}))
VALUES = {
    "collect": st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 2)), max_size=5)),
    "merge_map": st.one_of(st.none(), st.dictionaries(st.sampled_from("abcd"), INTS, max_size=4).map(
        lambda d: list(d.items()))),
    "nested_update": st.one_of(st.none(), st.lists(ROWS, max_size=4)),
}


def _records(func: str, retractions: bool = True) -> st.SearchStrategy[list[tuple[int, int, Any]]]:
    kinds = st.sampled_from([INS, INS, UA, UB, DEL] if retractions else [INS, UA])
    return st.lists(st.tuples(st.integers(0, 3), kinds, VALUES[func]), min_size=1, max_size=24)


def _rows_without_null_ids(rows: Value) -> Value:
    return rows if rows is None else [r for r in rows if r is None or r["id"] is not None]


@settings(HYPO, max_examples=150)
@given(records=_records("collect"), distinct=st.booleans())
def test_collect_equals_the_reference(records: list[tuple[int, int, Any]], distinct: bool) -> None:
    got = merge_column("collect", {"fields.c.distinct": str(distinct).lower()}, records)
    assert got == reference(_collect(distinct), records)


@HYPO
@given(records=_records("merge_map"))
def test_merge_map_equals_the_reference(records: list[tuple[int, int, Any]]) -> None:
    got = merge_column("merge_map", {}, records)
    assert got == reference(_merge_map(), records)


NESTED_CASES = {
    "no key": ({}, (), (), 2**31 - 1, "merge"),
    "no key, limit 3": ({"fields.c.count-limit": "3"}, (), (), 3, "merge"),
    "key id": ({"fields.c.nested-key": "id"}, ("id",), (), 2**31 - 1, "merge"),
    "key id,v with sequence s, ignore null keys": (
        {"fields.c.nested-key": "id, v", "fields.c.nested-sequence-field": "s",
         "fields.c.nested-key-null-strategy": "ignore"}, ("id", "v"), ("s",), 2**31 - 1, "ignore"),
    "key id, limit 2": ({"fields.c.nested-key": "id", "fields.c.count-limit": "2"}, ("id",), (), 2, "merge"),
}


@pytest.mark.parametrize("case", sorted(NESTED_CASES))
@HYPO
@given(records=_records("nested_update"))
def test_nested_update_equals_the_reference(case: str, records: list[tuple[int, int, Any]]) -> None:
    options, key, seq, limit, nulls = NESTED_CASES[case]
    got = merge_column("nested_update", options, records)
    assert got == reference(_nested(key, seq, limit, nulls), records)


@HYPO
@given(records=_records("nested_update", retractions=False))
def test_nested_partial_update_equals_the_reference(records: list[tuple[int, int, Any]]) -> None:
    records = [(k, kind, _rows_without_null_ids(v)) for k, kind, v in records]
    got = merge_column("nested_partial_update", {"fields.c.nested-key": "id"}, records)
    assert got == reference(_nested_partial(("id",)), records)


# ------------------------------------------------------------------------------- hand-checked cases


def test_collect_retracts_the_oldest_equal_elements_and_null_retractions_do_nothing() -> None:
    got = merge_column("collect", {}, [
        (1, INS, [1, 2, 2, None, 3]), (1, UB, [2, None, 9]), (1, UB, None), (1, INS, [2]),
        (2, UB, [1]), (2, INS, [1]),  # a retraction before any array finds a null accumulator
        (3, INS, None), (3, INS, []),
    ])
    assert got == {1: [1, 2, 3, 2], 2: [1], 3: []}


def test_distinct_collect_compares_values_of_every_type() -> None:
    """Binary elements compare by content (Java 0.9: by identity, never equal; 1.x: content),
    NaN equals NaN and -0.0 differs from 0.0 (Java's Double.equals), ROWs and ARRAYs by value."""
    nan = float("nan")
    got = merge_column("collect", {"fields.c.distinct": "true"},
                       [(1, INS, [b"a", b"b"]), (1, INS, [b"a", None, None])], pa.list_(pa.binary()))
    assert got == {1: [b"a", b"b", None]}
    got = merge_column("collect", {"fields.c.distinct": "true"},
                       [(1, INS, [nan, 0.0]), (1, INS, [nan, -0.0, 0.0])], pa.list_(pa.float64()))
    assert [str(x) for x in got[1]] == ["nan", "0.0", "-0.0"]
    nested = pa.list_(pa.list_(pa.int32()))
    got = merge_column("collect", {"fields.c.distinct": "true"},
                       [(1, INS, [[1, 2], [], None]), (1, INS, [[1, 2], [2, 1], [], None]), (1, UB, [[]])], nested)
    assert got == {1: [[1, 2], None, [2, 1]]}


def test_merge_map_binary_keys_compare_by_content() -> None:
    dtype = pa.map_(pa.binary(), pa.int32())
    got = merge_column("merge_map", {}, [(1, INS, [(b"k", 1)]), (1, INS, [(b"k", 2), (b"j", 3)]),
                                         (1, UB, [(b"j", 0)])], dtype)
    assert got == {1: [(b"k", 2)]}


def test_nested_update_drops_null_rows_and_applies_null_key_strategies() -> None:
    """1.x: NULL elements are skipped (0.9 keeps them without a nested key, throws with one)."""
    recs = [(1, INS, [{"id": 1, "v": "a", "s": 0}, None]), (1, INS, [{"id": None, "v": "n", "s": 0}, None])]
    assert merge_column("nested_update", {}, recs) == {1: [{"id": 1, "v": "a", "s": 0},
                                                           {"id": None, "v": "n", "s": 0}]}
    assert merge_column("nested_update", {"fields.c.nested-key": "id"}, recs) == {
        1: [{"id": 1, "v": "a", "s": 0}, {"id": None, "v": "n", "s": 0}]}
    ignore = {"fields.c.nested-key": "id", "fields.c.nested-key-null-strategy": "IGNORE"}
    assert merge_column("nested_update", ignore, recs) == {1: [{"id": 1, "v": "a", "s": 0}]}
    error = {"fields.c.nested-key": "id", "fields.c.nested-key-null-strategy": "error"}
    with pytest.raises(InvalidDataError, match=r"'c'.*Nested key contains null values"):
        merge_column("nested_update", error, recs)


def test_nested_update_sequence_field_and_count_limit() -> None:
    opts = {"fields.c.nested-key": "id", "fields.c.nested-sequence-field": "s", "fields.c.count-limit": "2"}
    recs = [
        (1, INS, [{"id": 1, "v": "new", "s": 5}, {"id": 2, "v": "b", "s": None}]),
        (1, INS, [{"id": 1, "v": "old", "s": 4}, {"id": 3, "v": "refused", "s": 0}, {"id": 2, "v": "b2", "s": 0}]),
        # a retraction frees room for a new key (the sequential path of count-limit with retractions)
        (2, INS, [{"id": 1, "v": "a", "s": 0}, {"id": 2, "v": "b", "s": 0}]),
        (2, UB, [{"id": 1, "v": None, "s": None}]),
        (2, INS, [{"id": 3, "v": "c", "s": 0}, {"id": 4, "v": "refused", "s": 0}]),
    ]
    assert merge_column("nested_update", opts, recs) == {
        1: [{"id": 1, "v": "new", "s": 5}, {"id": 2, "v": "b2", "s": 0}],
        2: [{"id": 2, "v": "b", "s": 0}, {"id": 3, "v": "c", "s": 0}],
    }


def test_collections_in_partial_update_sequence_groups() -> None:
    """A grouped collect/merge_map folds in group-sequence order; a -D nulls nothing (it retracts)."""
    schema = pa.schema([KEY, ("g", pa.int64()), ("c", TYPES["collect"]), ("m", TYPES["merge_map"])])
    fn = PartialUpdate([(f.name, f.type) for f in schema], ["k"], CoreOptions({
        "fields.g.sequence-group": "c,m", "fields.c.aggregate-function": "collect",
        "fields.m.aggregate-function": "merge_map"}))
    rows = [{"k": 1, "g": 1, "c": [1], "m": [("a", 1)]}, {"k": 1, "g": 2, "c": [2, 1], "m": [("b", 2)]},
            {"k": 1, "g": 3, "c": [1], "m": [("a", 0)]}]
    t = pa.Table.from_pylist(rows, schema=schema)
    t = t.append_column("_SEQUENCE_NUMBER", pa.array([0, 1, 2], type=pa.int64()))
    t = t.append_column("_VALUE_KIND", pa.array([INS, INS, UB], type=pa.int8()))
    (row,) = fn.merge(sort_for_merge(t, ["k"]), ["k"]).to_pylist()
    assert (row["g"], row["c"], row["m"]) == (3, [2, 1], [("b", 2)])


# ---------------------------------------------------------------------------------- option checks

NESTED = pa.schema([KEY, ("n", pa.list_(ROW)), ("l", pa.string())])


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"fields.n.aggregate-function": "nested_update", "fields.n.nested-key": "id,nope"}, OptionError,
     r"fields\.n\.nested-key.*'nope'"),
    ({"fields.n.aggregate-function": "nested_update", "fields.n.nested-sequence-field": "s"}, OptionError,
     r"fields\.n\.nested-sequence-field' requires 'fields\.n\.nested-key"),
    ({"fields.n.aggregate-function": "nested_update", "fields.n.nested-key-null-strategy": "ignore"}, OptionError,
     r"fields\.n\.nested-key-null-strategy' requires 'fields\.n\.nested-key"),
    ({"fields.n.aggregate-function": "nested_update", "fields.n.nested-key": "id",
      "fields.n.nested-key-null-strategy": "skip"}, OptionError, r"nested-key-null-strategy.*skip"),
    ({"fields.n.aggregate-function": "nested_partial_update"}, OptionError, r"needs 'fields\.n\.nested-key'"),
    ({"fields.l.aggregate-function": "listagg", "fields.l.distinct": "true"}, UnsupportedFeatureError,
     r"fields\.l\.distinct.*listagg.*not implemented"),
    ({"fields.l.aggregate-function": "merge_map"}, OptionError, r"merge map column must be 'MAP'"),
])
def test_bad_options_fail_at_create_and_alter(tmp_path: Any, options: dict[str, str], error: type[LakeError],
                                              message: str) -> None:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    base = {"bucket": "1", "merge-engine": "aggregation"}
    with pytest.raises(error, match=message):
        catalog.create_table("db.t", NESTED, primary_keys=["k"], options={**base, **options})
    assert not catalog.table_exists("db.t")
    table = catalog.create_table("db.t", NESTED, primary_keys=["k"], options=base)
    with pytest.raises(error, match=message):
        change = table.update_schema()
        for key, value in options.items():
            change = change.set_option(key, value)
        change.commit()
    assert catalog.get_table("db.t").schema.options == table.schema.options


# ------------------------------------------------------------------------- merge_map_with_keytime

TIMED = pa.struct([("v", pa.string()), ("ts", pa.string())])
KEYTIME = pa.map_(pa.string(), TIMED)


def _keytime() -> tuple[Callable[[Value, Value], Value], Callable[[Value, Value], Value]]:
    """Paimon 1.x's FieldMergeMapWithKeyTimeAgg (the first map as it is; keys in first-appearance order)."""
    def agg(acc: Value, v: Value) -> Value:
        if acc is None or v is None:
            return v if acc is None else acc
        held = dict(acc)
        for key, row in v:
            if row is None:
                held.pop(key, None)
            elif row["ts"] is None:
                continue
            elif held.get(key) is None or held[key]["ts"] is None or row["ts"] > held[key]["ts"]:
                held[key] = row
        return list(held.items())

    def retract(acc: Value, v: Value) -> Value:
        raise AssertionError("merge_map_with_keytime cannot retract")

    return agg, retract


TIMED_ROWS = st.one_of(st.none(), st.fixed_dictionaries({
    "v": st.sampled_from([None, "p", "q"]), "ts": st.sampled_from([None, "2024-01", "2024-02", "2025-01"])}))
KEYTIME_VALUES = st.one_of(st.none(), st.dictionaries(st.sampled_from("abc"), TIMED_ROWS, max_size=3).map(
    lambda d: list(d.items())))


@HYPO
@given(records=st.lists(st.tuples(st.integers(0, 3), st.sampled_from([INS, UA]), KEYTIME_VALUES),
                        min_size=1, max_size=24))
def test_merge_map_with_keytime_equals_the_reference(records: list[tuple[int, int, Any]]) -> None:
    got = merge_column("merge_map_with_keytime", {}, records, KEYTIME)
    assert got == reference(_keytime(), records)


def test_merge_map_with_keytime_by_hand() -> None:
    def r(v: str | None, ts: str | None) -> dict[str, Any]:
        return {"v": v, "ts": ts}

    got = merge_column("merge_map_with_keytime", {}, [
        (1, INS, [("a", r("old", None)), ("b", r("b1", "2024-05")), ("c", None)]),  # the first map as it is
        (1, INS, [("a", r("new", "2024-01")), ("b", r("b0", "2024-04")), ("c", r("c1", None))]),
        (1, INS, [("b", r("b2", "2024-05")), ("d", r("d", "1999"))]),  # an equal time loses
        (1, INS, [("d", None)]),  # a NULL value removes the key
    ], KEYTIME)
    assert got == {1: [("a", r("new", "2024-01")), ("b", r("b1", "2024-05")), ("c", None)]}
    # ts-field names the time field; another type than a string is refused (Java: ClassCastException)
    two = pa.map_(pa.int32(), pa.struct([("t", pa.string()), ("v", pa.string())]))
    got = merge_column("merge_map_with_keytime", {"fields.c.ts-field": "t"},
                       [(1, INS, [(1, {"t": "2", "v": "x"})]), (1, INS, [(1, {"t": "1", "v": "y"})])], two)
    assert got == {1: [(1, {"t": "2", "v": "x"})]}
    with pytest.raises(OptionError, match=r"time field 'ts' must be a string"):
        merge_column("merge_map_with_keytime", {}, [], pa.map_(pa.string(), pa.struct([("v", pa.string()),
                                                                                          ("ts", pa.int64())])))
    with pytest.raises(OptionError, match=r"Timestamp field 'nope' not found"):
        merge_column("merge_map_with_keytime", {"fields.c.ts-field": "nope"}, [], KEYTIME)
    with pytest.raises(OptionError, match=r"must have at least 2 fields"):
        merge_column("merge_map_with_keytime", {}, [], pa.map_(pa.string(), pa.struct([("ts", pa.string())])))
    with pytest.raises(InvalidDataError, match=r"cannot retract"):
        merge_column("merge_map_with_keytime", {}, [(1, INS, [("a", r("x", "1"))]), (1, UB, [("a", r("x", "1"))])],
                     KEYTIME)


def test_row_deduplicate_changelog_compares_arrays_and_maps(tmp_path: Any) -> None:
    """``changelog-producer.row-deduplicate`` compares the old and new rows of a key: with ARRAY and
    MAP columns too (Arrow's equal has no kernel for them). A distinct collect that gains nothing
    produces no -U/+U pair; one that gains an element does."""
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([KEY, ("c", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.int32()))])
    table = catalog.create_table("db.t", schema, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "changelog-producer": "lookup",
        "changelog-producer.row-deduplicate": "true", "fields.c.aggregate-function": "collect",
        "fields.c.distinct": "true", "fields.m.aggregate-function": "merge_map"})

    def write_and_changes(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        table.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        latest = table.snapshot_manager.latest_id() or 0
        changes = table.read_changes(latest - 1, latest).to_pylist()
        return sorted((r["_row_kind"], r["k"], tuple(r["c"]), tuple(r["m"])) for r in changes)

    assert write_and_changes([{"k": 1, "c": ["a"], "m": [("x", 1)]}, {"k": 2, "c": ["b"], "m": []}]) == [
        ("+I", 1, ("a",), (("x", 1),)), ("+I", 2, ("b",), ())]
    assert write_and_changes([{"k": 1, "c": ["a"], "m": [("x", 1)]}, {"k": 2, "c": ["c"], "m": []}]) == [
        ("+U", 2, ("b", "c"), ()), ("-U", 2, ("b",), ())]
