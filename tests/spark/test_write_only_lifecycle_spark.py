"""Spark writes of a ``write-only`` table run no commit-time lifecycle; the Spark compact job's
commit runs it, as Paimon's write-only writers and its compact procedure (a copy of the table with
``write-only = false``) do. Java 0.9 pins the rule in tests/differential/test_write_only_lifecycle_java.py."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import partition_expire
from lake_assets.spark.jobs import compact
from lake_assets.spark.jobs.errors import EXIT_OK
from tests.spark.test_jobs_common import run_job_main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_spark_writes_run_none_and_the_compact_job_runs_it(capsys, spark, catalog: Catalog, warehouse: str) -> None:
    partition_expire._last_check.clear()
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    table = catalog.create_table("db.t", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "1", "write-only": "true",
                                          "tag.automatic-creation": "process-time",
                                          "partition.expiration-time": "7 d",
                                          "partition.expiration-check-interval": "0 s"})
    today, old = ((dt.date.today() - dt.timedelta(days=d)).isoformat() for d in (0, 30))
    table.write_arrow(pa.table({"id": [1, 2], "dt": [today, old]}, schema=schema))
    table.create_tag("short", time_retained=dt.timedelta(milliseconds=1))  # past its retention at once
    spark.createDataFrame([(3, today)], "id long, dt string").write.format("lake") \
        .option("warehouse", warehouse).mode("append").save("db.t")
    table = table.refresh()
    assert table.latest_snapshot().id == 2  # the Spark write's commit kept "short" and dropped nothing
    assert list(table.tags()) == ["short"]  # no automatic tag either
    assert sorted(set(table.to_arrow().column("dt").to_pylist())) == sorted([today, old])
    code, out = run_job_main(capsys, compact.main, "--warehouse", warehouse, "--table", "db.t", "--full")
    assert code == EXIT_OK, out
    table = table.refresh()
    assert list(table.tags()) == [(dt.date.today() - dt.timedelta(days=1)).isoformat()]
    assert table.to_arrow().column("dt").to_pylist() == [today, today]
