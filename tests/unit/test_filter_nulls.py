"""``is null`` / ``is not null`` terms and SQL's nulls in every filter (Paimon 0.9's ``IsNull``,
``IsNotNull``, ``In``, ``NotIn`` and ``NullFalseLeafBinaryFunction`` tests): on rows, on partition
values, on file stats (null counts) and on bitmap file indexes, each pruning only files without
a match (the rows read are the same with and without pruning)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.file_index_prune import index_may_match
from lake_assets.predicate import FilterError, Predicate

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int32()), ("name", pa.string())])


def _rows(ids: range, v: Any, name: Any) -> pa.Table:
    return pa.table({"id": list(ids), "v": [v(i) for i in ids], "name": [name(i) for i in ids]}, schema=SCHEMA)


def _files(t: Any, flt: Any) -> int:
    return sum(len(s.files) for s in t.plan(filter=flt))


def _ids(t: Any, flt: Any) -> list[int]:
    return sorted(t.to_arrow(filter=flt).column("id").to_pylist())


def _reference(data: pa.Table, flt: Any) -> list[int]:
    """The ids a filter keeps, row by row, as Paimon's predicates test them."""
    pred = Predicate.of(flt)
    assert pred is not None

    def test(v: Any, op: str, lit: Any) -> bool:
        if op in ("is null", "is not null"):
            return (v is None) == (op == "is null")
        if v is None:
            return False
        if op == "in":
            return v in [x for x in lit if x is not None]
        if op == "not in":
            return None not in lit and v not in lit
        compare = {"=": lambda: v == lit, "!=": lambda: v != lit, "<": lambda: v < lit, ">": lambda: v > lit}
        return lit is not None and compare[op]()

    rows = data.to_pylist()
    return sorted(r["id"] for r in rows if any(all(test(r[c], op, lit) for c, op, lit in clause)
                                               for clause in pred.clauses))


@pytest.fixture
def three_files(catalog: Catalog) -> tuple[Any, pa.Table]:
    """An append table of three files: v never null, v null every third row, v always null."""
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1"})
    parts = [_rows(range(0, 10), lambda i: i, lambda i: f"n{i % 3}"),
             _rows(range(10, 20), lambda i: None if i % 3 == 0 else i, lambda i: None if i % 2 else "n1"),
             _rows(range(20, 30), lambda i: None, lambda i: None)]
    for part in parts:
        t.write_arrow(part)
    return t, pa.concat_tables(parts)


FILTERS: list[Any] = [
    [("v", "is null")], [("v", "is null", None)], [("v", "is not null")], [("name", "is null")],
    [("v", "in", [1, None])], [("v", "in", [None])], [("v", "not in", [1, 2])], [("v", "not in", [1, None])],
    [("v", "=", None)], [("v", "!=", None)], [("v", "<", None)], [("v", "!=", 4)], [("v", "in", [])],
    [("v", "is null"), ("name", "is not null")], [[("v", "is null")], [("v", "=", 3)]],
    [("name", "not in", ["n1"])], [("name", "in", ["n2", None])],
]


@pytest.mark.parametrize("flt", FILTERS, ids=str)
def test_reads_keep_the_rows_paimon_keeps(three_files: tuple[Any, pa.Table], flt: Any) -> None:
    t, data = three_files
    assert _ids(t, flt) == _reference(data, flt)
    assert sorted(b for batch in t.to_batches(filter=flt) for b in batch.column("id").to_pylist()) == \
        _reference(data, flt)


def test_null_counts_prune_files(three_files: tuple[Any, pa.Table]) -> None:
    t, _ = three_files
    assert _files(t, None) == 3
    assert _files(t, [("v", "is null")]) == 2  # the file with no null has null count 0
    assert _files(t, [("v", "is not null")]) == 2  # the all-null file: null count = row count
    assert _files(t, [("v", ">=", 0)]) == 2  # no comparison matches an all-null file
    assert _files(t, [("v", "not in", [1, None])]) == 0  # never true: nothing is read
    assert _files(t, [("v", "=", None)]) == 0
    assert _files(t, [("v", "in", [None])]) == 0
    assert _files(t, [[("v", "=", None)], [("v", "is null")]]) == 2
    # not in: a file whose min = max is listed has no match
    t.write_arrow(_rows(range(30, 33), lambda i: 7, lambda i: "x"))
    assert _files(t, [("v", "not in", [7, 8])]) == 2
    assert _files(t, [("v", "!=", 7)]) == 2


def test_stats_without_null_counts_prune_nothing_by_nulls() -> None:
    pred = Predicate.of([("v", "is null")])
    assert pred is not None
    assert pred.test_ranges({"v": 1}, {"v": 5}, {"v": None}, 10)  # stats mode none: unknown
    assert pred.test_ranges({"v": 1}, {"v": 5}, None, None)
    assert not pred.test_ranges({"v": 1}, {"v": 5}, {"v": 0}, 10)
    not_null = Predicate.of([("v", "is not null")])
    assert not_null is not None
    # stats mode counts: no bounds, the null count decides
    assert not not_null.test_ranges({}, {}, {"v": 10}, 10)
    assert not_null.test_ranges({}, {}, {"v": 9}, 10)
    assert not_null.test_ranges({}, {}, {"v": 10}, None)


def test_partition_values_of_null(catalog: Catalog) -> None:
    t = catalog.create_table("db.p", pa.schema([("p", pa.int32()), ("id", pa.int64())]), partition_keys=["p"])
    t.write_arrow(pa.table({"p": pa.array([1, 2, None, None], pa.int32()), "id": [1, 2, 3, 4]}))
    splits = t.plan(filter=[("p", "is null")])
    assert [s.partition_values for s in splits] == [(None,)]
    assert _ids(t, [("p", "is null")]) == [3, 4]
    assert _ids(t, [("p", "is not null")]) == [1, 2]
    assert _ids(t, [("p", "in", [1, None])]) == [1]
    assert _ids(t, [("p", "not in", [1])]) == [2]
    assert _ids(t, [("p", "not in", [1, None])]) == []
    assert _ids(t, [[("p", "=", 2)], [("p", "is null")]]) == [2, 3, 4]
    assert len(t.plan(filter=[("p", "not in", [1])])) == 1


def test_compaction_of_the_partition_of_nulls(catalog: Catalog) -> None:
    """``partitions=[{"p": None}]`` names the partition of nulls (an ``is null`` term: ``= None``
    matches nothing)."""
    t = catalog.create_table("db.c", pa.schema([("p", pa.int32()), ("id", pa.int64())]), partition_keys=["p"],
                             options={"bucket": "-1"})
    for k in range(6):
        t.write_arrow(pa.table({"p": pa.array([None, 7], pa.int32()), "id": [2 * k, 2 * k + 1]}))
    assert t.compact(full=True, partitions=[{"p": None}]).files_in == 6
    assert [len(s.files) for s in t.plan(filter=[("p", "is null")])] == [1]
    assert [len(s.files) for s in t.plan(filter=[("p", "=", 7)])] == [6]
    assert _ids(t, [("p", "is null")]) == [0, 2, 4, 6, 8, 10]


def test_bucket_pruning_ignores_null_literals(catalog: Catalog) -> None:
    t = catalog.create_table("db.b", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "4"})
    t.write_arrow(pa.table({"k": list(range(40)), "v": list(range(40))}))
    assert len(t.plan(filter=[("k", "in", [3, None])])) == 1
    assert _ids_of(t, [("k", "in", [3, None])]) == [3]
    assert t.to_arrow(filter=[("k", "=", None)]).num_rows == 0


def _ids_of(t: Any, flt: Any) -> list[int]:
    return sorted(t.to_arrow(filter=flt).column("k").to_pylist())


def test_primary_key_tables_never_prune_values_by_nulls(catalog: Catalog) -> None:
    """A newer version of a key hides an older null: the file holding the null matches
    ``is null`` by its stats, but the merged row does not."""
    t = catalog.create_table("db.pk", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", "file-index.bitmap.columns": "v"})
    t.write_arrow(pa.table({"k": [1, 2], "v": pa.array([None, None], pa.int64())}))
    t.write_arrow(pa.table({"k": [1], "v": [5]}))
    assert _ids_of(t, [("v", "is null")]) == [2]
    assert _ids_of(t, [("v", "is not null")]) == [1]
    assert _ids_of(t, [("v", "not in", [7])]) == [1]


def test_bitmaps_prune_null_tests_by_rows(catalog: Catalog) -> None:
    """Stats cannot tell that a file's null names and its grp = 3 rows are different rows; its
    bitmaps (Java 0.9's visitIsNull / visitIsNotNull) can."""
    schema = pa.schema([("grp", pa.int32()), ("name", pa.string()), ("id", pa.int64())])
    t = catalog.create_table("db.bm", schema, options={"bucket": "-1", "file-index.bitmap.columns": "grp,name"})
    t.write_arrow(pa.table({"grp": [3, 3, 4, 4], "name": ["a", "b", None, None], "id": [0, 1, 2, 3]}, schema=schema))
    t.write_arrow(pa.table({"grp": [3, 4], "name": [None, "c"], "id": [4, 5]}, schema=schema))
    t.write_arrow(pa.table({"grp": [5, 5], "name": pa.array([None, None], pa.string()), "id": [6, 7]}, schema=schema))

    def verdicts(flt: Any) -> list[bool]:
        pred = Predicate.of(flt)
        assert pred is not None
        entries = sorted(t.store.file_store_scan().live_entries(t.latest_snapshot()),
                         key=lambda e: e.file.min_sequence_number)
        return [index_may_match(t.store, e, pred, t.schema) for e in entries]

    assert verdicts([("grp", "=", 3), ("name", "is null")]) == [False, True, False]
    assert verdicts([("grp", "=", 4), ("name", "is not null")]) == [False, True, False]
    assert verdicts([("name", "is not null")]) == [True, True, False]
    assert verdicts([("name", "is null")]) == [True, True, True]
    # != / not in: the rows holding none of the literals, null rows left out (they never match)
    assert verdicts([("grp", "=", 4), ("name", "!=", "zz")]) == [False, True, False]
    assert verdicts([("grp", "=", 3), ("name", "not in", ["a", "b"])]) == [False, False, False]
    # an in list's null looks nothing up (Java's would look up the null rows: it keeps more)
    assert verdicts([("grp", "=", 4), ("name", "in", ["c", None])]) == [False, True, False]
    assert verdicts([("name", "not in", ["a", None])]) == [False, False, False]
    for flt in ([("grp", "=", 3), ("name", "is null")], [("grp", "=", 4), ("name", "in", ["c", None])],
                [("name", "is not null")]):
        assert _files(t, flt) <= sum(verdicts(flt))  # stats may prune more, never less
        rows = pa.table({"grp": [3, 3, 4, 4, 3, 4, 5, 5], "name": ["a", "b", None, None, None, "c", None, None],
                         "id": list(range(8))}, schema=schema)
        assert sorted(t.to_arrow(filter=flt).column("id").to_pylist()) == _reference_rows(rows, flt)


def _reference_rows(rows: pa.Table, flt: Any) -> list[int]:
    out = []
    for r in rows.to_pylist():
        ok = True
        for c, op, *lit in flt:
            v = r[c]
            if op == "is null":
                ok &= v is None
            elif op == "is not null":
                ok &= v is not None
            elif op == "=":
                ok &= v is not None and v == lit[0]
            elif op == "in":
                ok &= v is not None and v in [x for x in lit[0] if x is not None]
        if ok:
            out.append(r["id"])
    return out


@pytest.mark.parametrize(("flt", "match"), [
    ([("v", "is null", 1)], "'is null' takes no value"),
    ([("v", "=")], "'=' needs a value"),
    ([("v", "is nul")], "Bad filter term"),
    ([("v", "not in", None)], "'not in' on 'v' needs a list"),
])
def test_malformed_null_tests(three_files: tuple[Any, pa.Table], flt: Any, match: str) -> None:
    t, _ = three_files
    with pytest.raises(FilterError, match=match):
        t.to_arrow(filter=flt)


def test_expression_of_a_null_test() -> None:
    pred = Predicate.of([[("v", "is null")], [("v", "not in", [1])]])
    assert pred is not None
    data = pa.table({"v": pa.array([1, None, 2], pa.int32())})
    assert data.filter(pred.to_expression()).column("v").to_pylist() == [None, 2]
    assert pred.filter_table(data).column("v").to_pylist() == [None, 2]
