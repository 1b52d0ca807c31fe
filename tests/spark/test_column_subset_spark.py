"""Spark writes of a DataFrame holding only some columns of a data-evolution table
(`lake_assets.spark.column_subset`): ``df.write.format("lake")`` and `write_table` write the new
rows as files of those columns, read back as the model (the others null), and pypaimon 2.1 (the
reference engine for data evolution; Paimon Java 0.9 predates it) reads the same rows. A table
without data evolution still refuses a DataFrame missing a column, and a data-evolution table one
missing a partition or NOT NULL column, before anything is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.spark import write_table
from tests.interop.paimon import missing, read_ipc
from tests.interop.test_row_tracking_interop import FIELDS, OPTIONS, SCHEMA, RowTrackingPaimon, _rows


def test_dataframes_of_some_columns_write_subset_files_that_pypaimon_reads(
        spark, catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    import lake_assets

    # the Spark workers import this checkout, as the driver does
    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()
    assert worker == [lake_assets.__file__]
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    whole = spark.createDataFrame([(1, "a", "x"), (2, "b", "y")], "id long, p string, v string")
    whole.write.format("lake").option("warehouse", warehouse).mode("append").save("db.t")
    # new rows of p and id only, in the DataFrame's order; v reads null
    part = spark.createDataFrame([("a", 3), ("b", 4), ("a", 5)], "p string, id long")
    part.write.format("lake").option("warehouse", warehouse).mode("append").save("db.t")
    t = catalog.get_table("db.t")
    new = [e.file for e in t.store.file_store_scan().delta_entries(t.latest_snapshot())]
    assert {f.write_cols for f in new} == {("id", "p")} and sum(f.row_count for f in new) == 3
    write_table(spark.createDataFrame([(6, "b")], "id long, p string"), warehouse, "db.t")
    t = catalog.get_table("db.t")
    assert [e.file.write_cols for e in t.store.file_store_scan().delta_entries(t.latest_snapshot())] == [("id", "p")]
    model = {1: ("a", "x"), 2: ("b", "y"), 3: ("a", None), 4: ("b", None), 5: ("a", None), 6: ("b", None)}
    ours = _rows(t.to_arrow(columns=FIELDS))
    assert {r["id"]: (r["p"], r["v"]) for r in ours} == model
    assert sorted(r["_ROW_ID"] for r in ours) == list(range(6)) and t.latest_snapshot().next_row_id == 6
    back = spark.read.format("lake").option("warehouse", warehouse).load("db.t").collect()
    assert {r["id"]: (r["p"], r["v"]) for r in back} == model

    # refused before a task runs: nothing written, the table unchanged
    latest = t.latest_snapshot().id
    no_partition = spark.createDataFrame([(7,)], "id long")
    with pytest.raises(Exception, match=r"partition columns \['p'\] are left out"):
        no_partition.write.format("lake").option("warehouse", warehouse).mode("append").save("db.t")
    strict = catalog.create_table("db.strict", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                         ("v", pa.string())]), options=OPTIONS)
    with pytest.raises(Exception, match=r"NOT NULL columns \['id'\] are left out"):
        spark.createDataFrame([("x",)], "v string").write.format("lake").option("warehouse", warehouse) \
            .mode("append").save("db.strict")
    assert strict.latest_snapshot() is None
    plain = catalog.create_table("db.plain", SCHEMA, options={"bucket": "-1"})
    with pytest.raises(Exception, match=r"missing columns \['v'\]"):
        part.write.format("lake").option("warehouse", warehouse).mode("append").save("db.plain")
    assert plain.latest_snapshot() is None and catalog.get_table("db.t").latest_snapshot().id == latest

    driver = RowTrackingPaimon()
    if not driver.available():
        missing(f"pypaimon venv not found ({driver.python})")
    driver.steps(warehouse, tmp_path, [{"op": "read", "table": "db.t", "columns": FIELDS,
                                        "out": str(tmp_path / "theirs.arrow")}])
    assert _rows(read_ipc(tmp_path / "theirs.arrow")) == ours
