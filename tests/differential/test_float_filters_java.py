"""Filters on FLOAT/DOUBLE values against Paimon Java 0.9: its predicates compare literals with
``compareTo`` (``Double.compare``: NaN equals NaN and is the greatest, -0.0 < 0.0), for value
columns of append tables and partition values alike; lake_assets' reads return the same rows
for every operator and literal among NaN, 0.0, -0.0, inf and -inf."""

from __future__ import annotations

import math

import pyarrow as pa

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SPECIALS = [math.nan, 0.0, -0.0, math.inf, -math.inf]
VALUES = [*SPECIALS, 1.5, -2.5]
OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not in"]


def _filters(column: str):
    for op in OPS:
        for lit in SPECIALS:
            yield [(column, op, [lit, 1.5] if op in ("in", "not in") else lit)]


def test_value_filters_agree_with_java(java: PaimonJava, wh: str, lake: Catalog) -> None:
    schema = pa.schema([("x", pa.float64()), ("i", pa.int64())])
    java.create_table(wh, "db.fv", schema)
    for i, x in enumerate(VALUES):  # one file per value: stats pruning sees each alone
        java.write(wh, "db.fv", pa.table({"x": [x], "i": [i]}))
    java.write(wh, "db.fv", pa.table({"x": [0.0, -0.0, math.nan], "i": [10, 11, 12]}))
    ours = lake.get_table("db.fv")
    for flt in _filters("x"):
        assert_same_rows(ours.to_arrow(filter=flt), java.read(wh, "db.fv", filter=flt))


def test_partition_filters_agree_with_java(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.fp", pa.schema([("p", pa.float64()), ("i", pa.int64())]), partition_keys=["p"])
    t.write_arrow(pa.table({"p": VALUES, "i": list(range(len(VALUES)))}))
    for flt in _filters("p"):
        assert_same_rows(t.to_arrow(filter=flt), java.read(wh, "db.fp", filter=flt))
