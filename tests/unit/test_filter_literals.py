"""Every literal against every column type: a filter either compares exactly - rows, partition
values and stats pruning all giving the answer of an exact comparison of the literal (converted
as Paimon's ``PredicateBuilder.convertJavaObject`` converts it where that is exact) - or is
refused up front with a `FilterError` naming the column, its type and the literal, exactly when
the literal is no value the column can be compared with (`lake_assets.predicate_literals`)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets.predicate import FilterError, Predicate

UTC = dt.UTC
PLUS2 = dt.timezone(dt.timedelta(hours=2))
TYPES: dict[str, tuple[pa.DataType, str]] = {
    "i8": (pa.int8(), "TINYINT"), "i32": (pa.int32(), "INT"), "i64": (pa.int64(), "BIGINT"),
    "f32": (pa.float32(), "FLOAT"), "f64": (pa.float64(), "DOUBLE"), "dec": (pa.decimal128(6, 2), "DECIMAL(6, 2)"),
    "s": (pa.string(), "STRING"), "bin": (pa.binary(), "BYTES"), "b": (pa.bool_(), "BOOLEAN"),
    "d": (pa.date32(), "DATE"), "ts": (pa.timestamp("us"), "TIMESTAMP(6)"),
    "tz": (pa.timestamp("ms", tz="UTC"), "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
}
OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not in"]


def _value(name: str) -> st.SearchStrategy[Any]:
    """Values of a column (a small pool: literals of it then match rows)."""
    pools: dict[str, list[Any]] = {
        "i8": [-128, -1, 0, 1, 2, 127], "i32": [-(2**31), 0, 1, 2, 2**31 - 1],
        "i64": [-(2**63), 0, 1, 2, 2**53 + 1, 2**63 - 1],
        "f32": [0.0, -0.0, 0.25, float(np.float32(0.1)), math.nan, math.inf, -3.0],
        "f64": [0.0, -0.0, 0.1, 2.0**53, math.nan, -math.inf, 1.5],
        "dec": [decimal.Decimal(x) for x in ("0.00", "1.50", "-9999.99", "9999.99", "0.01")],
        "s": ["", "a", "ab", "é", "日本"], "bin": [b"", b"\x00", b"\xff", b"ab"], "b": [True, False],
        "d": [dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1, 1, 1)],
        "ts": [dt.datetime(2024, 1, 1, 12), dt.datetime(2024, 1, 1, 12, 0, 0, 1), dt.datetime(1969, 12, 31)],
        "tz": [dt.datetime(2024, 1, 1, 12, tzinfo=UTC), dt.datetime(2024, 1, 1, 12, 0, 0, 1000, tzinfo=UTC)],
    }
    return st.one_of(st.none(), st.sampled_from(pools[name]))


LITERALS: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([0, 1, 2, 127, 128, -129, 2**53 + 1, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.5, 1.5, 2.0, -0.0, 0.1, 1e30, 2.0**53, float(np.float32(0.1)), 9999.99]),
    st.decimals(places=3, min_value=-100000, max_value=100000, allow_nan=False),
    st.sampled_from([decimal.Decimal("1.5"), decimal.Decimal("1.505"), decimal.Decimal("NaN"),
                     decimal.Decimal("Infinity"), decimal.Decimal("1E+40")]),
    st.text(max_size=3), st.binary(max_size=3),
    st.sampled_from([dt.date(2024, 2, 29), dt.date(1970, 1, 1)]),
    st.sampled_from([dt.datetime(2024, 1, 1, 12), dt.datetime(2024, 1, 1, 12, 0, 0, 1),
                     dt.datetime(2024, 1, 1, 12, tzinfo=UTC), dt.datetime(2024, 1, 1, 14, tzinfo=PLUS2),
                     dt.datetime(2024, 1, 1, 12, 0, 0, 1500, tzinfo=UTC)]),
    st.sampled_from([dt.time(1, 2)]),
)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, decimal.Decimal)) and not isinstance(x, bool)


def _comparable(name: str, x: Any) -> bool:
    """Whether the rules let literal ``x`` be compared with column ``name`` (module docstring)."""
    if x is None:
        return True
    if name.startswith("i"):
        return _is_number(x) and not (not isinstance(x, int) and x.is_nan() if isinstance(x, decimal.Decimal)
                                      else isinstance(x, float) and math.isnan(x))
    if name.startswith("f"):
        return _is_number(x) and (not isinstance(x, int) or -(2**63) <= x < 2**63)
    if name == "dec":
        return (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, decimal.Decimal) and not x.is_nan())
    if name == "s":
        return isinstance(x, str)
    if name == "bin":
        return isinstance(x, bytes)
    if name == "b":
        return isinstance(x, bool)
    if name == "d":
        return isinstance(x, dt.date) and not isinstance(x, dt.datetime)
    if name in ("ts", "tz"):
        return isinstance(x, dt.datetime) and (x.tzinfo is None) == (name == "ts")
    raise AssertionError(name)


def _java_literal(name: str, x: Any) -> Any:
    """A FLOAT / DOUBLE column's literal as Java's floatValue / doubleValue round it; any other
    literal stays itself (its comparison is exact)."""
    if x is None or not name.startswith("f"):
        return x
    if name == "f32":
        with np.errstate(over="ignore"):
            return float(np.float32(np.int64(x) if isinstance(x, int) else float(x)))
    return float(x)


def _key(name: str, v: Any) -> Any:
    """Java's compareTo order: Double.compare for floats (NaN greatest and equal to itself,
    -0.0 < 0.0); Python's exact order otherwise (an int and a float or Decimal compare exactly)."""
    if name.startswith("f"):
        return (1, 0.0, 0.0) if math.isnan(v) else (0, v, math.copysign(1.0, v))
    return v


def _matches(name: str, v: Any, op: str, lit: Any) -> bool:
    if v is None:
        return False
    if op in ("in", "not in"):
        lits = [_java_literal(name, x) for x in lit]
        if op == "in":
            return any(x is not None and _key(name, v) == _key(name, x) for x in lits)
        return None not in lits and all(_key(name, v) != _key(name, x) for x in lits)
    x = _java_literal(name, lit)
    if x is None:
        return False
    a, b = _key(name, v), _key(name, x)
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_literal_compares_exactly_or_is_refused_up_front(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(TYPES)))
    typ, paimon = TYPES[name]
    values = data.draw(st.lists(_value(name), min_size=1, max_size=8))
    op = data.draw(st.sampled_from(OPS))
    lit: Any = data.draw(st.lists(LITERALS, max_size=3) if op in ("in", "not in") else LITERALS)
    table = pa.table({name: pa.array(values, typ)})
    pred = Predicate.of([(name, op, lit)])
    assert pred is not None
    literals = lit if op in ("in", "not in") else [lit]
    refused = [x for x in literals if not _comparable(name, x)]
    if refused:
        with pytest.raises(FilterError) as err:
            pred.bind(table.schema, "db.t")
        message = str(err.value)
        assert f"{refused[0]!r} is not a value of column {name!r} ({paimon})" in message, message
        return
    bound = pred.bind(table.schema, "db.t")
    want = [_matches(name, v, op, lit) for v in values]
    assert [bool(m) for m in bound.mask(table).to_pylist()] == want
    # partition pruning tests each value exactly; stats pruning never drops a file with a match
    for v, w in zip(values, want, strict=True):
        assert bound.test_values({name: v}) == w, v
    known = [v for v in values if v is not None]
    nan = any(isinstance(v, float) and math.isnan(v) for v in known)
    lo, hi = (min(known, key=lambda v: _key(name, v)), max(known, key=lambda v: _key(name, v))) if known and not nan \
        else (None, None)
    nulls = len(values) - len(known)
    if any(want):
        assert bound.test_ranges({name: lo}, {name: hi}, {name: nulls}, len(values))


@pytest.mark.parametrize(("name", "op", "lit", "rows"), [
    ("i64", ">", 2.0, [2**53 + 1]),  # the kernels cast BIGINT to DOUBLE: ArrowInvalid mid-read
    ("i64", "=", float(2**53), []),  # 2**53 + 1 is not 2**53 (as DOUBLE it would be)
    ("i64", "<", 1.5, [1]),  # exact, not Java's truncation to 1 (which would leave no row)
    ("i64", ">=", 1.5, [2**53 + 1]),
    ("i64", "in", [1.0, 1.5, None], [1]),
    ("i64", "not in", [1.5], [1, 2**53 + 1]),
    ("i64", "<", 1e30, [1, 2**53 + 1]),
    ("i8", "<", 1000, [1, 100]),  # an int beyond TINYINT compares as itself (Java would wrap it)
    ("dec", "<", decimal.Decimal("1.505"), [decimal.Decimal("1.50")]),
    ("dec", "=", decimal.Decimal("1.5"), [decimal.Decimal("1.50")]),
    ("dec", ">", 10**9, []),
])
def test_examples(name: str, op: str, lit: Any, rows: list[Any]) -> None:
    columns = {"i64": pa.array([1, 2**53 + 1, None], pa.int64()), "i8": pa.array([1, 100, None], pa.int8()),
               "dec": pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.00")], pa.decimal128(6, 2))}
    table = pa.table({name: columns[name]})
    pred = Predicate.of([(name, op, lit)])
    assert pred is not None
    assert pred.bind(table.schema, "t").filter_table(table).column(name).to_pylist() == rows
