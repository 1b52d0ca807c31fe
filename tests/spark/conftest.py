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
        },
        log_level="ERROR",
    )
    yield session
    session.stop()
