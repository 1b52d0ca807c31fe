"""Aggregation's reset by a -D (``aggregation.remove-record-on-delete``) and Java's -0.0 sums,
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
