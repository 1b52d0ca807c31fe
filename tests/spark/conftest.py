"""One local SparkSession for the whole test session (starting one costs several seconds)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
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
