"""spark-submit of the job entry points to a real standalone cluster (one master, one worker, loopback).

Executors are separate JVMs with their own Python workers: this is where a closure that does not
reopen the table from the warehouse URL, or a package the workers cannot import, would fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from tests.reliability.conftest import s3_server, s3_warehouse
from tests.spark.test_jobs_common import PK_SCHEMA, make_pk_table, sorted_rows, write_batches

__all__ = ["s3_server", "s3_warehouse"]  # moto's S3 server on loopback, as the reliability suite's

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60
SUBMIT_TIMEOUT_S = 180
# Every JVM of the cluster (master, worker, drivers, executors) runs C1 only with the serial GC, as
# the Spark test session's driver does: they live seconds and run tiny jobs, where C2's compilations
# and G1's threads cost more CPU on two cores than they win. Nothing the test checks depends on it.
SHORT_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


def _spark_home() -> str:
    pyspark = pytest.importorskip("pyspark")
    return os.path.dirname(pyspark.__file__)


def _scala_version(home: str) -> str:
    # The worker builds executor command lines with Spark's launcher, which needs the Scala version
    # (spark-submit's scripts export it; a bare `java ... Worker` does not).
    for name in os.listdir(os.path.join(home, "jars")):
        m = re.match(r"spark-core_(\d+\.\d+)-", name)
        if m:
            return m.group(1)
    raise AssertionError(f"no spark-core jar under {home}/jars")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    # own process group: stopping it also stops the executor JVMs the worker launched
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    raise AssertionError(f"{text!r} not seen in {log}:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


@pytest.fixture
def standalone_cluster(tmp_path):
    """A standalone master and one worker (1 core, 1 GB) on 127.0.0.1; yields the master URL."""
    home = _spark_home()
    # the cluster's own environment has no AWS credentials: a job's must reach its executors itself
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
           "SPARK_HOME": home, "SPARK_SCALA_VERSION": _scala_version(home),
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    classpath = os.path.join(home, "jars", "*")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    try:
        master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
        procs.append(_start(["java", *SHORT_JVM, "-cp", classpath, "org.apache.spark.deploy.master.Master",
                             "--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"], master_log, env))
        # started together: the worker retries its registration until the master is up
        procs.append(_start(["java", *SHORT_JVM, "-cp", classpath, "org.apache.spark.deploy.worker.Worker", url,
                             "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0",
                             "--work-dir", str(tmp_path / "work")], worker_log, env))
        _wait_for(worker_log, "Successfully registered with master", procs[1])
        yield url, env
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _submit(url: str, env: dict[str, str], job: str, *args: str, job_env: dict[str, str] | None = None
            ) -> tuple[int, dict, str]:
    cmd = [os.path.join(env["SPARK_HOME"], "bin", "spark-submit"), "--master", url,
           "--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false",
           "--conf", "spark.sql.shuffle.partitions=2",
           "--conf", f"spark.driver.extraJavaOptions={' '.join(SHORT_JVM)}",
           "--conf", f"spark.executor.extraJavaOptions={' '.join(SHORT_JVM)}",
           str(REPO / "jobs" / f"{job}.py"), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env={**env, "PYSPARK_DRIVER_PYTHON": sys.executable, **(job_env or {})},
                          timeout=SUBMIT_TIMEOUT_S, cwd=REPO)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, f"stdout: {proc.stdout!r}\nstderr: {proc.stderr[-3000:]}"
    return proc.returncode, json.loads(lines[0]), proc.stderr


def test_spark_submit_compact_and_ingest_on_a_standalone_cluster(standalone_cluster, tmp_path):
    url, env = standalone_cluster
    wh = str(tmp_path / "wh")
    table = make_pk_table(wh)
    write_batches(table, 6)
    expected = sorted_rows(table)
    code, out, err = _submit(url, env, "compact", "--warehouse", wh, "--table", "db.t")
    assert code == 0, err[-3000:]
    # Spark's start logs at the job's level (WARN), not 75 INFO lines from its default log4j profile
    # (only the three version lines SparkContext logs before it reads spark.log.level remain)
    spark_info = [ln for ln in err.splitlines() if " INFO " in ln and "lake_assets.jobs" not in ln]
    assert len(spark_info) <= 3, err[:3000]
    assert out["spark_master"] == url  # spark-submit's master, not the job's default local[*]
    assert out["commit_kind"] == "COMPACT" and out["tasks"] == 4 and out["files_in"] == 24
    assert out["health_after"]["level0_files"] == 0
    assert sorted_rows(table) == expected

    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [1000, 1001], "v": [1.0, 2.0]}), src)  # dt comes from --partition
    code, out, err = _submit(url, env, "ingest", "--warehouse", wh, "--table", "db.t", "--source", str(src),
                             "--format", "parquet", "--partition", "dt=2024-01-09")
    assert code == 0, err[-3000:]
    assert out["commit_kind"] == "APPEND" and out["rows_in"] == out["rows_out"] == 2
    fresh = Catalog(wh).get_table("db.t")
    assert sorted(r["id"] for r in fresh.to_arrow(filter=[("dt", "=", "2024-01-09")]).to_pylist()) == [1000, 1001]
    assert len(sorted_rows(fresh)) == len(expected) + 2


def test_s3_credentials_in_the_job_environment_reach_the_executors(standalone_cluster, s3_warehouse):
    """As Dagster runs a job on an S3 warehouse (lake.yaml's key/secret in the job's environment,
    `S3Storage.job_env`): the worker's executors do not inherit the driver's environment, so without
    `LAKE_ASSETS_EXECUTOR_ENV` every task reopening the table failed with NoCredentialsError."""
    url, env = standalone_cluster
    wh, opts = s3_warehouse
    cat = Catalog(wh, **opts)
    cat.create_database("db")
    table = cat.create_table("db.t", PK_SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    write_batches(table, 2, rows=4)
    expected = sorted_rows(table)
    job_env = {"AWS_ACCESS_KEY_ID": opts["key"], "AWS_SECRET_ACCESS_KEY": opts["secret"],
               "AWS_DEFAULT_REGION": "us-east-1",
               "LAKE_ASSETS_EXECUTOR_ENV": "AWS_ACCESS_KEY_ID,AWS_DEFAULT_REGION,AWS_SECRET_ACCESS_KEY"}
    endpoint = json.dumps({"endpoint_url": opts["client_kwargs"]["endpoint_url"]})
    code, out, err = _submit(url, env, "compact", "--warehouse", wh, "--table", "db.t",
                             "--full", "--storage-option", f"client_kwargs={endpoint}", job_env=job_env)
    assert code == 0, err[-3000:]
    assert out["commit_kind"] == "COMPACT" and out["tasks"] == 2 and out["files_in"] == 4, out
    assert sorted_rows(Catalog(wh, **opts).get_table("db.t")) == expected
