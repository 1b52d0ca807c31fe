"""Spark reads of a table whose column was made NOT NULL after rows with nulls in it were written
(`lake_assets.ops.not_null_history`): the source and ``read_table`` (Spark's Parquet reader for
files that need no merge) declare the column nullable and return the null, as the core does."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.spark import read_table
from tests.unit.test_not_null_after_nulls import SCHEMA, STRICT, set_not_null

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize("pk", [[], ["k"]], ids=["append", "primary-key"])
def test_spark_reads_the_old_null(spark, catalog: Catalog, warehouse: str, pk: list[str]) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=pk, options={"bucket": "1" if pk else "-1"})
    t.write_arrow(pa.table({"k": [1, 2], "v": [10, None], "w": ["a", "b"]}, schema=SCHEMA))
    set_not_null(t, "v")
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"k": [3], "v": [30], "w": ["c"]}, schema=STRICT))
    expected = [(1, 10, "a"), (2, None, "b"), (3, 30, "c")]
    for df in (spark.read.format("lake").option("warehouse", warehouse).load("db.t"),
               read_table(spark, warehouse, "db.t")):
        assert df.schema["v"].nullable
        assert sorted((tuple(r) for r in df.collect()), key=lambda r: r[0]) == expected
        assert [r.k for r in df.where("v is null").collect()] == [2]
