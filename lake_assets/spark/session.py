"""Building a SparkSession that can run lake_assets (embedded ``local[*]`` or any cluster)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

# What every session needs: Python filter pushdown (our reader defines pushFilters, which fails
# when the flag is off), Arrow for pandas conversions, quiet progress bars. The Python workers
# (data source tasks, Arrow UDFs) talk to the JVM over a unix-domain socket instead of TCP:
# measurably faster for unrouted `format("lake")` writes (docs/spark.md, bench/RESULTS.md); a
# static, per-application conf, so a caller's conf (`...enabled=false`) overrides it.
# Arrow batches of up to 100,000 rows instead of Spark's 10,000 to and from Python workers: an
# unrouted `format("lake")` write of 2M rows took 0.3-0.6 CPU s less of ~6.4 (issue 17 §3, round 8);
# `spark.sql.execution.arrow.maxBytesPerBatch` (64 MiB by default) still bounds a batch of wide
# rows on those paths (not `toPandas` / `createDataFrame`, which count rows only).
BASE_CONF: dict[str, str] = {
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.unix.domain.socket.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
}


def session_conf(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The conf a session lake_assets builds starts with: ``BASE_CONF`` overridden by ``conf``."""
    return {**BASE_CONF, **dict(conf or {})}


def build_session(
    app_name: str = "lake_assets",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    *,
    log_level: str = "WARN",
) -> SparkSession:
    """Get or create a session with the ``lake`` data source registered.

    Workers must run a Python that has lake_assets installed: ``PYSPARK_PYTHON`` defaults to this
    interpreter (the venv's), which is right for local mode and for clusters whose nodes share it.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    launched_by_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # the JVM already has a master
    if master:
        builder = builder.master(master)
    elif not launched_by_spark_submit and "spark.master" not in (conf or {}):
        builder = builder.master(os.environ.get("LAKE_SPARK_MASTER", DEFAULT_MASTER))
    # the level from the start: set only after getOrCreate, Spark's own start logs some 75 INFO lines
    # under spark-submit (its default log4j profile), which flood a job's log and Dagster's run logs
    for k, v in {"spark.log.level": log_level, **session_conf(conf)}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    _quiet_glob_warning(spark)
    from lake_assets.spark.datasource import register

    register(spark)
    return spark


# Reading a glob (`data/landing/2024-01-01/*.parquet`) makes Spark look for a streaming sink's
# metadata directory under the literal glob path and log the FileNotFoundException at WARN with an
# 80-line stack trace, on every read: a false alarm. Real read errors still fail the read.
_GLOB_NOISE_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.FileStreamSink",
    "org.apache.spark.sql.execution.streaming.sinks.FileStreamSink",
)


def _quiet_glob_warning(spark: SparkSession) -> None:
    import contextlib

    with contextlib.suppress(Exception):  # another logging backend: keep the noise, never fail a session
        jvm = spark.sparkContext._jvm  # py4j view of the driver JVM; pyspark has no per-logger API
        if jvm is None:  # no gateway to the driver JVM: nothing to quiet
            return
        error = jvm.org.apache.logging.log4j.Level.ERROR
        for name in _GLOB_NOISE_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, error)
