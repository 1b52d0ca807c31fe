"""A tuple filter is applied to rows by compute kernels, not by Arrow's expression engine (whose
module imports pyarrow.dataset): the rows it keeps are the rows Paimon 0.9's predicates keep
(``LeafFunction.test``, written out row by row here: SQL's nulls, ``Double.compare`` for floats),
over seeded random data of every type a filter compares, nulls, all operators (``is null`` /
``is not null`` too) and OR of ANDs.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_assets.predicate import FilterError, Predicate

OPS = ["=", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]
ROWS = 300
UTC = dt.UTC


def _values(rng: random.Random) -> dict[str, tuple[pa.DataType, list[Any]]]:
    """Columns of few distinct values (so that = and in match rows), about 10% nulls."""
    def pick(pool: list[Any]) -> list[Any]:
        return [None if rng.random() < 0.1 else rng.choice(pool) for _ in range(ROWS)]

    day = dt.date(2024, 1, 1)
    moment = dt.datetime(2024, 1, 1, 12)
    return {
        "i8": (pa.int8(), pick([-128, -1, 0, 5, 127])),
        "i32": (pa.int32(), pick([-(2**31), -7, 0, 7, 2**31 - 1])),
        "i64": (pa.int64(), pick([-(2**63), -3, 0, 3, 2**40, 2**63 - 1])),
        "u16": (pa.uint16(), pick([0, 1, 300, 65535])),
        "f64": (pa.float64(), pick([math.nan, 0.0, -0.0, math.inf, -math.inf, 1.5, -2.5])),
        "f32": (pa.float32(), pick([math.nan, 0.0, -0.0, math.inf, 0.25])),
        "s": (pa.string(), pick(["", "a", "ab", "b", "é", "zz"])),
        "ls": (pa.large_string(), pick(["x", "y", "xy"])),
        "bin": (pa.binary(), pick([b"", b"\x00", b"\xff", b"ab"])),
        "b": (pa.bool_(), pick([True, False])),
        "d": (pa.date32(), pick([day, day + dt.timedelta(days=1), dt.date(1970, 1, 1)])),
        "ts": (pa.timestamp("us"), pick([moment, moment + dt.timedelta(microseconds=1), dt.datetime(1969, 12, 31)])),
        "tz": (pa.timestamp("us", tz="UTC"), pick([moment.replace(tzinfo=UTC), dt.datetime(2000, 1, 1, tzinfo=UTC)])),
        "dec": (pa.decimal128(10, 2), pick([decimal.Decimal("0.00"), decimal.Decimal("1.25"),
                                           decimal.Decimal("-99999999.99")])),
    }


def _table(rng: random.Random) -> tuple[pa.Table, dict[str, list[Any]]]:
    cols = _values(rng)
    data = pa.table({name: pa.array(vals, typ) for name, (typ, vals) in cols.items()})
    # a dictionary-encoded string column, as a file read may give one, in two chunks
    words = data.column("s").combine_chunks().dictionary_encode()
    data = data.append_column("dict", pa.chunked_array([words.slice(0, 100), words.slice(100)]))
    # rows are compared by number: NaN values make equal tables compare unequal
    data = data.append_column("row", pa.array(range(data.num_rows), pa.int64()))
    pools = {name: sorted({v for v in vals if v is not None}, key=repr) for name, (_, vals) in cols.items()}
    pools["dict"] = pools["s"]
    return data, pools


def _literal(rng: random.Random, name: str, pool: list[Any]) -> Any:
    """A value of the column, None, or a number of the other kind for a numeric column."""
    r = rng.random()
    if r < 0.06:
        return None
    if r < 0.2 and name.startswith(("i", "u")):
        # a float literal on an integer column: between two of its values, one of them, beyond
        return rng.choice([1.5, -0.5, -3.0, 2.0**40, 0.0, 1e30, -math.inf])
    if r < 0.3 and name.startswith("f"):
        return rng.choice([1, -3, 0])  # an int literal on a float column
    return rng.choice(pool)


def _term(rng: random.Random, pools: dict[str, list[Any]]) -> tuple[str, ...]:
    name = rng.choice(sorted(pools))
    op = rng.choice(OPS)
    if op in ("is null", "is not null"):
        return (name, op)
    if op in ("in", "not in"):
        return name, op, [_literal(rng, name, pools[name]) for _ in range(rng.randint(1, 3))]
    return name, op, _literal(rng, name, pools[name])


def _order_key(v: Any) -> Any:
    """Java's ``compareTo`` order of a value: for floats ``Double.compare`` (NaN equal to NaN and
    the greatest, -0.0 below 0.0), written out independently of `float_code`."""
    if isinstance(v, float):
        return (1, 0.0, 0.0) if math.isnan(v) else (0, v, math.copysign(1.0, v))
    return v


def _java_test(v: Any, op: str, lit: Any, typ: pa.DataType) -> bool:
    """Paimon 0.9's ``LeafFunction.test`` of one value: ``IsNull`` / ``IsNotNull``; a null value
    or a null literal fails every comparison (``NullFalseLeafBinaryFunction``); ``In`` skips
    null literals, ``NotIn`` fails on one. Literals are converted as ``convertJavaObject`` does
    (exact for the integral floats on integer columns generated here): ``longValue``,
    ``doubleValue``, ``floatValue``."""
    if op == "is null":
        return v is None
    if op == "is not null":
        return v is not None
    if v is None:
        return False
    lits = list(lit) if op in ("in", "not in") else [lit]
    convert: Any = None
    if pa.types.is_integer(typ):
        convert = None  # exact: a float between two integers equals neither
    elif pa.types.is_float32(typ):
        convert = lambda x: float(np.float32(x))  # noqa: E731
    elif pa.types.is_float64(typ):
        convert = float
    if convert is not None:
        lits = [None if x is None else convert(x) for x in lits]
    # integers against numbers: Python compares them exactly (1.5 lies between 1 and 2)
    key = (lambda y: y) if pa.types.is_integer(typ) else _order_key
    if op == "in":
        return any(x is not None and key(v) == key(x) for x in lits)
    if op == "not in":
        return all(x is not None and key(v) != key(x) for x in lits)
    (x,) = lits
    if x is None:
        return False
    a, b = key(v), key(x)
    return {"=": a == b, "==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _expected_rows(pred: Predicate, data: pa.Table) -> list[int]:
    """The rows Paimon's predicate keeps: OR of ANDs of `_java_test`, row by row."""
    columns = {name: data.column(name).to_pylist() for name in pred.columns}
    types = {name: data.schema.field(name).type for name in pred.columns}
    return [row for row in range(data.num_rows)
            if any(all(_java_test(columns[c][row], op, lit, types[c]) for c, op, lit in clause)
                   for clause in pred.clauses)]


def _check(pred: Predicate, data: pa.Table) -> None:
    """The kernels keep Paimon's rows."""
    got = pred.bind(data.schema, "t").filter_table(data)
    assert got.column("row").to_pylist() == _expected_rows(pred, data), pred.clauses
    assert got.schema == data.schema


@pytest.mark.parametrize("seed", range(40))
def test_the_kernels_keep_the_rows_paimon_keeps(seed: int) -> None:
    rng = random.Random(seed)
    data, pools = _table(rng)
    for _ in range(25):
        clauses = [[_term(rng, pools) for _ in range(rng.randint(1, 3))] for _ in range(rng.randint(1, 3))]
        pred = Predicate.of(clauses)
        assert pred is not None
        _check(pred, data)


def test_nulls_and_kleene_logic() -> None:
    data = pa.table({"a": pa.array([1, None, 3, None], pa.int64()), "b": pa.array(["x", "y", None, None])})
    cases: list[tuple[Any, list[int]]] = [
        ([("a", "=", None)], []),
        ([("a", "!=", 1)], [2]),
        ([("a", "in", [1, None])], [0]),  # a null literal adds nothing; a null row is no match
        ([("a", "not in", [1])], [2]),  # a null row is not "not in" either
        ([("a", "not in", [1, None])], []),  # x NOT IN (1, NULL) is never true
        ([("a", "is null")], [1, 3]),
        ([("b", "is not null", None)], [0, 1]),
        ([[("a", ">", 0)], [("b", "=", "y")]], [0, 1, 2]),  # null OR true is true
        ([("a", ">", 0), ("b", "!=", "q")], [0]),  # true AND null is null: dropped
        ([("a", "is null"), ("b", "is null")], [3]),
    ]
    data = data.append_column("row", pa.array(range(4)))
    for filters, rows in cases:
        pred = Predicate.of(filters)
        assert pred is not None
        assert pred.filter_table(data).column("row").to_pylist() == rows, filters
        # the Arrow Expression it names keeps the same rows
        assert data.filter(pred.to_expression()).column("row").to_pylist() == rows, filters


def test_the_mask_is_the_rows_match() -> None:
    data = pa.table({"k": [1, 2, 3, None], "x": [0.0, -0.0, math.nan, 1.0]})
    pred = Predicate.of([[("k", ">=", 2)], [("x", "=", -0.0)]])
    assert pred is not None
    # -0.0 is not 0.0 (Double.compare); a null k with a non-matching x is not a match
    assert pred.mask(data).to_pylist() == [False, True, True, None]


def test_an_expression_filter_is_applied_as_arrow_evaluates_it() -> None:
    data = pa.table({"k": [1, 2, 3], "x": [0.0, -0.0, 1.0]})
    pred = Predicate.of(pc.field("x") == 0.0)
    assert pred is not None
    assert pred.filter_table(data).column("k").to_pylist() == [1, 2]  # IEEE: -0.0 == 0.0


def test_filters_arrow_expressions_failed_on_read_rows(catalog) -> None:
    """Filters Arrow's kernels refused mid-read with their own ArrowInvalid - an integral float
    literal on an integer column holding a value beyond 2**53 (the column cast to DOUBLE) - or its
    expression engine did (an integer literal on a DECIMAL column) are answered exactly: the
    literal is bound to the column's type first."""
    schema = pa.schema([("k", pa.int64()), ("price", pa.decimal128(10, 2))])
    t = catalog.create_table("db.big", schema, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1, 2**53 + 1, 20_000_000],
                            "price": [decimal.Decimal("0.00"), decimal.Decimal("2.50"), decimal.Decimal("-1.00")]},
                           schema=schema))
    assert sorted(t.to_arrow(filter=[("k", ">", 2.0)]).column("k").to_pylist()) == [20_000_000, 2**53 + 1]
    assert t.to_arrow(filter=[("k", "=", float(2**53))]).num_rows == 0  # 2**53 + 1 is not 2**53
    assert t.to_arrow(filter=[("k", "in", [1.0, None])]).column("k").to_pylist() == [1]
    assert t.to_arrow(filter=[("price", "=", 0)]).column("k").to_pylist() == [1]
    assert sorted(t.to_arrow(filter=[[("price", "<", 0)], [("k", "<=", 1.0)]]).column("k").to_pylist()) == [
        1, 20_000_000]
    # a float between two integers compares exactly (Java's longValue() would truncate it)
    assert sorted(t.to_arrow(filter=[("k", ">=", 1.5)]).column("k").to_pylist()) == [20_000_000, 2**53 + 1]
    assert t.to_arrow(filter=[("k", "<", 1.5)]).column("k").to_pylist() == [1]
    assert t.to_arrow(filter=[("k", "=", 1.5)]).num_rows == 0
    with pytest.raises(FilterError, match=r"nan is not a value of column 'k' \(BIGINT\): NaN is no integer"):
        t.to_arrow(filter=[("k", ">", math.nan)])
    with pytest.raises(FilterError, match=r"0\.5 is not a value of column 'price' \(DECIMAL\(10, 2\)\): a float"):
        t.to_arrow(filter=[("price", "=", 0.5)])


def test_no_clause_matches_every_row() -> None:
    data = pa.table({"k": [1, None]})
    assert Predicate(()).mask(data).to_pylist() == [True, True]
    assert Predicate(()).filter_table(data).equals(data)


EXPRESSION_TABLES = {
    "append": ({}, [], []),
    "append, partitioned by the filtered column": ({}, [], ["p"]),
    "append with deletion vectors": ({"deletion-vectors.enabled": "true"}, [], []),
    "primary key, merged": ({"bucket": "1"}, ["k"], []),
    "partial-update with a sequence group": ({"bucket": "1", "merge-engine": "partial-update",
                                             "fields.w.sequence-group": "v"}, ["k"], []),
    "primary key with deletion vectors": ({"bucket": "1", "deletion-vectors.enabled": "true"}, ["k", "p"], ["p"]),
    "postponed bucket, merged on read": ({"bucket": "-2", "postpone.merge-on-read": "true"}, ["k"], []),
}


@pytest.mark.parametrize("kind", sorted(EXPRESSION_TABLES))
def test_an_expression_filter_on_columns_not_projected(catalog, kind: str) -> None:
    """An Arrow Expression on columns the read does not project (Arrow raised ArrowInvalid when
    it met the projected rows) reads them to filter, as Paimon filters on any column; nested
    references and a filter naming no column of the table still fail as a FilterError."""
    options, keys, partitions = EXPRESSION_TABLES[kind]
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("w", pa.int32()),
                        pa.field("p", pa.string(), nullable=False), ("s", pa.struct([("x", pa.int32())]))])
    t = catalog.create_table("db.expr", schema, primary_keys=keys, partition_keys=partitions, options=options)
    rows = [{"k": i, "v": f"v{i}", "w": i % 3, "p": "ab"[i % 2], "s": {"x": -i}} for i in range(6)]
    t.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    if keys:  # a second commit merged with the first (w is v's sequence in the partial-update case)
        t.write_arrow(pa.Table.from_pylist([{**r, "v": r["v"] + "'", "w": 9} for r in rows[:2]], schema=schema))

    def read(expression: pc.Expression, columns: list[str]) -> list[dict[str, Any]]:
        return sorted(t.to_arrow(columns=columns, filter=expression).to_pylist(), key=repr)

    assert read((pc.field("w") == 9) | (pc.field("k") >= 4), ["v"]) == (
        [{"v": "v0'"}, {"v": "v1'"}, {"v": "v4"}, {"v": "v5"}] if keys else [{"v": "v4"}, {"v": "v5"}])
    assert read(pc.field("p") == "b", ["k"]) == [{"k": 1}, {"k": 3}, {"k": 5}]
    assert read(pc.field("s", "x") < -3, ["k", "v"]) == [{"k": 4, "v": "v4"}, {"k": 5, "v": "v5"}]
    assert [b.num_rows for b in t.to_batches(columns=["v"], filter=pc.field("k") == 2)] in ([1], [0, 1], [1, 0])
    with pytest.raises(FilterError, match="no_such"):
        t.to_arrow(columns=["v"], filter=pc.field("no_such") == 1)
