"""A tuple filter is applied to rows by compute kernels, not by Arrow's expression engine (whose
module imports pyarrow.dataset): the rows it keeps are the rows the Arrow Expression it names
(`Predicate.to_expression`) keeps, over seeded random data of every type a filter compares,
nulls, all operators and OR of ANDs; float columns compare as ``Double.compare`` on both sides.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lake_assets.lsm.key_compare import float_code, float_order_codes
from lake_assets.predicate import Predicate

OPS = ["=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"]
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
        return rng.choice([1.5, -0.5, 2.0**40])  # a float literal on an integer column
    if r < 0.3 and name.startswith("f"):
        return rng.choice([1, -3, 0])  # an int literal on a float column
    return rng.choice(pool)


def _term(rng: random.Random, pools: dict[str, list[Any]]) -> tuple[str, str, Any]:
    name = rng.choice(sorted(pools))
    op = rng.choice(OPS)
    if op in ("in", "not in"):
        return name, op, [_literal(rng, name, pools[name]) for _ in range(rng.randint(1, 3))]
    return name, op, _literal(rng, name, pools[name])


def _term_expression(name: str, op: str, lit: Any, data: pa.Table) -> pc.Expression:
    """The term's Arrow Expression, as `pq.filters_to_expression` builds it, except for two
    comparisons (not lookups: ``is_in`` casts its set to the column's type) Arrow's expression
    engine gets wrong where the kernels are exact: an integer column with a float literal (the
    engine compares as FLOAT and raises on an integer above 2**24) is cast to DOUBLE, and a
    DECIMAL column with an integer literal (the engine raises "Precision is not great enough")
    gets the literal as a Decimal."""
    typ = data.schema.field(name).type
    comparison = op not in ("in", "not in")
    if comparison and pa.types.is_decimal(typ) and isinstance(lit, int) and not isinstance(lit, bool):
        lit = decimal.Decimal(lit)
    if comparison and pa.types.is_integer(typ) and isinstance(lit, float):
        field = pc.field(name).cast(pa.float64())
        value = pa.scalar(lit, pa.float64())
        return {"=": field == value, "==": field == value, "!=": field != value, "<": field < value,
                "<=": field <= value, ">": field > value, ">=": field >= value}[op]
    return pq.filters_to_expression([[(name, op, lit)]])


def _expected(pred: Predicate, data: pa.Table) -> pa.Table:
    """The reference: the Arrow Expression of the filter, evaluated by Arrow's engine, on a view
    whose float columns (with numeric literals) are `float_order_codes` and literals their codes
    (the rows it keeps, with the codes in place of those floats)."""
    coded = pred._coded_columns(data.schema)
    view = data
    for name in coded:
        i = view.schema.get_field_index(name)
        view = view.set_column(i, pa.field(name, pa.uint64()), float_order_codes(view.column(i)))

    def code_term(name: str, op: str, lit: Any) -> tuple[str, str, Any]:
        if name not in coded:
            return name, op, lit
        if op in ("in", "not in"):
            return name, op, pa.array([None if x is None else float_code(float(x)) for x in lit], pa.uint64())
        return name, op, pa.scalar(None if lit is None else float_code(float(lit)), pa.uint64())

    expression = None
    for clause in pred.clauses:
        part = None
        for term in clause:
            e = _term_expression(*code_term(*term), view)
            part = e if part is None else part & e
        expression = part if expression is None else expression | part
    return view.filter(expression)


def _check(pred: Predicate, data: pa.Table) -> bool:
    """The kernels keep the reference's rows, or both refuse the filter; whether they kept rows."""
    try:
        want = _expected(pred, data)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        with pytest.raises(type(exc)):
            pred.filter_table(data)
        return False
    got = pred.filter_table(data)
    assert got.column("row").to_pylist() == want.column("row").to_pylist(), pred.clauses
    assert got.schema == data.schema
    return True


@pytest.mark.parametrize("seed", range(40))
def test_the_kernels_keep_the_rows_the_expression_keeps(seed: int) -> None:
    rng = random.Random(seed)
    data, pools = _table(rng)
    compared = 0
    for _ in range(25):
        clauses = [[_term(rng, pools) for _ in range(rng.randint(1, 3))] for _ in range(rng.randint(1, 3))]
        pred = Predicate.of(clauses)
        assert pred is not None
        # both refuse a float literal on a BIGINT column holding values beyond 2**53 (not exact as DOUBLE)
        compared += _check(pred, data)
    assert compared >= 15


def test_a_value_of_another_type_is_compared_or_refused_as_the_expression_does() -> None:
    """Every column against a value of every other column: Arrow's implicit casts decide (a date
    with a timestamp, an int with a decimal), the rest is refused by both."""
    data, pools = _table(random.Random(7))
    outcomes = []
    for name in pools:
        for values in pools.values():
            for op in ("=", "<", "in"):
                lit = [values[0]] if op == "in" else values[0]
                pred = Predicate.of([(name, op, lit)])
                assert pred is not None
                outcomes.append(_check(pred, data))
    assert any(outcomes) and not all(outcomes)  # both kinds of case were checked


def test_nulls_and_kleene_logic_match_the_expression() -> None:
    data = pa.table({"a": pa.array([1, None, 3, None], pa.int64()), "b": pa.array(["x", "y", None, None])})
    cases = [
        [("a", "=", None)],
        [("a", "!=", 1)],
        [("a", "in", [1, None])],  # is_in matches a null row against a null in the set
        [("a", "not in", [1])],
        [[("a", ">", 0)], [("b", "=", "y")]],  # null OR true is true
        [("a", ">", 0), ("b", "!=", "q")],  # true AND null is null: dropped
    ]
    for filters in cases:
        pred = Predicate.of(filters)
        assert pred is not None
        assert pred.filter_table(data).equals(data.filter(pred.to_expression())), filters


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
    """Two filters `Predicate.check` accepts that Arrow's expression engine refused mid-read with
    its own ArrowInvalid: a float literal on an integer column holding a value above 2**24, and an
    integer literal on a DECIMAL column. The kernels answer both exactly."""
    schema = pa.schema([("k", pa.int32()), ("price", pa.decimal128(10, 2))])
    t = catalog.create_table("db.big", schema, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1, 2**31 - 1, 20_000_000],
                            "price": [decimal.Decimal("0.00"), decimal.Decimal("2.50"), decimal.Decimal("-1.00")]},
                           schema=schema))
    assert sorted(t.to_arrow(filter=[("k", ">", 1.5)]).column("k").to_pylist()) == [20_000_000, 2**31 - 1]
    assert t.to_arrow(filter=[("price", "=", 0)]).column("k").to_pylist() == [1]
    assert sorted(t.to_arrow(filter=[[("price", "<", 0)], [("k", "<=", 1.0)]]).column("k").to_pylist()) == [
        1, 20_000_000]


def test_no_clause_matches_every_row() -> None:
    data = pa.table({"k": [1, None]})
    assert Predicate(()).mask(data).to_pylist() == [True, True]
    assert Predicate(()).filter_table(data).equals(data)
