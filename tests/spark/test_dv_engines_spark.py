"""A deletion-vector partial-update table with lookup changelog, written by Spark DataFrames and
compacted by the Spark compaction job: the workers merge each key's old row in (ops/dv_old_values.py)
as the core writer does, and write the same changelog."""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.spark.jobs import compact
from lake_assets.spark.jobs.errors import EXIT_OK
from tests.spark.test_datasource_streaming import EVENTS, _land, _run_sink
from tests.spark.test_jobs_common import run_job_main

SCHEMA = pa.schema([("k", pa.int64()), ("a", pa.int64()), ("b", pa.string())])


def _state(table) -> dict[int, tuple]:
    return {r["k"]: (r["a"], r["b"]) for r in table.to_arrow().to_pylist()}


def test_spark_writes_and_compacts_a_dv_partial_update_table(capsys, spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.pu", SCHEMA, primary_keys=["k"], options={
        "bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": "partial-update",
        "changelog-producer": "lookup", "write-only": "true"})

    def write(rows: list[tuple]) -> None:
        df = spark.createDataFrame(rows, "k long, a long, b string")
        df.write.format("lake").option("warehouse", wh).mode("append").save("db.pu")

    write([(k, k, None) for k in range(20)])
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.pu")
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT", out
    first = table.latest_snapshot().id
    write([(k, None, "s") for k in range(0, 20, 4)])
    assert _state(table) == {k: (k, None) for k in range(20)}  # write-only: still in level 0
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.pu")
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT", out
    assert _state(table) == {k: (k, "s" if k % 4 == 0 else None) for k in range(20)}
    # the old rows were marked, not kept beside the merged ones
    assert sum(r["deletion_vector_rows"] for r in table.health().to_pylist()) == 5
    read = table.read_changes(first, table.latest_snapshot().id).to_pylist()
    changes = sorted((r["k"], r["_row_kind"], r["b"]) for r in read if r["_row_kind"] in ("-U", "+U"))
    assert changes == sorted([(k, "-U", None) for k in range(0, 20, 4)] + [(k, "+U", "s") for k in range(0, 20, 4)])


def test_stream_sink_writes_a_dv_partial_update_table(spark, tmp_path) -> None:
    """The sink's tasks write level 0 only (write-only, as every Spark write): rows show once a
    compaction merges them, the second batch's keys with their rows of the first, which the
    vectors then hide."""
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.events", EVENTS, primary_keys=["id"], options={
        "bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": "partial-update",
        "changelog-producer": "lookup"})
    landing = tmp_path / "landing"
    _land(landing, range(0, 20))
    _run_sink(spark, landing, tmp_path / "ck", wh, "db.events")
    assert table.to_arrow().num_rows == 0  # level 0 is invisible with vectors (as in Paimon)
    table.compact()
    _land(landing, range(0, 20, 2))
    _run_sink(spark, landing, tmp_path / "ck", wh, "db.events")  # resumes: the new file only
    table.compact()
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": i, "v": f"v{i}"} for i in range(20)]
    assert sum(r["deletion_vector_rows"] for r in table.health().to_pylist()) == 10
