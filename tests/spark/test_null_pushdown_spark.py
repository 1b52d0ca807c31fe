"""IS NULL / IS NOT NULL / NOT IN through Spark's filter pushdown: claimed by the source, pruning
partitions (the partition of nulls) and files (null counts), and the rows Spark's own filter gives."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.datasource import In, IsNotNull, IsNull, Not

import lake_assets
from lake_assets import Catalog
from lake_assets.spark.reader import LakePushdownReader
from lake_assets.spark.source_options import SourceOptions

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _table(catalog: Catalog):
    t = catalog.create_table("db.n", pa.schema([("id", pa.int64()), ("p", pa.int32()), ("v", pa.int64())]),
                             partition_keys=["p"], options={"bucket": "-1"})
    # per partition: a file without null v, a file of null v only
    for p in (1, 2, None):
        ids = [i + 10 * (p or 0) for i in range(4)]
        t.write_arrow(pa.table({"id": ids, "p": pa.array([p] * 4, pa.int32()), "v": ids}, schema=t.arrow_schema))
        t.write_arrow(pa.table({"id": [i + 100 for i in ids], "p": pa.array([p] * 4, pa.int32()),
                                "v": pa.array([None] * 4, pa.int64())}, schema=t.arrow_schema))
    return t


def _load(spark, warehouse: str, **options: str):
    reader = spark.read.format("lake").option("warehouse", warehouse)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load("db.n")


def test_the_python_workers_import_this_checkout(spark) -> None:
    here = str(Path(lake_assets.__file__).resolve().parent)

    def where(_: object) -> list[str]:
        import lake_assets as worker_lake_assets

        return [str(Path(worker_lake_assets.__file__).resolve().parent)]

    assert spark.sparkContext.parallelize([0], 1).flatMap(where).collect() == [here]


@pytest.mark.parametrize(("cond", "pushed", "files"), [
    (lambda: F.col("p").isNull(), [IsNull(("p",))], 2),  # the partition of nulls only
    (lambda: F.col("v").isNull(), [IsNull(("v",))], 3),  # files with null count 0 skipped
    (lambda: F.col("v").isNotNull() & F.col("p").isNotNull(), [IsNotNull(("v",)), IsNotNull(("p",))], 2),
    (lambda: ~F.col("v").isin(1, 2), [Not(In(("v",), [1, 2]))], 3),  # a null v is not NOT IN (1, 2)
    (lambda: ~F.col("p").isin(1), [Not(In(("p",), [1]))], 2),  # the null partition is not NOT IN (1)
], ids=["p is null", "v is null", "both not null", "v not in", "p not in"])
def test_null_tests_are_pushed_and_prune(spark, catalog: Catalog, warehouse: str, cond, pushed, files) -> None:
    _table(catalog)
    full = _load(spark, warehouse)
    opts = {"path": "db.n", "warehouse": warehouse, "filter-pushdown": "true"}
    reader = LakePushdownReader(SourceOptions.parse(opts), full.schema, None)
    assert list(reader.pushFilters(pushed)) == []  # all claimed: Spark does not filter again
    assert sum(len(s.files) for part in reader.partitions() for s in part.splits) == files
    expected = sorted(tuple(r) for r in full.filter(cond()).collect())  # no pushdown: Spark filters
    pushing = _load(spark, warehouse, **{"filter-pushdown": "true"})
    got = sorted(tuple(r) for r in pushing.filter(cond()).collect())
    assert expected and got == expected


def test_filter_option_takes_null_tests(spark, catalog: Catalog, warehouse: str) -> None:
    _table(catalog)
    got = _load(spark, warehouse, filter='[["p", "is null"], ["v", "is not null"]]').collect()
    assert sorted(r["id"] for r in got) == [0, 1, 2, 3]
