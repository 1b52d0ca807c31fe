"""Rows routed by `repartition_by_bucket` (the bucket computed in the JVM) land in the bucket the
core computes for them, whatever Spark types the key columns have."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.ops.read import SplitReader
from lake_assets.spark import repartition_by_bucket, write_table
from lake_assets.spark.schema import BUCKET_COLUMN
from lake_assets.spark.shuffle import single_task_input
from lake_assets.spark.writer import gather

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([("k32", pa.int32()), ("name", pa.string()), ("dt", pa.string()), ("v", pa.int64())])


def _rows(n: int) -> pa.Table:
    return pa.table({
        "k32": list(range(n)),
        "name": [f"n{i % 7}" for i in range(n)],
        "dt": [f"2024-01-0{1 + i % 3}" for i in range(n)],
        "v": list(range(n)),
    }, schema=SCHEMA)


def test_rows_land_in_the_cores_bucket(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k32", "name", "dt"], partition_keys=["dt"],
                                 options={"bucket": "5"})
    data = _rows(300)
    # Spark widens nothing here, but the UDF still casts to the table's key types before hashing
    df = spark.createDataFrame(data.to_pandas()).selectExpr("cast(k32 as bigint) as k32", "name", "dt", "v")
    routed = repartition_by_bucket(df, table).toArrow()
    keys = list(table.schema.bucket_keys)
    expected = assign_buckets([data.column(k).combine_chunks() for k in keys], table.schema.types(keys), 5)
    got = routed.sort_by([("v", "ascending")]).column(BUCKET_COLUMN).to_pylist()
    assert got == list(expected)

    write_table(spark.createDataFrame(data.to_pandas()), warehouse, "db.t")
    reader = SplitReader(table.store, table.schema)
    for split in table.plan():  # every file's rows hash to the bucket it was written to
        rows = pa.concat_tables(reader.read_split(split))
        buckets = assign_buckets([rows.column(k).combine_chunks() for k in keys], table.schema.types(keys), 5)
        assert set(buckets.tolist()) == {split.bucket}
    assert table.to_arrow().sort_by([("v", "ascending")]).to_pylist() == data.to_pylist()


def test_small_write_to_a_partitioned_table_commits_once(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k32", "name", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2"})
    for start in (0, 3):
        write_table(spark.createDataFrame(_rows(6).slice(start, 3).to_pandas()), warehouse, "db.t")
    assert len(table.snapshots()) == 2
    assert table.to_arrow().sort_by([("v", "ascending")]).to_pylist() == _rows(6).to_pylist()


def test_writer_gathers_sparks_small_batches() -> None:
    batches = [pa.record_batch({"x": list(range(i * 10, i * 10 + 10))}) for i in range(7)]
    groups = list(gather(iter(batches), rows=25))
    assert [len(g) for g in groups] == [3, 3, 1]  # 30, 30, then the 10-row rest
    assert [b for g in groups for b in g] == batches
    assert list(gather(iter([]), rows=25)) == []


def test_single_task_input_is_written_without_a_shuffle(spark, catalog: Catalog, warehouse: str, tmp_path) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k32", "name", "dt"], partition_keys=["dt"],
                                 options={"bucket": "3"})
    path = str(tmp_path / "in.parquet")
    pq.write_table(_rows(60), path)
    one = spark.read.parquet(path).filter("v >= 10")
    assert single_task_input(one)
    assert not single_task_input(one.repartition(2))  # an exchange: never asked for its partitions
    assert not single_task_input(spark.createDataFrame(_rows(60).to_pandas()).repartition(4, "v"))
    write_table(one, warehouse, "db.t")
    write_table(spark.read.parquet(path).filter("v < 10"), warehouse, "db.t")
    assert table.to_arrow().sort_by([("v", "ascending")]).to_pylist() == _rows(60).to_pylist()
    assert len(table.snapshots()) == 2
