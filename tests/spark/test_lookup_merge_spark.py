"""A lookup aggregation table written by Spark DataFrames and compacted by the Spark compaction job
after each write, so a key's rows sit in several levels: the workers' lookup compaction merges the
row above into the row it writes, and the Spark source and `read_table` take a key's newest row
above level 0 only (lsm/lookup_merge.py), as Paimon's LookupMergeFunction; a merge of every row
would read 9 for key 2 of [1, 2], [1, 2], [2], Paimon reads 5. Java 0.9 checks the same table kind
in tests/differential/test_lookup_merge_java.py."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets import Catalog
from lake_assets.spark import read_table
from lake_assets.spark.jobs import compact
from lake_assets.spark.jobs.errors import EXIT_OK
from tests.spark.test_jobs_common import run_job_main

SCHEMA = pa.schema([("k", pa.int64()), ("a", pa.int64())])


def test_spark_reads_and_compacts_a_lookup_sum_table(capsys, spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.agg", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
        "changelog-producer": "lookup", "write-only": "true"})
    for keys in ([1, 2], [1, 2]):  # the core compacts the first two commits (level 5, then 4)
        table.write_arrow(pa.table({"k": keys, "a": [1, 2]}, schema=SCHEMA))
        table.compact()
    spark.createDataFrame([(2, 2)], "k long, a long").write.format("lake").option("warehouse", wh) \
        .mode("append").save("db.agg")
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.agg")
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT", out
    files = sorted(((sp, f) for sp in table.plan() for f in sp.files), key=lambda item: item[1].level)
    assert [f.level for _, f in files] == [3, 4, 5]  # key 2 in three levels above 0
    # the worker's lookup compaction wrote key 2's whole sum (Java's wrapper does): 2 + 2 + 2
    sp, newest = files[0]
    assert pq.read_table(table.store.data_file_path(sp.partition, sp.bucket, newest)).column("a").to_pylist() == [6]
    expected = [{"k": 1, "a": 2}, {"k": 2, "a": 6}]
    assert table.to_arrow().sort_by("k").to_pylist() == expected
    source = spark.read.format("lake").option("warehouse", wh).load("db.agg").toArrow()
    assert source.sort_by("k").to_pylist() == expected
    assert read_table(spark, wh, "db.agg").toArrow().sort_by("k").to_pylist() == expected
    # the Spark workers import this worktree's lake_assets
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()[0]
    assert worker.startswith(here + os.sep), worker
