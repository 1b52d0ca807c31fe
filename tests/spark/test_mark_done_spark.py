"""Spark batch writes mark the partitions they wrote done, as Paimon's Spark writes do with
``partition.end-input-to-done``: a ``_SUCCESS`` file after the commit, in exactly those partitions."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.mark_done import SUCCESS_FILE_NAME

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_df_write_marks_the_partitions_it_wrote(spark, catalog: Catalog, warehouse: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    table = catalog.create_table("db.t", schema, partition_keys=["dt"],
                                 options={"bucket": "-1", "partition.end-input-to-done": "true"})
    table.write_arrow(pa.table({"id": [0], "dt": ["2024-01-09"]}, schema=schema))  # the core's write: no marker
    df = spark.createDataFrame([(i, f"2024-01-0{i % 2 + 1}") for i in range(6)], "id long, dt string").repartition(2)
    df.write.format("lake").option("warehouse", warehouse).mode("append").save("db.t")
    root = Path(table.store.paths.root)
    assert sorted(p.parent.name for p in root.rglob(SUCCESS_FILE_NAME)) == ["dt=2024-01-01", "dt=2024-01-02"]
    first = json.loads((root / "dt=2024-01-01" / SUCCESS_FILE_NAME).read_text())
    assert first["creationTime"] == first["modificationTime"] > 0
    # a second write into one of them keeps its creation time
    spark.createDataFrame([(9, "2024-01-01")], "id long, dt string").write.format("lake") \
        .option("warehouse", warehouse).mode("append").save("db.t")
    again = json.loads((root / "dt=2024-01-01" / SUCCESS_FILE_NAME).read_text())
    assert again["creationTime"] == first["creationTime"] and again["modificationTime"] >= first["modificationTime"]
    assert table.refresh().to_arrow().num_rows == 8


def test_ingest_job_reports_the_partitions_it_marked(capsys, spark, tmp_path: Path) -> None:
    from lake_assets.spark.jobs import ingest
    from lake_assets.spark.jobs.errors import EXIT_OK
    from tests.spark.test_jobs_common import run_job_main

    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.orders", pa.schema([("id", pa.int64()), ("dt", pa.string())]),
                             partition_keys=["dt"], options={"partition.end-input-to-done": "true"})
    src = tmp_path / "in.csv"
    src.write_text("id,dt\n1,2024-02-01\n2,2024-02-02\n")
    code, out = run_job_main(capsys, ingest.main, "--warehouse", wh, "--table", "db.orders",
                             "--source", str(src), "--format", "csv")
    assert code == EXIT_OK, out
    assert out["marked_done"] == ["dt=2024-02-01", "dt=2024-02-02"] and out["mark_done_missing"] == []
    assert (Path(table.store.paths.root) / "dt=2024-02-02" / SUCCESS_FILE_NAME).is_file()
