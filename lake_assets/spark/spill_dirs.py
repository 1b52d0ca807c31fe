"""Where lake_assets spills on Spark: in Spark's local directories, as Paimon's Spark writers do
(``SparkUtils.createIOManager`` opens their ``IOManager`` on the block manager's local dirs).

In a Python worker (every data source task, compaction unit, ``mapInArrow`` task and the data
source's ``commit``) the core finds them by itself: Spark sets ``SPARK_LOCAL_DIRS`` for its Python
workers to the executor's block-manager directories under ``spark.local.dir`` (or the cluster
manager's ``SPARK_LOCAL_DIRS`` / ``LOCAL_DIRS``), which `lake_assets.ops.spill.spill_root` reads,
and Spark deletes them with the executor. The driver's Python process has no such variable: a
job's driver-side writer (the changelog job's ``--export-table``) takes `driver_spill_dir`.
``LAKE_ASSETS_SPILL_DIR`` (e.g. ``spark.executorEnv.LAKE_ASSETS_SPILL_DIR``) wins over both.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from lake_assets.ops.spill import SPARK_LOCAL_DIRS_ENV, SPILL_DIR_ENV

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def driver_spill_dir(spark: SparkSession) -> str | None:
    """The directory the driver's writers spill under: None when ``LAKE_ASSETS_SPILL_DIR`` or
    ``SPARK_LOCAL_DIRS`` is set (`spill_root` takes them), else the first existing directory of
    the session's ``spark.local.dir``, else None (the system temp directory, which is also
    Spark's default ``spark.local.dir``)."""
    if os.environ.get(SPILL_DIR_ENV, "").strip() or os.environ.get(SPARK_LOCAL_DIRS_ENV, "").strip():
        return None
    configured = spark.sparkContext.getConf().get("spark.local.dir", None) or ""
    for d in configured.split(","):
        if d.strip() and os.path.isdir(d.strip()):
            return d.strip()
    return None
