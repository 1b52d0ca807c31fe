"""lake_assets through Spark ``local[2]``: phase ``all``, one session.

Writes go through `lake_assets.spark.write_table` (rows routed so each bucket has one writer),
reads through ``spark.read.format("lake")``, the selective read with ``filter-pushdown``. The full
read is timed as a ``noop`` write (every column of every row is scanned and converted, nothing is
collected); its content is checked untimed through a Parquet copy Spark writes. Compaction and
expiry run the distributed jobs (`lake_assets.spark.jobs.compact` / ``expire``) in the same
session. Memory is the summed RSS of the whole process tree (driver, JVM, Python workers).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import tempfile
from typing import Any

import pyarrow.parquet as pq

from bench.tpch.generate import KEYS, PARTITION
from bench.tpch.systems.sys_lake import table_options
from bench.tpch.verify import differences, reference
from bench.tpch.worker import TABLE, Context

TREE_MEMORY = True
SPARK_CONF = {
    "spark.driver.memory": "4g",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
}


def versions() -> dict[str, str]:
    return {"pyspark": importlib.metadata.version("pyspark")}


def session(ctx: Context) -> Any:
    from lake_assets.spark.session import build_session

    conf = {**SPARK_CONF, **ctx.options.get("spark_conf", {})}
    return build_session("bench-tpch", master=ctx.options.get("master", "local[2]"), conf=conf, log_level="ERROR")


def run_job(main: Any, argv: list[str]) -> None:
    """Run a lake_assets Spark job in this session; its JSON summary goes to a buffer, not stdout."""
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise RuntimeError(f"job {main.__module__} {argv} exited with {code}")


def check_reads(ctx: Context, spark: Any, suffix: str, ref_path: str) -> None:
    from pyspark.sql import functions as F

    wh = str(ctx.warehouse)

    def frame(pushdown: bool = False) -> Any:
        # The selective read lets Spark push its filter into the source (``filter-pushdown``, the
        # documented opt-in: Spark 4.3 reuses a pushed plan for later queries of the same
        # DataFrame, and each query here loads a fresh one). Without it Spark reads every row
        # and filters itself.
        reader = spark.read.format("lake").option("warehouse", wh)
        if pushdown:
            reader = reader.option("filter-pushdown", "true")
        return reader.load(TABLE)

    with ctx.step(f"read_full{suffix}", ctx.plan.upserted_rows) as extra:
        frame().write.format("noop").mode("overwrite").save()
        extra["sink"] = "noop"
    with tempfile.TemporaryDirectory(dir=ctx.warehouse.parent) as tmp:
        frame().write.parquet(f"{tmp}/copy")
        ctx.check(f"read_full{suffix}", differences(pq.read_table(f"{tmp}/copy"), reference(ref_path)))
    p = ctx.plan
    with ctx.step(f"read_sel{suffix}") as extra:
        selected = frame(pushdown=True).filter((F.col(PARTITION) == p.select_month)
                                               & (F.col(KEYS[0]) >= p.select_lo)
                                               & (F.col(KEYS[0]) < p.select_hi)).toArrow()
        extra["rows"] = selected.num_rows
    ctx.check(f"read_sel{suffix}", differences(selected, reference(ref_path, p.select_filter)))


def phase_all(ctx: Context) -> None:
    from pyspark.sql import functions as F

    from lake_assets import Catalog
    from lake_assets.spark import write_table
    from lake_assets.spark.jobs import compact, expire

    spark = session(ctx)
    wh = str(ctx.warehouse)
    cat = Catalog(wh)
    cat.create_database("db")
    cat.create_table(TABLE, pq.read_schema(ctx.plan.base), primary_keys=[*KEYS, PARTITION],
                     partition_keys=[PARTITION], options=table_options(ctx))
    with ctx.step("load", ctx.plan.base_rows):
        write_table(spark.read.parquet(ctx.plan.base), wh, TABLE, mode="append")
    for r, (path, rows) in enumerate(zip(ctx.plan.rounds, ctx.plan.round_rows, strict=True), start=1):
        with ctx.step(f"upsert_{r}", rows):
            write_table(spark.read.parquet(path), wh, TABLE, mode="append")
    check_reads(ctx, spark, "_mor", ctx.plan.ref_upserted)

    job_args = ["--warehouse", wh, "--table", TABLE]
    with ctx.step("compact", ctx.plan.upserted_rows):
        run_job(compact.main, [*job_args, "--full"])
    check_reads(ctx, spark, "", ctx.plan.ref_upserted)

    small = spark.read.parquet(ctx.plan.small)
    first = int(pq.read_table(ctx.plan.small, columns=[KEYS[0]]).column(0)[0].as_py())
    m = ctx.plan.small_rows
    with ctx.step("small_commits", ctx.plan.small_commits * m) as extra:
        for i in range(ctx.plan.small_commits):
            lo = first + i * m
            write_table(small.filter((F.col(KEYS[0]) >= lo) & (F.col(KEYS[0]) < lo + m)), wh, TABLE, mode="append")
        extra["commits"] = ctx.plan.small_commits
    snapshots = len(cat.get_table(TABLE).snapshots())
    ctx.check("commits_before_expire", None if snapshots == ctx.plan.commits_before_expire
              else f"{snapshots} snapshots, expected {ctx.plan.commits_before_expire}")
    with ctx.step("expire", snapshots):
        run_job(expire.main, [*job_args, "--retain-min", "1", "--older-than", "0", "--limit", "1000000"])
    left = len(cat.get_table(TABLE).snapshots())
    ctx.check("expire_kept_latest_only", None if left == 1 else f"{left} snapshots left, expected 1")
    with tempfile.TemporaryDirectory(dir=ctx.warehouse.parent) as tmp:
        spark.read.format("lake").option("warehouse", wh).load(TABLE).write.parquet(f"{tmp}/final")
        ctx.check("final_after_expire", differences(pq.read_table(f"{tmp}/final"), reference(ctx.plan.ref_final)))
    spark.stop()


PHASES = {"all": phase_all}
