"""Shared fixtures: a fresh local warehouse and catalog per test."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from lake_assets import Catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.java.oracle import PaimonJava

# The Spark drivers that tests start in child processes with pyspark's own launcher (a script's
# `SparkSession.builder` / `build_session`: test_session_logging, test_sink_strategy_warning,
# test_spill_dirs) run C1 only with the serial GC, as the suite's shared session, the Dagster tests'
# jobs and lake.yaml's do: a short local JVM then starts with ~9 of its ~23 CPU s less on 2 cores.
# No test looks at the JIT or the collector; a developer's own PYSPARK_SUBMIT_ARGS wins.
os.environ.setdefault("PYSPARK_SUBMIT_ARGS",
                      '--driver-java-options "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" pyspark-shell')


@pytest.fixture(scope="session")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PaimonJava]:
    """The session's Paimon Java 0.9 oracle (one JVM for every directory: tests/differential and
    the other directories' oracle reads); skips (fails under CI) when Java or the jar is missing."""
    from tests.java.build import JavaOracleUnavailable, ci, ensure_built
    from tests.java.oracle import PaimonJava

    try:
        build = ensure_built()
    except JavaOracleUnavailable as exc:
        reason = f"Paimon Java oracle unavailable: {exc}"
        if ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    oracle = PaimonJava(build, tmp_path_factory.mktemp("paimon-java"))
    try:
        yield oracle
    finally:
        oracle.close()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The session's one local SparkSession (starting one costs ~10 CPU s): tests/spark's, and the
    Dagster tests' in-process jobs (tests/dagster/in_process_jobs.py) share it."""
    pytest.importorskip("pyspark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from lake_assets.spark.session import build_session

    session = build_session(
        "lake_assets-tests",
        master="local[2]",
        conf={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "2g",
            # The C1 compiler only and the serial collector, as the Dagster tests' and the demo's
            # short JVMs: the suite's queries are many and tiny, so C2's compilations and G1's
            # threads cost more CPU than they win (test_datasource_read: 65-72 -> 47-48 CPU s).
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        },
        log_level="ERROR",
    )
    yield session
    session.stop()


@pytest.fixture
def in_process_jobs(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Dagster assets' Spark jobs run in this process on `spark` for the test (no launcher,
    tests/dagster/in_process_jobs.py); the list of the jobs run."""
    from pyspark.sql import SparkSession as Session

    from tests.dagster.in_process_jobs import patch_run_job

    assert Session.getActiveSession() is spark  # the jobs' `get_session` takes this one
    return patch_run_job(monkeypatch)


@pytest.fixture
def warehouse(tmp_path) -> str:
    return str(tmp_path / "warehouse")


@pytest.fixture
def catalog(warehouse: str) -> Catalog:
    cat = Catalog(warehouse)
    cat.create_database("db")
    return cat


ORDERS_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("dt", pa.string()),
        ("name", pa.string()),
        ("amount", pa.float64()),
        ("op", pa.string()),
    ]
)


@pytest.fixture
def orders(catalog: Catalog):
    """A PK table partitioned by dt, 2 buckets, row kinds from column ``op``."""
    return catalog.create_table(
        "db.orders",
        ORDERS_SCHEMA,
        primary_keys=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op"},
    )


def rows(table: pa.Table, *keys: str) -> list[dict]:
    """Rows sorted by ``keys`` for order-independent comparison."""
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()
