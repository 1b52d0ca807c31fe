"""Filters on FLOAT/DOUBLE columns compare as Paimon's predicates do (``Double.compare``: NaN
equals NaN and is the greatest, -0.0 < 0.0), the same way in every place a filter is evaluated:
partition pruning, bucket pruning, file pruning by stats, the key filter and the row filter -
before and after compaction, whatever bucket a value lands in."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.lsm.key_compare import float_code
from lake_assets.predicate import Predicate

SPECIALS = [math.nan, 0.0, -0.0, math.inf, -math.inf]
VALUES = [*SPECIALS, 1.5, -2.5]
OPS = ["=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"]


def _java_match(v: float, op: str, lit) -> bool:
    """The model: Double.compare on the values."""
    a = float_code(v)
    if op in ("in", "not in"):
        found = any(a == float_code(x) for x in lit)
        return found if op == "in" else not found
    b = float_code(lit)
    return {"=": a == b, "==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _cases():
    for op in OPS:
        for lit in SPECIALS:
            yield op, ([lit, 1.5] if op in ("in", "not in") else lit)


def _codes(values) -> list[int]:
    return sorted(float_code(v) for v in values)


def _check_all(table, column: str, all_rows: list[float]) -> None:
    for op, lit in _cases():
        got = table.to_arrow(filter=[(column, op, lit)]).column(column).to_pylist()
        want = [v for v in all_rows if _java_match(v, op, lit)]
        assert _codes(got) == _codes(want), (op, lit, got, want)


@pytest.mark.parametrize("float_type", [pa.float64(), pa.float32()])
def test_primary_key_float_keys_across_buckets_and_compaction(catalog: Catalog, float_type):
    t = catalog.create_table("db.pk", pa.schema([("k", float_type), ("v", pa.int64())]),
                             primary_keys=["k"], options={"bucket": "4"})
    # one file per value, so stats pruning and bucket pruning are exercised per value
    for i, x in enumerate(VALUES):
        t.write_arrow(pa.table({"k": pa.array([x], float_type), "v": [i]}), )
    assert t.to_arrow().num_rows == len(VALUES)  # NaN, 0.0 and -0.0 are three distinct keys
    _check_all(t, "k", VALUES)
    t.compact(full=True)
    _check_all(t, "k", VALUES)


def test_append_float_values_and_stats(catalog: Catalog):
    t = catalog.create_table("db.ap", pa.schema([("x", pa.float64()), ("i", pa.int64())]))
    for i, x in enumerate(VALUES):
        t.write_arrow(pa.table({"x": [x], "i": [i]}))
    # a file holding both zeros: its stats must not prune either of them away
    t.write_arrow(pa.table({"x": [0.0, -0.0, 7.0], "i": [10, 11, 12]}))
    _check_all(t, "x", [*VALUES, 0.0, -0.0, 7.0])


def test_float_value_column_of_primary_key_table(catalog: Catalog):
    t = catalog.create_table("db.pv", pa.schema([("k", pa.int64()), ("x", pa.float64())]),
                             primary_keys=["k"], options={"bucket": "2"})
    t.write_arrow(pa.table({"k": list(range(len(VALUES))), "x": VALUES}))
    _check_all(t, "x", VALUES)


def test_float_partition_values(catalog: Catalog):
    t = catalog.create_table("db.pp", pa.schema([("p", pa.float64()), ("i", pa.int64())]), partition_keys=["p"])
    t.write_arrow(pa.table({"p": VALUES, "i": list(range(len(VALUES)))}))
    _check_all(t, "p", VALUES)


def test_predicate_tests_agree_with_the_model():
    for op, lit in _cases():
        pred = Predicate.of([("c", op, lit)])
        for v in VALUES:
            want = _java_match(v, op, lit)
            assert pred.test_values({"c": v}) == want, (v, op, lit)
            if want:  # a range holding v may match
                assert pred.test_ranges({"c": v}, {"c": v}), (v, op, lit)
        rows = pa.table({"c": VALUES})
        got = pred.filter_table(rows).column("c").to_pylist()
        assert _codes(got) == _codes([v for v in VALUES if _java_match(v, op, lit)])


def test_zero_stats_are_widened():
    # Arrow's min/max may say [0.0, 0.0] for a file of -0.0 and 0.0
    assert Predicate.of([("c", "=", -0.0)]).test_ranges({"c": 0.0}, {"c": 0.0})
    assert Predicate.of([("c", "<", 0.0)]).test_ranges({"c": 0.0}, {"c": 0.0})
    assert not Predicate.of([("c", ">", 0.0)]).test_ranges({"c": 0.0}, {"c": 0.0})
    assert Predicate.of([("c", ">", 1.0)]).test_ranges({"c": 0.0}, {"c": math.nan})  # NaN is the greatest
