"""Aggregation's reset by a -D (``aggregation.remove-record-on-delete``), Java's -0.0 sums and float min/max order,
against Paimon Java 0.9.

Paimon 1.1 added ``aggregation.remove-record-on-delete``; 1.4.1/2.0 (#7645, "Fix initRow ... to set
all fields including nullable ones", a bug fix with no option) reset the row to the -D's whole
image, which later records aggregate onto (docs/format.md §10.1). Java 0.9 predates the option:
it ignores it and applies a -D as a retraction, so a sum subtracts it. We follow 1.4.1+; each
engine reads the other's table as written. Both engines agree on FieldSumAgg's -0.0 (a sum from
its first value keeps it; Arrow's grouped sum, from +0.0, did not).
"""

from __future__ import annotations

import math

import pyarrow as pa

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import write_both

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.float64()), ("op", pa.string())])
NAN = float("nan")
OPTIONS = {"bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op",
           "fields.v.aggregate-function": "sum", "aggregation.remove-record-on-delete": "true"}

# one commit, merged by the writer's flush: k1 +I 5, -D 2, +I 3; k2 -0.0 twice; k3 -0.0 then null
ROWS = [{"k": 1, "v": 5.0, "op": "+I"}, {"k": 1, "v": 2.0, "op": "-D"}, {"k": 1, "v": 3.0, "op": "+I"},
        {"k": 2, "v": -0.0, "op": "+I"}, {"k": 2, "v": -0.0, "op": "+I"},
        {"k": 3, "v": -0.0, "op": "+I"}, {"k": 3, "v": None, "op": "+I"}]


def _signed(rows: list[dict]) -> list[tuple]:
    return [(r["k"], r["v"], None if r["v"] is None else math.copysign(1.0, r["v"])) for r in rows]


def test_a_reset_java_0_9_predates_and_negative_zero_sums(java: PaimonJava, wh: str) -> None:
    data = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    theirs, ours = write_both(java, wh, SCHEMA, OPTIONS, data)
    zeros = [(2, -0.0, -1.0), (3, -0.0, -1.0)]
    java_0_9 = [(1, 6.0, 1.0), *zeros]  # 5 - 2 + 3: the -D retracted
    paimon_1_4_1 = [(1, 5.0, 1.0), *zeros]  # the -D's image 2, then + 3
    assert _signed(java.read(theirs, "db.t").to_pylist()) == java_0_9
    assert _signed(Catalog(theirs).get_table("db.t").to_arrow().to_pylist()) == java_0_9
    assert _signed(Catalog(ours).get_table("db.t").to_arrow().to_pylist()) == paimon_1_4_1
    assert _signed(java.read(ours, "db.t").to_pylist()) == paimon_1_4_1


MINMAX_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("mx", pa.float64()), ("mn", pa.float32()),
                          ("la", pa.string()), ("op", pa.string())])
MINMAX_OPTIONS = {"bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op", "fields.mx.aggregate-function":
                  "max", "fields.mn.aggregate-function": "min", "fields.la.aggregate-function": "listagg"}


def test_float_min_max_in_java_order_and_listagg_blanks(java: PaimonJava, wh: str) -> None:
    # FieldMaxAgg / FieldMinAgg compare with Double.compare / Float.compare in Java 0.9 and HEAD
    # alike: NaN above every number, -0.0 below 0.0. listagg: Java 0.9 joins blank strings; Paimon
    # 2.0+ (#8480) skips them, and lake_assets follows 2.0+ (so the two differ there, by design)
    rows = [(1, 1.0, 0.0, "a"), (1, NAN, -0.0, " "), (1, 2.0, 1.0, "b"),
            (2, -0.0, NAN, ""), (2, 0.0, 5.0, "c")]
    data = pa.Table.from_pylist([{"k": k, "mx": x, "mn": n, "la": s, "op": "+I"} for k, x, n, s in rows],
                                schema=MINMAX_SCHEMA)
    theirs, ours = write_both(java, wh, MINMAX_SCHEMA, MINMAX_OPTIONS, data)

    def signed(table: pa.Table) -> list[tuple]:
        return [(r["k"], repr(r["mx"]), repr(r["mn"]), r["la"]) for r in table.to_pylist()]

    java_rows = signed(java.read(theirs, "db.t"))
    assert [r[:3] for r in java_rows] == [(1, "nan", "-0.0"), (2, "0.0", "5.0")]
    assert [r[3] for r in java_rows] == ["a, ,b", ",c"]  # Java 0.9: blanks joined
    for read in (signed(Catalog(ours).get_table("db.t").to_arrow()), signed(java.read(ours, "db.t"))):
        assert read == [(1, "nan", "-0.0", "a,b"), (2, "0.0", "5.0", "c")]  # 2.0+: blanks skipped
    assert signed(Catalog(theirs).get_table("db.t").to_arrow()) == java_rows
