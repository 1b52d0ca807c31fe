"""The expire_partitions job: dry run, then one OVERWRITE snapshot dropping the old partitions."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.spark.jobs import expire_partitions
from lake_assets.spark.jobs.errors import EXIT_CONFIG, EXIT_OK
from tests.spark.test_jobs_common import run_job_main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_expire_partitions_job(capsys, spark, tmp_path):
    wh = str(tmp_path)
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("dt", pa.string())]),
                             primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "partition.timestamp-formatter": "yyyyMMdd"})
    days = [(dt.date.today() - dt.timedelta(days=i)).strftime("%Y%m%d") for i in range(6)]
    table.write_arrow(pa.table({"id": range(6), "dt": days}))
    base = ["--warehouse", wh, "--table", "db.t"]
    # no expiration time anywhere: a clear error, nothing committed
    code, out = run_job_main(capsys, expire_partitions.main, *base)
    assert code == EXIT_CONFIG and "partition.expiration-time" in out["error"]
    code, out = run_job_main(capsys, expire_partitions.main, *base, "--expiration-time", "3d", "--dry-run")
    assert code == EXIT_OK, out
    assert out["expired_partitions"] == 3 and out["snapshot_id"] is None and len(table.snapshots()) == 1
    code, out = run_job_main(capsys, expire_partitions.main, *base, "--expiration-time", "3d", "--max-expires", "2")
    assert code == EXIT_OK, out
    assert [p["dt"] for p in out["partitions"]] == [days[5], days[4]] and out["snapshot_id"] == 2
    assert sorted(table.to_arrow().column("dt").to_pylist()) == sorted(days[:4])
    code, out = run_job_main(capsys, expire_partitions.main, *base, "--strategy", "weekly")
    assert code == EXIT_CONFIG
