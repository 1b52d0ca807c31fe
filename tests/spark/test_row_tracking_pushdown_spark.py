"""Spark filters on ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` of row-tracking tables are claimed by the
``lake`` source and pruned by the core's planner (files, and data-evolution row-id ranges), with
the rows Spark's own filter gives over the unfiltered read. Paimon Java 0.9 predates row tracking."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, IsNotNull, LessThan

from lake_assets import Catalog
from lake_assets.spark.reader import LakePushdownReader
from lake_assets.spark.source_options import SourceOptions
from tests.interop.test_row_tracking_interop import OPTIONS, SCHEMA

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

READ_SCHEMA = "id long, v string, _ROW_ID long, _SEQUENCE_NUMBER long"
CASES = [  # (Spark's condition, the filters Spark pushes for it, files planned per table: de, rt)
    (lambda: F.col("_ROW_ID") < 3, [LessThan(("_ROW_ID",), 3), IsNotNull(("_ROW_ID",))], (3, 2)),
    (lambda: F.col("_ROW_ID").isin(5), [In(("_ROW_ID",), [5])], (1, 1)),
    (lambda: F.col("_SEQUENCE_NUMBER") == 2, [EqualTo(("_SEQUENCE_NUMBER",), 2)], (1, 1)),
    # the update (snapshot 5) made range [0, 1] newer: its rows' sequence number is 5
    (lambda: (F.col("_SEQUENCE_NUMBER") >= 4) & (F.col("id") > 0),
     [GreaterThanOrEqual(("_SEQUENCE_NUMBER",), 4)], (3, 1)),
]


def test_row_id_and_sequence_filters_are_pushed_and_prune(spark, catalog: Catalog, warehouse: str) -> None:
    import lake_assets

    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()
    assert worker == [lake_assets.__file__]  # the Python workers import this checkout
    de = catalog.create_table("db.de", SCHEMA, options=OPTIONS)
    rt = catalog.create_table("db.rt", SCHEMA, options={"row-tracking.enabled": "true", "bucket": "-1"})
    for t in (de, rt):
        for i in range(4):  # four files of two rows: ids 2i, 2i + 1; sequence number i + 1
            t.write_arrow(pa.table({"id": [10 * i, 10 * i + 1], "p": ["a", "a"], "v": ["x", "y"]}, schema=SCHEMA))
    de.update_columns(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["X"]}))  # a second file of [0, 1]
    for which, name in enumerate(("db.de", "db.rt")):
        full = spark.read.format("lake").option("warehouse", warehouse).schema(READ_SCHEMA).load(name)
        whole = spark.createDataFrame(full.collect(), full.schema)  # the unfiltered read, once
        opts = {"path": name, "warehouse": warehouse, "filter-pushdown": "true"}
        for cond, pushed, files in CASES:
            reader = LakePushdownReader(SourceOptions.parse(opts), full.schema, None)
            assert list(reader.pushFilters(pushed)) == []  # claimed: the source prunes and filters
            planned = sum(len(s.files) for part in reader.partitions() for s in part.splits)
            assert planned == files[which], (name, pushed)
            expected = sorted(tuple(r) for r in whole.filter(cond()).collect())  # Spark filters the whole read
            pushing = (spark.read.format("lake").option("warehouse", warehouse).option("filter-pushdown", "true")
                       .schema(READ_SCHEMA).load(name))
            assert expected and sorted(tuple(r) for r in pushing.filter(cond()).collect()) == expected, pushed
        # the filter option names them too (a reused DataFrame's safe pruning)
        opts = {"path": name, "warehouse": warehouse, "filter": '[["_ROW_ID", ">=", 6]]'}
        reader = LakePushdownReader(SourceOptions.parse(opts), full.schema, None)
        assert sum(len(s.files) for part in reader.partitions() for s in part.splits) == 1
        got = spark.read.format("lake").option("warehouse", warehouse).option("filter", opts["filter"]).schema(
            READ_SCHEMA).load(name).collect()
        assert sorted(r["_ROW_ID"] for r in got) == [6, 7]
