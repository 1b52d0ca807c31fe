"""Spark writes to a row-tracking, data-evolution table get their row ids at commit as core writes
do, and the Spark source reads the merge of a pypaimon 2.1 column update (the reference engine for
row tracking; Paimon Java 0.9 predates it), with ``_ROW_ID`` when the read schema names it."""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.spark import read_table
from tests.interop.paimon import missing
from tests.interop.test_row_tracking_interop import OPTIONS, SCHEMA, RowTrackingPaimon, _ipc


def test_spark_writes_get_row_ids_and_reads_merge_updates(spark, catalog: Catalog, warehouse: str, tmp_path) -> None:
    import lake_assets

    # the Spark workers import this checkout, as the driver does
    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()
    assert worker == [lake_assets.__file__]
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    t.write_arrow(pa.table({"id": [4], "p": ["b"], "v": ["u"]}, schema=SCHEMA))  # ids 0 (snapshot 1)
    rows = spark.createDataFrame([(1, "a", "x"), (2, "b", "y"), (3, "a", "z")], "id long, p string, v string")
    rows.write.format("lake").option("warehouse", warehouse).mode("append").save("db.t")
    got = t.to_arrow(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"]).sort_by("_ROW_ID").to_pylist()
    assert [r["_ROW_ID"] for r in got] == [0, 1, 2, 3] and t.latest_snapshot().next_row_id == 4
    assert {r["id"]: r["_SEQUENCE_NUMBER"] for r in got} == {4: 1, 1: 2, 2: 2, 3: 2}
    driver = RowTrackingPaimon()
    if not driver.available():
        missing(f"pypaimon venv not found ({driver.python})")
    ids = {r["id"]: r["_ROW_ID"] for r in got}
    update = pa.table({"_ROW_ID": pa.array([ids[1], ids[4]], pa.int64()), "v": ["X", "U"]})
    driver.steps(warehouse, tmp_path, [{"op": "update", "table": "db.t", "data": _ipc(tmp_path, "u", update),
                                        "columns": ["v"]}])
    # a read schema may name the system columns, as the core's reads do
    back = (spark.read.format("lake").option("warehouse", warehouse).schema("id long, v string, _ROW_ID long")
            .load("db.t").collect())
    assert sorted((r["id"], r["v"], r["_ROW_ID"]) for r in back) == [
        (1, "X", ids[1]), (2, "y", ids[2]), (3, "z", ids[3]), (4, "U", ids[4])]
    # read_table leaves a data-evolution table to the source: Spark's Parquet reader would return
    # the update files' rows as rows of their own
    assert sorted((r["id"], r["v"]) for r in read_table(spark, warehouse, "db.t").collect()) == [
        (1, "X"), (2, "y"), (3, "z"), (4, "U")]

    # a column update of lake_assets' own, read by Spark with filters on _ROW_ID and on the new value
    t = catalog.get_table("db.t")
    t.update_columns(pa.table({"_ROW_ID": pa.array([ids[2], ids[3]], pa.int64()), "v": ["Y", "Z"]}))
    df = spark.read.format("lake").option("warehouse", warehouse).schema("id long, v string, _ROW_ID long").load("db.t")
    assert sorted((r["id"], r["v"]) for r in df.filter(f"_ROW_ID = {ids[2]}").collect()) == [(2, "Y")]
    assert sorted(r["id"] for r in df.filter("v = 'Z' or v = 'X'").collect()) == [1, 3]


def test_the_compact_job_keeps_row_ids_and_sequence_numbers(capsys, spark, tmp_path) -> None:
    """The distributed compact job (units on Spark executors) compacts a row-tracking table as
    the core does: each row's ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` stored in the output, read back
    the same by the core and by the Spark source; and a data-evolution table into one file of
    whole rows with its first row id."""
    import lake_assets
    from lake_assets.spark.jobs import compact
    from lake_assets.spark.jobs.errors import EXIT_OK
    from tests.spark.test_jobs_common import run_job_main

    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()
    assert worker == [lake_assets.__file__]
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"],
                         options={"row-tracking.enabled": "true", "bucket": "-1", "compaction.min.file-num": "2"})
    for i in range(3):
        t.write_arrow(pa.table({"id": [2 * i, 2 * i + 1], "p": ["a", "b"], "v": [f"x{i}", f"y{i}"]}, schema=SCHEMA))
    columns = ["id", "p", "v", "_ROW_ID", "_SEQUENCE_NUMBER"]
    before = t.to_arrow(columns=columns).sort_by("_ROW_ID").to_pylist()
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.t")
    assert code == EXIT_OK, out
    assert out["commit_kind"] == "COMPACT" and out["files_in"] == 6 and out["files_out"] == 2
    t = cat.get_table("db.t")
    assert t.to_arrow(columns=columns).sort_by("_ROW_ID").to_pylist() == before
    files = [e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]
    assert {(f.first_row_id, f.write_cols) for f in files} == {(None, tuple(columns))}
    back = (spark.read.format("lake").option("warehouse", wh).schema("id long, _ROW_ID long, _SEQUENCE_NUMBER long")
            .load("db.t").collect())
    assert sorted((r["id"], r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in back) == sorted(
        (r["id"], r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in before)
    # Spark's own Parquet reader (read_table) takes the table's columns of the compacted files by
    # name, leaving the stored system columns out
    assert sorted(tuple(r) for r in read_table(spark, wh, "db.t").collect()) == sorted(
        (r["id"], r["p"], r["v"]) for r in before)
    t = cat.create_table("db.de", SCHEMA, options={**OPTIONS, "compaction.min.file-num": "2"})
    for i in range(3):
        t.write_arrow(pa.table({"id": [i], "p": ["a"], "v": [f"x{i}"]}, schema=SCHEMA))
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.de")
    assert code == EXIT_OK, out
    assert out["files_in"] == 3 and out["files_out"] == 1
    t = cat.get_table("db.de")
    assert [(f.first_row_id, f.row_count) for f in (e.file for e in t.store.file_store_scan().live_entries(
        t.latest_snapshot()))] == [(0, 3)]
    assert t.to_arrow(columns=["id", "_ROW_ID"]).sort_by("id").to_pylist() == [
        {"id": i, "_ROW_ID": i} for i in range(3)]
