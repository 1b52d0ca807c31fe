"""FLOAT/DOUBLE sequence fields and partition values compare as Paimon Java does: its generated
record comparator (`sequence.field`, sequence groups) and partition predicates use
``Double.compare``, so -0.0 is older than 0.0 and NaN is newer than everything, NaN ties NaN."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from lake_assets import Catalog

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.float64()), ("v", pa.string())])


def _table(catalog: Catalog, options: dict[str, str]):
    return catalog.create_table("db.seq", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})


# (first write, second write, the winner under Double.compare)
CASES = [
    ((0.0, "pos"), (-0.0, "neg"), "pos"),       # IEEE ties them and the later write would win
    ((math.nan, "nan"), (math.inf, "inf"), "nan"),
    ((-0.0, "neg"), (0.0, "pos"), "pos"),
    ((math.nan, "nan1"), (math.nan, "nan2"), "nan2"),  # NaN ties NaN: the later write wins
]


@pytest.mark.parametrize(("first", "second", "winner"), CASES)
@pytest.mark.parametrize("one_batch", [False, True])
def test_sequence_field_orders_floats_like_java(catalog: Catalog, first, second, winner, one_batch):
    t = _table(catalog, {"sequence.field": "s"})
    rows = [{"k": 1, "s": first[0], "v": first[1]}, {"k": 1, "s": second[0], "v": second[1]}]
    if one_batch:
        t.write_arrow(pa.Table.from_pylist(rows, schema=t.arrow_schema))
    else:
        for r in rows:
            t.write_arrow(pa.Table.from_pylist([r], schema=t.arrow_schema))
    assert t.to_arrow().column("v").to_pylist() == [winner]
    t.compact(full=True)
    assert t.to_arrow().column("v").to_pylist() == [winner]


@pytest.mark.parametrize(("first", "second", "winner"), CASES)
def test_sequence_group_orders_floats_like_java(catalog: Catalog, first, second, winner):
    t = _table(catalog, {"merge-engine": "partial-update", "fields.s.sequence-group": "v"})
    for s, v in (first, second):
        t.write_arrow(pa.Table.from_pylist([{"k": 1, "s": s, "v": v}], schema=t.arrow_schema))
    assert t.to_arrow().column("v").to_pylist() == [winner]


def test_overwrite_of_float_partitions(catalog: Catalog):
    t = catalog.create_table("db.fp", pa.schema([("p", pa.float64()), ("i", pa.int64())]), partition_keys=["p"])
    t.write_arrow(pa.table({"p": [math.nan, 0.0, -0.0], "i": [1, 2, 3]}))
    t.write_arrow(pa.table({"p": [math.nan], "i": [10]}), overwrite={"p": math.nan})
    t.write_arrow(pa.table({"p": [0.0], "i": [20]}), overwrite={"p": 0.0})
    got = sorted(t.to_arrow().column("i").to_pylist())
    assert got == [3, 10, 20]  # -0.0 is its own partition; NaN's was replaced
