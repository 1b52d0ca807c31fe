"""DECIMAL ``product`` with retractions and of precision 38 (`lsm/merge_engine/decimal_product.py`),
against Paimon Java 0.9's ``FieldProductAgg`` (``DecimalUtils.multiply`` / ``divide``).

Each step is rounded half-up (ties away from zero) to the scale and null past the precision, a
null restarting from the next record; a retraction divides exactly (its quotient here always has
a finite decimal form: divisors of factors 2 and 5), and one without such a form fails on both
sides. More than `FEW_RUNS` keys so the vectorized passes run, and one long key for the
record-by-record finish of the longest runs.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.decimal_product import FEW_RUNS
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_rows, write_both

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.decimal128(38, 4)),
                    ("b", pa.decimal128(20, 2)), ("op", pa.string())])
OPTIONS = {"bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op",
           "fields.a.aggregate-function": "product", "fields.b.aggregate-function": "product"}
# factors: half-up ties (0.0005 x 0.5), signs, zero, values near each precision's end
A_FACTORS = ["0.5", "-0.5", "0.0005", "2.5", "-1.25", "4", "0.8", "1.6", "0", "12345678901234567890.1234",
             "-99999999999999999999999999999999.9999", "0.0001"]
B_FACTORS = ["0.5", "-0.5", "0.05", "2.5", "-1.25", "4", "0.8", "1.6", "0", "123456789012345678.12", "0.01"]
DIVISORS = ["0.5", "2.5", "-1.25", "4", "0.8", "1.6", "2", "-0.5"]  # exact quotients only


def _rows(keys: int, long_key: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(keys):
        for _ in range(long_key if k == 0 else int(rng.integers(1, 7))):
            minus = rng.random() < 0.25
            pick_a = DIVISORS if minus else A_FACTORS
            pick_b = DIVISORS if minus else B_FACTORS
            rows.append({"k": k, "a": Decimal(pick_a[rng.integers(len(pick_a))]),
                         "b": Decimal(pick_b[rng.integers(len(pick_b))]), "op": "-U" if minus else "+I"})
    big_a, big_b = Decimal(A_FACTORS[10]), Decimal(B_FACTORS[9])
    ends_null = [(big_a, big_b), (big_a, big_b)]  # past both precisions: null
    restarts = [*ends_null, (Decimal("-2.5"), Decimal("2.5"))]  # ... and the next record starts afresh
    # the largest values each column holds, kept (lake_assets' per-record fold before session 18 took
    # abs() in Python's default 28-digit context, which rounded them up to the limit: null)
    at_limit = [(Decimal("9999999999999999999999999999999999.9999"), Decimal("999999999999999999.99")),
                (Decimal(1), Decimal(1))]
    for k, steps in ((keys, ends_null), (keys + 1, restarts), (keys + 2, at_limit)):
        rows += [{"k": k, "a": a, "b": b, "op": "+I"} for a, b in steps]
    return rows


def test_decimal_products_with_retractions_agree_with_java(java: PaimonJava, wh: str) -> None:
    data = pa.Table.from_pylist(_rows(FEW_RUNS + 28, 300, seed=5), schema=SCHEMA)
    theirs, ours = write_both(java, wh, SCHEMA, OPTIONS, data)
    expected = java.read(theirs, "db.t")
    by_key = {r["k"]: (r["a"], r["b"]) for r in expected.to_pylist()}
    assert by_key[FEW_RUNS + 28] == (None, None) and by_key[FEW_RUNS + 29] == (Decimal("-2.5000"), Decimal("2.50"))
    assert by_key[FEW_RUNS + 30] == (Decimal("9999999999999999999999999999999999.9999"),
                                     Decimal("999999999999999999.99"))
    for warehouse in (theirs, ours):
        assert_same_rows(Catalog(warehouse).get_table("db.t").to_arrow(), expected, ["k", "a", "b"])
    assert_same_rows(java.read(ours, "db.t"), expected, ["k", "a", "b"])


def test_a_retraction_without_a_finite_quotient_fails_on_both_sides(java: PaimonJava, wh: str) -> None:
    data = pa.Table.from_pylist([{"k": 1, "a": Decimal("1"), "b": Decimal("1"), "op": "+I"},
                                 {"k": 1, "a": Decimal("3"), "b": Decimal("2"), "op": "-U"}], schema=SCHEMA)
    with pytest.raises(JavaError) as err:
        write_both(java, wh, SCHEMA, OPTIONS, data)
    assert err.value.mentions("Non-terminating decimal expansion")
    table = Catalog(f"{wh}/lake")
    table.create_database("db")
    t = table.create_table("db.t", SCHEMA, primary_keys=["k"], options=OPTIONS)
    with pytest.raises(InvalidDataError, match=r"column 'a' retracted 3\.0000 from 1\.0000: the quotient has no "
                       r"exact decimal form"):
        t.write_arrow(data)
