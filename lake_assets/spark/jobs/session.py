"""The job's SparkSession: the active one (tests, notebooks) or a new one it owns."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from lake_assets.spark.jobs.logs import log

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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
    from lake_assets.spark.session import build_session

    return build_session(f"lake_assets-{job}", master=master, conf=conf), True
