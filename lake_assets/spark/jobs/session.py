"""The job's SparkSession: the active one (tests, notebooks) or a new one it owns."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from lake_assets.spark.jobs.logs import log

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Names of environment variables (comma-separated) the job's own session passes on to its executors
# as ``spark.executorEnv.<NAME>``: on a cluster, executors are started by the cluster's workers with
# the workers' environment, not the driver's, so credentials given to the job in its environment
# (Dagster's lake.yaml ``key``/``secret``) would reach the driver only, and every task reopening an
# S3 table would fail with botocore's NoCredentialsError. Set in the environment, not on argv, so
# secrets stay out of process lists; Spark's UI and event log redact the secret and a session token
# (``spark.redaction.regex`` matches SECRET and TOKEN; an access key id is no secret and is shown).
EXECUTOR_ENV_VAR = "LAKE_ASSETS_EXECUTOR_ENV"


def executor_env_conf(environ: Mapping[str, str], conf: Mapping[str, str]) -> dict[str, str]:
    """``spark.executorEnv.<NAME>`` entries for the variables ``LAKE_ASSETS_EXECUTOR_ENV`` names that
    are set here, except those ``conf`` sets already (an explicit ``--conf`` wins)."""
    names = [n.strip() for n in environ.get(EXECUTOR_ENV_VAR, "").split(",") if n.strip()]
    return {f"spark.executorEnv.{n}": environ[n] for n in names
            if n in environ and f"spark.executorEnv.{n}" not in conf}


def get_session(job: str, args: argparse.Namespace) -> tuple[SparkSession, bool]:
    """The active session (tests, notebooks) or a new one with the ``lake`` data source registered;
    and whether it is new (then the job stops it at the end).

    Under spark-submit the master comes from spark-submit: ``--master`` is ignored there.
    """
    from pyspark.sql import SparkSession

    conf = dict(args.spark_conf)
    active = SparkSession.getActiveSession()
    if active is not None:
        for k, v in conf.items():
            try:
                active.conf.set(k, v)
            except Exception as exc:  # static confs cannot change in a running session
                log.warning("ignoring --conf %s for the running session: %s", k, exc)
        return active, False
    master: str | None = args.master
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        # Started by spark-submit (it owns the JVM): keep the master it was given. SparkConf reads
        # the JVM's properties only once the gateway is connected.
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()
        submitted = SparkConf().get("spark.master", None)
        if submitted:
            master = None
            conf.setdefault("spark.master", submitted)
    conf.update(executor_env_conf(os.environ, conf))
    from lake_assets.spark.session import build_session

    return build_session(f"lake_assets-{job}", master=master, conf=conf), True
