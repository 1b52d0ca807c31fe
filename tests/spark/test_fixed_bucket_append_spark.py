"""Fixed-bucket append tables (no primary key, ``bucket = N``, ``bucket-key``) on Spark:
`write_table` and the ingest job route each bucket to one task (one file per bucket and commit),
a ``df.write`` of unrouted input lets several tasks write one bucket (numbered in their sequence
slots, so a bucket's files never share a first sequence number), and the compact job merges each
bucket's files as Paimon's BucketedAppendCompactManager picks them, keeping each bucket's order."""

from __future__ import annotations

import os
from collections import Counter

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.ops.deletion_vectors import snapshot_index
from lake_assets.ops.read import SplitReader
from lake_assets.spark import write_table
from lake_assets.spark.jobs import compact
from lake_assets.spark.jobs.errors import EXIT_OK
from lake_assets.spec.types import BigIntType
from tests.spark.test_jobs_common import run_job_main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def _rows(start: int, n: int = 40) -> pa.Table:
    return pa.table({"id": pa.array([i % 11 for i in range(start, start + n)], pa.int64()),
                     "dt": ["a" if i % 2 else "b" for i in range(start, start + n)],
                     "v": pa.array(range(start, start + n), pa.int64())}, schema=SCHEMA)


def _files(table) -> list:  # type: ignore[no-untyped-def]
    t = table.refresh()
    return [(e.partition, e.bucket, e.file) for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]


def _bucket_rows(table) -> dict[int, list[int]]:  # type: ignore[no-untyped-def]
    """``v`` per bucket in read order, after checking each row is in its bucket key's bucket."""
    t = table.refresh()
    reader = SplitReader(t.store, t.schema)
    out: dict[int, list[int]] = {}
    for split in t.plan():
        rows = pa.concat_tables(reader.read_split(split))
        assert set(assign_buckets([rows.column("id")], [BigIntType()], 2).tolist()) == {split.bucket}
        assert split.total_buckets == 2
        out.setdefault(split.bucket, []).extend(rows.column("v").to_pylist())
    return out


def test_write_table_df_write_and_compact_job(capsys, spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", SCHEMA, options={"bucket": "2", "bucket-key": "id",
                                                          "compaction.max.file-num": "2"})
    write_table(spark.createDataFrame(_rows(0, 20).to_pandas()).repartition(2), warehouse, "db.t")
    assert Counter(b for _, b, _ in _files(table)) == {0: 1, 1: 1}  # one writer per bucket: one file each
    _bucket_rows(table)

    # unrouted input: two tasks may write one bucket, each in its own sequence slot
    df = spark.createDataFrame(_rows(20, 20).to_pandas()).repartition(2)
    df.write.format("lake").option("warehouse", warehouse).mode("append").save("db.t")
    files = _files(table)
    for bucket in (0, 1):
        firsts = [f.min_sequence_number for _, b, f in files if b == bucket]
        assert len(set(firsts)) == len(firsts), (bucket, firsts)
    before = _bucket_rows(table)
    # the compact job: Paimon's pick with compaction.max.file-num 2 takes the first two files of a
    # bucket, and then the other task's file of the second write, whose interleaved numbers the
    # output (numbered one per row from the first file's) would pass: each bucket becomes one file
    counts = Counter(b for _, b, _ in files)
    assert all(n >= 2 for n in counts.values())
    code, out = run_job_main(capsys, compact.main, "--warehouse", warehouse, "--table", "db.t")
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT", out
    assert out["files_in"] == len(files) and out["files_out"] == 2
    assert _bucket_rows(table) == before  # each bucket's rows in the order they were read before
    assert sorted(v for rows in before.values() for v in rows) == list(range(40))
    for _, _, f in _files(table):  # one number per row
        assert f.max_sequence_number - f.min_sequence_number + 1 == f.row_count


def test_ingest_job_routes_a_fixed_bucket_append_table(capsys, spark, catalog: Catalog, warehouse: str,
                                                        tmp_path) -> None:
    """The ingest job writes a fixed-bucket append table (with deletion vectors) through
    `write_table`: every row in its bucket key's bucket, each bucket in input order (one file per
    bucket and commit); the compact job then drops the rows a delete marked."""
    import pyarrow.parquet as pq

    from lake_assets.spark.jobs import ingest

    table = catalog.create_table("db.t", SCHEMA, options={"bucket": "2", "bucket-key": "id",
                                                          "deletion-vectors.enabled": "true"})
    pq.write_table(_rows(0, 20), tmp_path / "in.parquet")
    code, out = run_job_main(capsys, ingest.main, "--warehouse", warehouse, "--table", "db.t",
                             "--source", str(tmp_path / "in.parquet"), "--format", "parquet")
    assert code == EXIT_OK and out["commit_kind"] == "APPEND" and out["rows_out"] == 20, out
    files = _files(table)
    assert Counter(b for _, b, _ in files) == {0: 1, 1: 1}
    # one input partition: one task wrote every bucket (in its sequence slot), in input order
    rows = _rows(0, 20)
    buckets = assign_buckets([rows.column("id")], [BigIntType()], 2).tolist()
    expected: dict[int, list[int]] = {}
    for b, v in zip(buckets, rows.column("v").to_pylist(), strict=True):
        expected.setdefault(b, []).append(v)
    assert _bucket_rows(table) == expected
    # with deletion vectors: rows deleted through them, then the compact job (units on executors)
    # rewrites each bucket without them and drops the vectors, each bucket in its order
    assert table.refresh().delete_where([("v", "in", [3, 4, 11])]).rows_deleted == 3
    code, out = run_job_main(capsys, compact.main, "--warehouse", warehouse, "--table", "db.t", "--full")
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT" and out["rows_out"] == 17, out
    assert _bucket_rows(table) == {b: [v for v in vs if v not in (3, 4, 11)] for b, vs in expected.items()}
    assert snapshot_index(table.store, table.refresh().latest_snapshot()) == {}


def test_streaming_sink_keeps_each_bucket_in_micro_batch_order(spark, catalog: Catalog, warehouse: str,
                                                                tmp_path) -> None:
    """Two micro-batches routed by bucket (`repartition_by_bucket`) into a fixed-bucket append table:
    two snapshots, every row in its bucket key's bucket, each bucket's first batch before its second."""
    import pyarrow.parquet as pq

    from lake_assets.spark import repartition_by_bucket

    table = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"], options={"bucket": "3", "bucket-key": "id"})
    landing = tmp_path / "landing"
    landing.mkdir()
    for i, start in enumerate((0, 40)):
        pq.write_table(_rows(start), landing / f"part-{i:05d}.parquet")
        # Spark's file source takes files in modification-time order: two landed in one tick
        # would come in either order
        os.utime(landing / f"part-{i:05d}.parquet", (1_700_000_000 + i, 1_700_000_000 + i))
    df = spark.readStream.schema("id long, dt string, v long").option("maxFilesPerTrigger", 1).parquet(str(landing))
    query = (repartition_by_bucket(df, table, num_partitions=2).writeStream.format("lake")
             .option("warehouse", warehouse).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start("db.t"))
    try:
        query.awaitTermination(120)
    finally:
        query.stop()
    table = table.refresh()
    assert [s.commit_kind.name for s in table.snapshots()] == ["APPEND", "APPEND"]
    reader = SplitReader(table.store, table.schema)
    seen = 0
    for split in table.plan():
        rows = pa.concat_tables(reader.read_split(split))
        assert set(assign_buckets([rows.column("id")], [BigIntType()], 3).tolist()) == {split.bucket}
        batches = [v // 40 for v in rows.column("v").to_pylist()]
        assert batches == sorted(batches), (split.bucket, rows.column("v").to_pylist())
        seen += rows.num_rows
    assert seen == 80
