"""Rows routed by `repartition_by_bucket` (the bucket computed in the JVM) land in the bucket the
core computes for them, whatever Spark types the key columns have."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.read import SplitReader
from lake_assets.ops.write import TableWriter
from lake_assets.spark import repartition_by_bucket, write_table
from lake_assets.spark.schema import BUCKET_COLUMN
from lake_assets.spark.shuffle import single_task_input
from lake_assets.spark.source_options import SourceOptions
from lake_assets.spark.write_task import gather, gather_bytes, write_task

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


def test_writer_gathers_sparks_small_batches_by_bytes() -> None:
    batches = [pa.record_batch({"x": pa.array(range(i * 10, i * 10 + 10), pa.int64())}) for i in range(7)]
    assert {b.nbytes for b in batches} == {80}
    groups = list(gather(iter(batches), max_bytes=250))
    assert [len(g) for g in groups] == [3, 3, 1]  # at most 250 bytes each: 240, 240, then the rest
    assert [b for g in groups for b in g] == batches
    big = pa.record_batch({"x": pa.array(range(100), pa.int64())})  # 800 bytes: a group of its own
    assert [len(g) for g in gather(iter([batches[0], big, batches[1]]), max_bytes=250)] == [1, 1, 1]
    assert list(gather(iter([]), max_bytes=25)) == []


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(rows, Arrow bytes) of every `TableWriter.write_arrow` call from now on (the real method
    still runs)."""
    calls: list[tuple[int, int]] = []
    real = TableWriter.write_arrow

    def counted(self: TableWriter, data: pa.Table, **kwargs: object) -> None:
        calls.append((data.num_rows, data.nbytes))
        real(self, data, **kwargs)

    monkeypatch.setattr(TableWriter, "write_arrow", counted)
    return calls


@pytest.mark.parametrize("buffer", [None, "1 mb"])
def test_task_hands_its_writer_slices_of_half_the_write_buffer(
        catalog: Catalog, warehouse: str, monkeypatch: pytest.MonkeyPatch, buffer: str | None) -> None:
    """A task's rows reach the core's writer in groups of at most half of write-buffer-size (the
    slice the writer routes whole), not in Spark's 10,000-row batches nor in fixed row counts: a
    task that fits is routed once, and its buckets flush without a re-sort. Versions of a key in
    different batches and groups keep their order (the later one wins)."""
    options = {"bucket": "3"} if buffer is None else {"bucket": "3", "write-buffer-size": buffer}
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k32", "dt"], partition_keys=["dt"], options=options)
    budget = gather_bytes(table)
    assert budget == (128 if buffer is None else 0.5) * 1024 * 1024
    # 100 batches of 2,000 rows (64,000 bytes each, 6.4 MB in all): one group under the default buffer,
    # 13 groups of at most 8 under 1 MB; keys 0-99,999 twice, the second version of each written later
    rows = 200_000
    data = pa.table({"k32": pa.array([i % 100_000 for i in range(rows)], pa.int32()),
                     "name": [f"n{i % 7}" for i in range(rows)],
                     "dt": [f"2024-01-0{1 + (i % 100_000) % 3}" for i in range(rows)],
                     "v": pa.array(range(rows), pa.int64())}, schema=SCHEMA)
    batches = data.to_batches(max_chunksize=2_000)
    calls = _count_writes(monkeypatch)
    options_ = SourceOptions.parse({"path": "db.t", "warehouse": warehouse})
    message = write_task(options_, "user", iter(batches))
    assert sum(n for n, _ in calls) == rows
    if buffer is None:
        assert len(calls) == 1
    else:  # full groups: each within the budget, and one more batch would not have fitted
        batch_bytes = max(b.nbytes for b in batches)
        assert len(calls) == 13 and all(budget - batch_bytes < size <= budget for _, size in calls[:-1])
    table.new_committer("user").commit([CommitMessage.from_json(m) for m in message.messages], 1)
    got = table.to_arrow().sort_by("k32")
    assert got.num_rows == 100_000
    assert got.column("v").to_pylist() == list(range(100_000, rows))


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
