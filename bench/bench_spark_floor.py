"""The floor of a Python-side Spark write, against Spark's own Parquet write (issue 17 §3).

    PYSPARK_PYTHON=.venv/bin/python PYTHONPATH=. .venv/bin/python bench/bench_spark_floor.py \
        [--rows 2000000] [--repeat 3] [--task-cpu] [--conf KEY=VALUE ...]

Same input and session as `bench_spark.py` (``local[2]``, its Spark conf, CPU of the driver and the
JVM's whole process tree). Steps, alternated in each round, best kept:

A warm-up writes 10,000 rows through each sink first (the workers start and import pyarrow and
lake_assets). Steps:

* ``noop``: Spark reads and projects the rows into its ``noop`` sink (the scan's own cost);
* ``parquet_zstd``: ``df.write.parquet`` with zstd (the reference);
* ``py_null``: the rows handed to a Python data source writer that drops them: the Arrow transport
  from the JVM to the Python workers, which every Python-side write pays;
* ``py_parquet``: the same writer writing each task's batches with ``pq.write_table``: the cheapest
  Python-side write (unsorted, no system columns, no buckets);
* ``lake_write``: ``df.write.format("lake")`` into a primary-key table (unrouted);
* ``repartition_parquet`` / ``repartition_py_null``: a hash repartition into 8 partitions, then
  Spark's Parquet write / the dropping Python writer: the floor of any routed write;
* ``write_table``: `lake_assets.spark.write_table` (routed: one writer per bucket).

``--task-cpu`` also prints the CPU each write task of ``py_parquet`` and ``lake_write`` spent in its
Python worker (all its threads; the lake write then goes through ``format("floor_lake")``, the same
source with a timer around each task, `spark_floor_lake.py`): on a shared machine the steadier
figure, as it leaves out the JVM and other processes. ``lake_import`` is a worker's import of
`lake_assets.spark.writer` (before its first task; once per worker process) and ``lake_first_task``
that import plus the worker's first task.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_spark import _JVM_PID, SPARK_CONF, create_table, generate, load_average, timed
from bench.spark_floor_sinks import TASK_CPU_DIR, NullSink, ParquetSink, task_cpu
from lake_assets import Catalog


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--task-cpu", action="store_true", help="also report each write task's Python worker CPU")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="Spark conf over bench_spark's (e.g. spark.sql.execution.arrow.maxRecordsPerBatch=100000)")
    args = ap.parse_args()
    from lake_assets.spark import write_table
    from lake_assets.spark.session import build_session

    work = Path(tempfile.mkdtemp(prefix="bench-spark-floor-"))
    try:
        expected = generate(args.rows, work / "input.parquet")
        conf = {**SPARK_CONF, **dict(kv.split("=", 1) for kv in args.conf)}
        spark = build_session("bench-spark-floor", master="local[2]", conf=conf, log_level="ERROR")
        _JVM_PID[:] = [int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())]
        spark.dataSource.register(NullSink)
        spark.dataSource.register(ParquetSink)
        cpu_dir = work / "task-cpu"
        cpu_dir.mkdir()
        # the timed lake source only with --task-cpu: the plain step measures format("lake") itself
        lake_format = "lake"
        if args.task_cpu:
            from bench.spark_floor_lake import TimedLakeSource

            spark.dataSource.register(TimedLakeSource)
            lake_format = "floor_lake"
        timing = {TASK_CPU_DIR: str(cpu_dir)} if args.task_cpu else {}
        wh = str(work / "warehouse")
        catalog = Catalog(wh)
        catalog.create_database("db")
        df = spark.read.parquet(str(work / "input.parquet"))
        best: dict[str, tuple[float, float]] = {}
        loads = [load_average()]

        def keep(step: str, measured: tuple[float, float]) -> None:
            wall, cpu = best.get(step, (float("inf"), float("inf")))
            best[step] = (min(wall, measured[0]), min(cpu, measured[1]))

        def routed() -> Any:
            return df.repartition(8, "dt", "id")

        # warm-up: the Python workers start and import pyarrow once
        df.limit(10_000).write.format("floor_null").mode("append").save()
        df.limit(10_000).write.format("floor_parquet").option("path", str(work / "warm")).mode("append").save()
        # ... and import lake_assets in them (once per worker process), as a job's first write does
        create_table(catalog, "db.warm", expected.schema)
        df.limit(10_000).write.format("lake").option("warehouse", wh).mode("append").save("db.warm")
        def one_round(r: int) -> None:
            keep("noop", timed(lambda: df.write.format("noop").mode("overwrite").save()))
            keep("parquet_zstd", timed(lambda: df.write.mode("overwrite").option("compression", "zstd")
                                       .parquet(str(work / f"parquet-{r}"))))
            keep("py_null", timed(lambda: df.write.format("floor_null").mode("append").save()))
            keep("py_parquet", timed(lambda: df.write.format("floor_parquet").option("path", str(work / f"py-{r}"))
                                     .options(**timing).mode("append").save()))
            create_table(catalog, f"db.direct_{r}", expected.schema)
            keep("lake_write", timed(lambda: df.write.format(lake_format).option("warehouse", wh).options(**timing)
                                     .mode("append").save(f"db.direct_{r}")))
            keep("repartition_parquet", timed(lambda: routed().write.mode("overwrite").option("compression", "zstd")
                                              .parquet(str(work / f"routed-{r}"))))
            keep("repartition_py_null", timed(lambda: routed().write.format("floor_null").mode("append").save()))
            create_table(catalog, f"db.routed_{r}", expected.schema)
            keep("write_table", timed(lambda: write_table(df, wh, f"db.routed_{r}")))
            loads.append(load_average())

        for r in range(args.repeat):
            one_round(r)
        spark.stop()
        ref_wall, ref_cpu = best["parquet_zstd"]
        print(f"rows {args.rows}, best of {args.repeat}, conf {args.conf}; load average {' | '.join(loads)}")
        print("| step | wall s (CPU s) | vs parquet_zstd, wall / CPU |")
        print("|---|---:|---:|")
        for step, (wall, cpu) in best.items():
            print(f"| {step} | {wall:.2f} ({cpu:.2f}) | {wall / ref_wall:.2f}x / {cpu / ref_cpu:.2f}x |")
        if args.task_cpu:
            print("\nPython worker CPU s per write task, all rounds:\n")
            print("| step | tasks | least | median | all |\n|---|---:|---:|---:|---|")
            for step in ("py_parquet", "lake_write", "lake_import", "lake_first_task"):
                found = sorted(task_cpu(str(cpu_dir), step))
                if found:
                    print(f"| {step} | {len(found)} | {found[0]:.3f} | {statistics.median(found):.3f} | "
                          + " ".join(f"{x:.2f}" for x in found) + " |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
