"""``sum`` and ``product`` in the column's own type, against Paimon Java 0.9 (``FieldSumAgg``,
``FieldProductAgg``: the same in 0.9 and HEAD).

Java adds a FLOAT in float (``(float) a + (float) b``), so a float32 sum is rounded at every step;
lake_assets once summed in float64 and rounded at the end, which differs in the last bit on some
inputs. The inputs here are found by search (`_order_sensitive`), not guessed: float32 runs whose
step-by-step result differs from the float64-then-round one. A retracted integer factor divides
with truncation, and a DECIMAL(20, 2) sum past its precision is null
(``Decimal.fromBigDecimal``) until the next record starts it again. Checked on the writer's merge
(flush), both engines' full compactions and, in a scenario, lookup compaction with deletion
vectors and the lookup changelog, alternating engines.

Integer overflow is where Java 0.9 predates the rule followed: 0.9 to 1.4 wrap around, Paimon 2.0+
fails (#7992, #7906: "silent data corruption"), as lake_assets does (the last test pins both).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows, row_set, write_both
from .scenario import C, Scenario, W, assert_agree

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("f", pa.float32()), ("p", pa.float32()),
                    ("i", pa.int8()), ("j", pa.int32()), ("d", pa.decimal128(20, 2)), ("op", pa.string())])
OPTIONS = {"bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op",
           "fields.f.aggregate-function": "sum", "fields.p.aggregate-function": "product",
           "fields.i.aggregate-function": "sum", "fields.j.aggregate-function": "product",
           "fields.d.aggregate-function": "sum"}
KEYS = 6
BIG = Decimal("600000000000000000.00")  # two of them leave DECIMAL(20, 2)


def _order_sensitive(combine: Callable[[np.ndarray, np.ndarray], np.ndarray], count: int, seed: int) -> np.ndarray:
    """``count`` float32 triples whose in-order float32 fold with ``combine`` differs from the
    fold in float64 rounded once to float32 (the old lake_assets result)."""
    rng = np.random.default_rng(seed)
    found: list[np.ndarray] = []
    while len(found) < count:
        trio = (rng.standard_normal(3) * 10.0 ** rng.integers(-3, 4, 3)).astype(np.float32)
        in_order = combine(combine(trio[0], trio[1]), trio[2])
        wide = np.float32(combine(combine(trio.astype(np.float64)[0], trio[1]), trio[2]))
        if in_order != wide:
            found.append(trio)
    return np.array(found)


SUMS = _order_sensitive(np.add, KEYS, seed=7)
PRODUCTS = _order_sensitive(np.multiply, KEYS, seed=11)


def _rows(step: int) -> list[dict]:
    """Step ``step`` (0..2) of every key: its float values, integer and decimal records."""
    rows = []
    for k in range(KEYS):
        f, p = float(SUMS[k][step]), float(PRODUCTS[k][step])
        i, j = (20, 30, 60)[step], (100, 1000, 7)[step]
        d = (BIG, BIG, Decimal("5.25"))[step]
        # key 0's last float is a retraction: -U subtracts it, and divides the products by it
        op = "-U" if (k == 0 and step == 2) else "+I"
        rows.append({"k": k, "f": -f if op == "-U" else f, "p": p, "i": i, "j": j if op == "+I" else 7,
                     "d": d, "op": op})
    return rows


def _expected() -> list[dict]:
    """Java's results, computed here step by step in each column's type."""
    out = []
    for k in range(KEYS):
        f = np.float32(np.float32(SUMS[k][0] + SUMS[k][1]) + SUMS[k][2])
        pp = np.float32(PRODUCTS[k][0] * PRODUCTS[k][1])
        p = np.float32(pp / PRODUCTS[k][2]) if k == 0 else np.float32(pp * PRODUCTS[k][2])
        j = 100_000 // 7 if k == 0 else 700_000  # Java's integer division truncates
        out.append({"k": k, "f": float(f), "p": float(p), "i": 50 - 60 if k == 0 else 110, "j": j,
                    "d": Decimal("5.25") if k else Decimal("-5.25")})
    return out


def test_the_search_found_what_the_old_sum_got_wrong() -> None:
    # not vacuous: each chosen key's float64-then-round differs from Java's float32 result
    for k, row in enumerate(_expected()):
        assert np.float32(SUMS[k].astype(np.float64).sum()) != np.float32(row["f"])
        if k:  # (key 0's product divides by its last factor)
            assert np.float32(PRODUCTS[k].astype(np.float64).prod()) != np.float32(row["p"])


def test_write_and_full_compaction_agree_with_java(java: PaimonJava, wh: str) -> None:
    data = pa.Table.from_pylist([r for s in range(3) for r in _rows(s)], schema=SCHEMA)
    theirs, ours = write_both(java, wh, SCHEMA, OPTIONS, data)  # one commit: the writers' merges
    expected = pa.Table.from_pylist([{**r, "op": "+I"} for r in _expected()], schema=SCHEMA)
    for warehouse in (theirs, ours):
        assert_same_rows(java.read(warehouse, "db.t"), expected, ["k", "f", "p", "i", "j", "d"])
        assert_same_rows(Catalog(warehouse).get_table("db.t").to_arrow(), expected, ["k", "f", "p", "i", "j", "d"])
    # three commits each, then each engine fully compacts the other's table
    theirs, ours = f"{wh}/java3", f"{wh}/lake3"
    java.create_table(theirs, "db.t", SCHEMA, ["k"], [], OPTIONS)
    table = Catalog(ours)
    table.create_database("db")
    lake = table.create_table("db.t", SCHEMA, primary_keys=["k"], options=OPTIONS)
    for s in range(3):
        step = pa.Table.from_pylist(_rows(s), schema=SCHEMA)
        java.write(theirs, "db.t", step, kinds=step.column("op").to_pylist())
        lake.write_arrow(step)
    Catalog(theirs).get_table("db.t").compact(full=True)
    java.compact(ours, "db.t", [], 0, full=True)
    cols = ["k", "f", "p", "i", "j", "d"]
    for warehouse in (theirs, ours):
        assert row_set(java.read(warehouse, "db.t"), cols) == row_set(expected, cols)
        assert row_set(Catalog(warehouse).get_table("db.t").to_arrow(), cols) == row_set(expected, cols)


def test_lookup_compaction_with_deletion_vectors_agrees_with_java(java: PaimonJava, wh: str) -> None:
    """Each key's records in three commits, compacted in between: every fold after the first is a
    lookup merge of the key's row above with its new record (ops/dv_old_values.py)."""
    steps = [W(*_rows(0)), W(*_rows(1)), C(full=False), W(*_rows(2)), C(full=False), C()]
    options = {**OPTIONS, "deletion-vectors.enabled": "true", "changelog-producer": "lookup"}
    obs = Scenario(java, wh, SCHEMA, ["k"], options, steps).run_all(("java", "lake", "lake-java"))
    assert_agree(obs)
    cols = ["k", "f", "p", "i", "j", "d"]
    expected = pa.Table.from_pylist([{**r, "op": "+I"} for r in _expected()], schema=SCHEMA)
    assert row_set(Catalog(wh).get_table("db.t_lake").to_arrow(), cols) == row_set(expected, cols)


def test_integer_overflow_java_0_9_wraps_where_paimon_2_fails(java: PaimonJava, wh: str) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("i", pa.int8()), ("op", pa.string())])
    options = {"bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op",
               "fields.i.aggregate-function": "sum"}
    data = pa.Table.from_pylist([{"k": 1, "i": 100, "op": "+I"}, {"k": 1, "i": 100, "op": "+I"}], schema=schema)
    java.create_table(f"{wh}/java", "db.t", schema, ["k"], [], options)
    java.write(f"{wh}/java", "db.t", data, kinds=["+I", "+I"])
    assert java.read(f"{wh}/java", "db.t").column("i").to_pylist() == [-56]  # 0.9: (byte) (100 + 100)
    catalog = Catalog(f"{wh}/lake")
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, primary_keys=["k"], options=options)
    with pytest.raises(InvalidDataError, match="overflowed column 'i'"):
        table.write_arrow(data)
    assert table.latest_snapshot() is None  # nothing landed
