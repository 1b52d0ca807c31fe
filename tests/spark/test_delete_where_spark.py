"""`lake_assets.spark.delete_where`: a Spark SQL condition deletes, through deletion vectors, exactly
the rows Spark's own ``WHERE`` selects (Spark evaluates each condition over the same rows as the
oracle, nulls included), and conditions that do not translate exactly are refused, changing nothing.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import UnsupportedFeatureError
from lake_assets.predicate import FilterError
from lake_assets.spark import delete_where

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("d", pa.date32()),
                    ("amount", pa.decimal128(10, 2)), ("score", pa.float64()), pa.field("p", pa.string())])
SPARK_SCHEMA = "id long, region string, d date, amount decimal(10,2), score double, p string"
ROWS = [{"id": i, "region": [None, "eu", "us", "apac"][i % 4], "d": dt.date(2024, 1, 1 + i % 5),
         "amount": None if i % 7 == 0 else decimal.Decimal(i) / 4, "score": i / 2, "p": "ab"[i % 2]}
        for i in range(24)]
CONDITIONS = [
    "id > 5 AND (region = 'eu' OR region IS NULL)",
    "NOT (region IN ('us', 'apac') OR id <= 3)",
    "region NOT IN ('eu', NULL)",  # never true
    "region <> 'eu' AND d >= DATE '2024-01-03'",
    "NOT (region <=> 'us') AND amount < 2.5",
    "ID BETWEEN 3 AND 6 OR p = 'a' AND amount IS NULL",
    "NOT (amount > 1 AND NOT (region = 'us'))",
    "region <=> NULL OR id IN (20, 21, NULL)",
    "id NOT BETWEEN 2 AND 20 AND NOT region IS NOT NULL",
]


def _table(wh: str, name: str, options: dict[str, str] | None = None):
    catalog = Catalog(wh)
    if "db" not in catalog.list_databases():
        catalog.create_database("db")
    table = catalog.create_table(name, SCHEMA, partition_keys=["p"],
                                 options=options if options is not None else {"deletion-vectors.enabled": "true"})
    table.write_arrow(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    return table


def test_deletes_the_rows_spark_selects(spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    source = spark.createDataFrame([tuple(r.values()) for r in ROWS], SPARK_SCHEMA)
    # Spark's answer for every condition in one query: whether its WHERE selects each row
    answers = source.selectExpr("id", *[f"coalesce({c}, false) AS c{i}" for i, c in enumerate(CONDITIONS)]).collect()
    for i, condition in enumerate(CONDITIONS):
        table = _table(wh, f"db.t{i}")
        selected = sorted(r["id"] for r in answers if r[f"c{i}"])
        result = delete_where(spark, wh, f"db.t{i}", condition)
        assert result.rows_deleted == len(selected), condition
        left = sorted(r["id"] for r in table.to_arrow(columns=["id"]).to_pylist())
        assert left == sorted(set(range(24)) - set(selected)), condition
    assert delete_where(spark, wh, "db.t0", CONDITIONS[0]).rows_deleted == 0  # nothing left to delete
    # Spark reads the table through the lake source with the marks applied
    read = spark.read.format("lake").option("warehouse", wh).load("db.t0")
    assert sorted(r["id"] for r in read.select("id").collect()) == sorted(r["id"] for r in answers if not r["c0"])


@pytest.mark.parametrize(("condition", "message"), [
    ("lower(region) = 'eu'", "does not compare a column with a literal"),
    ("region LIKE 'e%'", "cannot be translated"),
    ("id = amount", "does not compare a column with a literal"),
    ("score = 0.0", "FLOAT/DOUBLE"),
    ("nope = 1", "no column 'nope'"),
    ("d = 'not a date'", "not a value of column 'd'"),
])
def test_conditions_that_do_not_translate_are_refused(spark, tmp_path, condition: str, message: str) -> None:
    wh = str(tmp_path / "wh")
    table = _table(wh, "db.t")
    before = table.latest_snapshot().id
    with pytest.raises(FilterError, match=message):
        delete_where(spark, wh, "db.t", condition)
    assert table.latest_snapshot().id == before and table.to_arrow().num_rows == len(ROWS)
    # a null test on a float column is exact: allowed
    assert delete_where(spark, wh, "db.t", "score IS NULL").rows_deleted == 0


def test_tables_without_vectors_are_refused(spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    _table(wh, "db.plain", options={})
    with pytest.raises(UnsupportedFeatureError, match=r"deletion-vectors\.enabled"):
        delete_where(spark, wh, "db.plain", "id = 1")
