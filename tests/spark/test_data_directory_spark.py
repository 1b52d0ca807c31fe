"""Spark writes and reads of ``data-file.path-directory`` tables (Paimon 1.0+): the native write
moves its files into the bucket directories under the table's data directory, and both the Spark
read and the core read find them (tests/interop/test_data_directory_interop.py: the same tables
both ways with pypaimon 2.1 and pypaimon-rust 0.4)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lake_assets
from lake_assets import Catalog

pytest.importorskip("pyspark")

from lake_assets.spark.native_read import read_table
from lake_assets.spark.shuffle import write_table

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                    ("v", pa.string())])


@pytest.mark.parametrize("primary_key", [True, False], ids=["primary-key", "append"])
def test_spark_write_and_read(spark, tmp_path: Path, primary_key: bool) -> None:
    # the workers import this checkout's lake_assets (PYTHONPATH reaches them)
    (worker_module,) = spark.sparkContext.parallelize([0], 1).map(
        lambda _: __import__("lake_assets").__file__).collect()
    assert worker_module == lake_assets.__file__
    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "k"] if primary_key else [], partition_keys=["dt"],
                         options={"bucket": "2" if primary_key else "-1", "data-file.path-directory": "data"})
    rows = [(f"d{i % 2}", i, f"v{i}") for i in range(20)]
    write_table(spark.createDataFrame(rows, "dt string, k long, v string"), wh, "db.t")
    table_dir = Path(wh) / "db.db" / "t"
    files = sorted(str(p.relative_to(table_dir)) for p in table_dir.rglob("*.parquet"))
    assert files and all(f.startswith("data/dt=d") and "/bucket-" in f for f in files)
    got = sorted(tuple(r) for r in read_table(spark, wh, "db.t").select("dt", "k", "v").collect())
    assert got == sorted(rows)
    assert sorted(tuple(r.values()) for r in catalog.get_table("db.t").to_arrow().to_pylist()) == sorted(rows)
