"""Spark writes and reads of a table with Paimon 1.x partition names (``partition.legacy-name =
false``): the data source (``df.write``, whose Python workers name the directories), the native
Parquet write (``write_table_native``, which moves Spark's files into the table's directories) and
Spark reads all use the cast names. The workers import this checkout's lake_assets."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pytest

import lake_assets
from lake_assets import Catalog
from lake_assets.spark.native_write import write_table_native
from lake_assets.spark.schema import spark_schema

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("d", pa.date32(), nullable=False),
                    pa.field("ts", pa.timestamp("us"), nullable=False), ("v", pa.string())])
ROWS = [(i, dt.date(2024, 1, 5 + i % 2), dt.datetime(2024, 1, 5, 1, 2, 3, 400000 * (i % 2)), f"v{i}")
        for i in range(12)]
DIRS = {"d=2024-01-05/ts=2024-01-05 01%3A02%3A03.000000", "d=2024-01-06/ts=2024-01-05 01%3A02%3A03.400000"}


def _partition_dirs(root: str) -> set[str]:
    return {os.path.relpath(os.path.dirname(r), root) for r, _, files in os.walk(root)
            if os.path.basename(r).startswith("bucket-") and any(f.startswith("data-") for f in files)}


def test_spark_writes_and_reads_cast_partition_names(spark, catalog: Catalog, warehouse: str) -> None:
    workers = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()
    assert workers == [lake_assets.__file__]  # the Python workers run this checkout
    assert Path(lake_assets.__file__).parents[1] == Path(__file__).resolve().parents[2]
    opts = {"bucket": "2", "partition.legacy-name": "false"}
    source = catalog.create_table("db.src", SCHEMA, primary_keys=["id", "d", "ts"], partition_keys=["d", "ts"],
                                  options=opts)
    native = catalog.create_table("db.native", SCHEMA, primary_keys=["id", "d", "ts"],
                                  partition_keys=["d", "ts"], options=opts)
    df = spark.createDataFrame(ROWS, spark_schema(source.arrow_schema)).coalesce(1)
    df.write.format("lake").option("warehouse", warehouse).mode("append").save("db.src")
    assert write_table_native(df, warehouse, "db.native", require_native=True).native
    want = sorted(ROWS)
    for table in (source.refresh(), native.refresh()):
        assert _partition_dirs(table.paths.root) == DIRS
        got = spark.read.format("lake").option("warehouse", warehouse).load(table.name).collect()
        assert sorted(tuple(r) for r in got) == want
        assert sorted(tuple(r.values()) for r in table.to_arrow().to_pylist()) == want
