"""Column default values through the Spark source: the rows are filled by the core's reader in the
Python workers, and a filter on a defaulted column, claimed by the source (Spark does not filter
again), prunes no file whose stats say the column is all null."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.datasource import EqualTo

import lake_assets
from lake_assets import Catalog
from lake_assets.spark.reader import LakePushdownReader
from lake_assets.spark.source_options import SourceOptions

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


def test_spark_reads_the_defaults(spark, catalog: Catalog, warehouse: str) -> None:
    here = str(Path(lake_assets.__file__).resolve().parent)

    def where(_: object) -> list[str]:
        import lake_assets as worker_lake_assets

        return [str(Path(worker_lake_assets.__file__).resolve().parent)]

    assert spark.sparkContext.parallelize([0], 1).flatMap(where).collect() == [here]  # this checkout's

    t = catalog.create_table("db.d", SCHEMA, options={"bucket": "-1", "fields.v.default-value": "-1",
                                                      "fields.s.default-value": "none"})
    t.write_arrow(pa.table({"id": [1, 2], "v": [10, 20], "s": ["a", "b"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [3, 4], "v": pa.array([None, None], pa.int64()), "s": [None, "d"]}, schema=SCHEMA))
    opts = {"path": "db.d", "warehouse": warehouse, "filter-pushdown": "true"}
    df = spark.read.format("lake").options(**opts).load()
    assert sorted(tuple(r) for r in df.collect()) == [(1, 10, "a"), (2, 20, "b"), (3, -1, "none"), (4, -1, "d")]
    reader = LakePushdownReader(SourceOptions.parse(opts), df.schema, None)
    assert list(reader.pushFilters([EqualTo(("v",), -1)])) == []  # claimed: the source filters filled rows
    assert sum(len(s.files) for part in reader.partitions() for s in part.splits) == 2  # no file pruned
    assert sorted(r["id"] for r in df.filter(F.col("v") == -1).collect()) == [3, 4]
    assert df.filter(F.col("s").isNull()).count() == 0
