"""Filter translation without Spark: what is claimed, and claimed filters equal SQL's answer."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import zlib

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from lake_assets.predicate import Predicate
from lake_assets.spark.filters import push_filters, translate

UTC = dt.UTC
TYPES = {
    "i": pa.int32(),
    "s": pa.string(),
    "d": pa.decimal128(6, 2),
    "day": pa.date32(),
    "ts": pa.timestamp("ms"),
    "tz": pa.timestamp("us", tz="UTC"),
    "f": pa.float64(),
    "b": pa.bool_(),
}


def _sql(f, row: dict) -> bool | None:
    """SQL's three-valued answer for one row (the oracle)."""
    if isinstance(f, Not):
        v = _sql(f.child, row)
        return None if v is None else not v
    if isinstance(f, IsNull):
        return row[f.attribute[0]] is None
    if isinstance(f, IsNotNull):
        return row[f.attribute[0]] is not None
    v = row[f.attribute[0]]
    if isinstance(f, EqualNullSafe):
        return v == f.value if v is not None and f.value is not None else v is f.value
    if v is None:
        return None
    if isinstance(f, In):
        if v in [x for x in f.value if x is not None]:
            return True
        return None if None in f.value else False
    ops = {EqualTo: lambda a, b: a == b, GreaterThan: lambda a, b: a > b, GreaterThanOrEqual: lambda a, b: a >= b,
           LessThan: lambda a, b: a < b, LessThanOrEqual: lambda a, b: a <= b}
    return ops[type(f)](v, f.value)


def _random_rows(n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)

    def maybe(x):
        return None if rnd.random() < 0.2 else x

    base = dt.datetime(2024, 1, 1)
    return [
        {
            "i": maybe(rnd.randint(-3, 3)),
            "s": maybe(rnd.choice(["", "a", "ab", "b", "é", "z"])),
            "d": maybe(decimal.Decimal(rnd.randint(-300, 300)).scaleb(-2)),
            "day": maybe(dt.date(2024, 1, rnd.randint(1, 5))),
            "ts": maybe(base + dt.timedelta(milliseconds=rnd.randint(0, 5))),
            "tz": maybe(base.replace(tzinfo=UTC) + dt.timedelta(microseconds=rnd.randint(0, 5))),
            "f": maybe(rnd.choice([0.0, 1.5, float("nan")])),
            "b": maybe(rnd.random() < 0.5),
        }
        for _ in range(n)
    ]


FILTERS = [
    EqualTo(("i",), 1), Not(EqualTo(("i",), 1)), GreaterThan(("i",), 0), LessThanOrEqual(("i",), -1),
    In(("i",), [1, 2, None]), In(("i",), [None]), Not(In(("i",), [0, 1])), EqualNullSafe(("i",), 2),
    EqualTo(("s",), "ab"), GreaterThanOrEqual(("s",), "ab"), LessThan(("s",), "é"), In(("s",), ["", "z"]),
    EqualTo(("d",), decimal.Decimal("0.50")), GreaterThan(("d",), decimal.Decimal("-1.25")),
    LessThan(("day",), dt.date(2024, 1, 3)), In(("day",), [dt.date(2024, 1, 1), dt.date(2024, 1, 5)]),
    # microsecond literals against a millisecond column must not be rounded to the column's unit
    EqualTo(("ts",), dt.datetime(2024, 1, 1, 0, 0, 0, 2500)), LessThan(("ts",), dt.datetime(2024, 1, 1, 0, 0, 0, 2500)),
    GreaterThanOrEqual(("tz",), dt.datetime(2024, 1, 1, 0, 0, 0, 3, tzinfo=UTC)),
    EqualTo(("b",), True), Not(EqualTo(("b",), True)),
    # null tests on any column (NaN is not null), <=> NULL, NOT IN with a NULL (never true)
    IsNull(("i",)), Not(IsNull(("i",))), IsNotNull(("s",)), Not(IsNotNull(("d",))), IsNull(("f",)),
    IsNotNull(("f",)), EqualNullSafe(("ts",), None), Not(In(("i",), [1, None])), Not(In(("s",), ["a", "z"])),
]


@pytest.mark.parametrize("f", FILTERS, ids=str)
def test_claimed_filters_give_sqls_answer(f) -> None:
    rows = _random_rows(300, seed=zlib.crc32(str(f).encode()))
    data = pa.Table.from_pylist(rows, schema=pa.schema(list(TYPES.items())))
    data = data.append_column("row", pa.array(range(len(rows))))
    pushed = push_filters([f], TYPES)
    assert pushed.rejected == [], f"{f} should be claimed"
    got = data.filter(Predicate.of(pushed.terms).to_expression()).column("row").to_pylist()
    expected = [i for i, r in enumerate(rows) if _sql(f, r) is True]
    assert got == expected
    # the reader's row filter (compute kernels, the literals bound to the columns' types)
    read = Predicate.of(pushed.terms).bind(data.schema, "t").filter_table(data)
    assert read.column("row").to_pylist() == expected
    # partition pruning tests the same terms on single values: it must never drop a matching row
    pred = Predicate.of(pushed.terms)
    assert all(pred.test_values({k: rows[i][k] for k in ("i", "s", "day")}) for i in expected)


@pytest.mark.parametrize("f", [
    StringStartsWith(("s",), "a"),
    GreaterThan(("f",), 1.0), EqualTo(("f",), 0.0),  # Spark's 0.0 = -0.0, Paimon's 0.0 != -0.0
    EqualTo(("point", "x"), 1), IsNull(("point", "x")),  # nested
    IsNull(("nope",)), Not(GreaterThan(("i",), 1)),
    EqualTo(("i",), 2**40),  # does not fit the column
    EqualTo(("tz",), dt.datetime(2024, 1, 1)),  # naive literal for an instant column
    EqualTo(("nope",), 1),
], ids=str)
def test_filters_left_to_spark(f) -> None:
    pushed = push_filters([f], TYPES)
    assert pushed.rejected == [f]
    assert pushed.terms == []


def test_is_not_null_next_to_a_comparison_is_claimed_without_a_term() -> None:
    filters = [IsNotNull(("i",)), GreaterThan(("i",), 1), IsNotNull(("s",)), IsNotNull(("f",)),
               GreaterThan(("f",), 1.0)]
    pushed = push_filters(filters, TYPES)
    assert [id(f) for f in pushed.rejected] == [id(filters[4])]
    assert pushed.terms == [("i", ">", 1), ("s", "is not null", None), ("f", "is not null", None)]


def test_in_drops_null_and_not_in_stays_not_in() -> None:
    assert translate(In(("i",), [1, None, 2]), TYPES) == [("i", "in", [1, 2])]
    assert translate(Not(In(("i",), [1, 2])), TYPES) == [("i", "not in", [1, 2])]
    assert translate(Not(In(("i",), [1, None])), TYPES) == [("i", "not in", [1, None])]
    assert translate(IsNull(("f",)), TYPES) == [("f", "is null", None)]
    assert translate(EqualNullSafe(("i",), None), TYPES) == [("i", "is null", None)]


def test_the_filter_option_takes_null_tests() -> None:
    from lake_assets.errors import OptionError
    from lake_assets.spark.filters import parse_filter_option

    got = parse_filter_option('[["s", "is null"], ["i", "is not null", null], ["i", "not in", [1, null]]]', TYPES)
    assert got == [[("s", "is null", None), ("i", "is not null", None), ("i", "not in", [1, None])]]
    with pytest.raises(OptionError, match="'is null' takes no value"):
        parse_filter_option('[["s", "is null", "x"]]', TYPES)


def test_core_never_prunes_an_ltz_partition_by_a_naive_literal(tmp_path) -> None:
    from lake_assets import Catalog, LakeError

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    ts_type = pa.timestamp("us", tz="UTC")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("ts", ts_type)]), partition_keys=["ts"])
    table.write_arrow(pa.table({"id": [1], "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC)], ts_type)}))
    try:
        rows = table.to_arrow(filter=[("ts", "=", dt.datetime(2024, 1, 1))]).num_rows
    except (pa.ArrowInvalid, LakeError, TypeError):
        return  # rejecting the literal is fine
    assert rows == 1  # and so is matching it as the same instant; an empty result is not
