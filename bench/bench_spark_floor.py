"""The floor of a Python-side Spark write, against Spark's own Parquet write (issue 17 §3).

    PYSPARK_PYTHON=.venv/bin/python PYTHONPATH=. .venv/bin/python bench/bench_spark_floor.py \
        [--rows 2000000] [--rounds 6] [--zstd-level 3] [--routed] [--task-cpu] [--conf KEY=VALUE ...]

Same input and session as `bench_spark.py` (``local[2]``, its Spark conf, CPU of the driver and the
JVM's whole process tree). The ratio asked for is one run's, so the run is built to give the same
ratio twice (round 9):

* **paired, interleaved rounds.** Every round runs each step once, the order reversed every other
  round (A B C, C B A, ...), so a slow minute of a shared machine falls on both sides of a pair.
  Each step's ratio to ``parquet_zstd`` is taken within its round; the median of those paired
  ratios is the figure, with their spread (least–most) beside it. Best-of-round figures are
  printed too, for the older tables.
* **the same work pinned.** One cached DataFrame (read once, materialised before the warm-up), so
  no step pays or skips the input scan; one whole untimed round first (workers started, pyarrow and
  lake_assets imported, the JIT warm on the full size); a driver ``gc.collect()`` and a JVM
  ``System.gc()`` before each step, the driver's collector off during it; the same zstd level for
  every writer (``--zstd-level``, default 3: parquet-java's default, which Spark's write uses; the
  table gets ``file.compression.zstd-level`` and Spark the Hadoop key
  ``parquet.compression.codec.zstd.level``); and as many output files for every writer as the lake
  write makes (Spark's ``maxRecordsPerFile`` and the floor sink's ``files-per-task`` set from the
  lake write of the warm-up round).
* **outputs checked comparable.** Each writing step's output is counted after it (untimed): files,
  rows (Parquet footers) and bytes; a step whose rows or files differ from Spark's is flagged.

Steps: ``noop`` (Spark reads the cached rows into its ``noop`` sink); ``parquet_zstd`` (the
reference); ``py_null`` (the rows handed to a Python data source that drops them: the transport
every Python-side write pays); ``py_parquet`` (the same writer writing each task's rows with
``pq.write_table``: unsorted, no system columns, no buckets); ``lake_write``
(``df.write.format("lake")`` into a primary-key table, unrouted). ``--routed`` adds
``repartition_parquet`` / ``repartition_py_null`` (a hash repartition into 8 partitions, then
Spark's Parquet write / the dropping writer) and ``write_table`` (`lake_assets.spark.write_table`).

``--sort-probe`` adds ``sorted_py_null``: each task's rows sorted in the JVM
(``sortWithinPartitions`` by partition and key) before the dropping writer, the price of letting
Spark do the per-task sort that the lake writer does in Python (round 9).

``--task-cpu`` also prints the CPU each write task of ``py_parquet`` and ``lake_write`` spent in its
Python worker (all its threads; the lake write then goes through ``format("floor_lake")``, the same
source with a timer around each task, `spark_floor_lake.py`). ``lake_import`` is a worker's import
of `lake_assets.spark.writer` and ``lake_first_task`` that import plus the worker's first task.
"""

from __future__ import annotations

import argparse
import gc
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_spark import BUCKETS, SPARK_CONF, generate, load_average
from bench.spark_floor_sinks import FILES_PER_TASK, TASK_CPU_DIR, ZSTD_LEVEL, NullSink, ParquetSink, task_cpu
from bench.tree_cpu import TreeCpu
from lake_assets import Catalog

REFERENCE = "parquet_zstd"
WRITES = ("parquet_zstd", "py_parquet", "lake_write", "repartition_parquet", "write_table")


def timed(fn: Callable[[], Any], tree: TreeCpu) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the driver and the JVM's tree) of ``fn``."""
    wall, cpu, tree_cpu, overhead = time.perf_counter(), time.process_time(), tree.sample(), tree.overhead
    fn()
    tree_cpu = tree.sample() - tree_cpu
    driver = time.process_time() - cpu - (tree.overhead - overhead)
    return time.perf_counter() - wall, driver + tree_cpu


def output_of(directory: Path) -> tuple[int, int, int]:
    """(data files, rows, bytes) of the Parquet files under ``directory`` (a lake table: its data
    files only, not manifests or snapshots)."""
    files = [p for p in directory.rglob("*.parquet") if "manifest" not in p.parts]
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in files)
    return len(files), rows, sum(p.stat().st_size for p in files)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=6, help="timed rounds (each runs every step once)")
    ap.add_argument("--zstd-level", type=int, default=3, help="zstd level of every writer (Spark's default 3)")
    ap.add_argument("--no-cache", action="store_true", help="read the input file in every step instead")
    ap.add_argument("--one-file-per-task", action="store_true",
                    help="leave Spark's and the floor sink's files at one per task (the rounds before 9)")
    ap.add_argument("--routed", action="store_true", help="also the routed steps (repartition, write_table)")
    ap.add_argument("--sort-probe", action="store_true",
                    help="also sorted_py_null: the rows sorted per task in the JVM (by partition and key), dropped")
    ap.add_argument("--task-cpu", action="store_true", help="also report each write task's Python worker CPU")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="Spark conf over bench_spark's (e.g. spark.sql.execution.arrow.maxRecordsPerBatch=10000)")
    args = ap.parse_args()
    from lake_assets.spark import write_table
    from lake_assets.spark.session import build_session

    work = Path(tempfile.mkdtemp(prefix="bench-spark-floor-"))
    try:
        expected = generate(args.rows, work / "input.parquet")
        level = str(args.zstd_level)
        conf = {**SPARK_CONF, "spark.hadoop.parquet.compression.codec.zstd.level": level,
                **dict(kv.split("=", 1) for kv in args.conf)}
        spark = build_session("bench-spark-floor", master="local[2]", conf=conf, log_level="ERROR")
        jvm = spark.sparkContext._jvm
        tree = TreeCpu(int(jvm.java.lang.ProcessHandle.current().pid()))
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
        wh = Path(work / "warehouse")
        catalog = Catalog(str(wh))
        catalog.create_database("db")
        df = spark.read.parquet(str(work / "input.parquet"))
        if not args.no_cache:
            df = df.cache()
            assert df.count() == args.rows
        tasks = df.rdd.getNumPartitions()
        table_options = {"bucket": str(BUCKETS), "file.compression.zstd-level": level}

        def new_table(name: str) -> Path:
            catalog.create_table(name, expected.schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options=table_options)
            return wh / "db.db" / name.split(".", 1)[1]

        # Spark's and the floor sink's files per task follow the lake write's (set after the warm-up)
        shape = {"files": 1}

        def step_parquet(out: Path) -> Callable[[], Any]:
            records = math.ceil(args.rows / tasks / shape["files"]) if shape["files"] > 1 else 0  # 0: no limit
            return lambda: (df.write.mode("overwrite").option("compression", "zstd")
                            .option("maxRecordsPerFile", records).parquet(str(out)))

        def step_py_parquet(out: Path) -> Callable[[], Any]:
            return lambda: (df.write.format("floor_parquet").option("path", str(out)).options(**timing)
                            .option(FILES_PER_TASK, shape["files"]).option(ZSTD_LEVEL, level).mode("append").save())

        def step_lake(out: Path) -> Callable[[], Any]:
            name = f"db.{out.name}"
            return lambda: (df.write.format(lake_format).option("warehouse", str(wh)).options(**timing)
                            .mode("append").save(name))

        def step_write_table(out: Path) -> Callable[[], Any]:
            return lambda: write_table(df, str(wh), f"db.{out.name}")

        def routed() -> Any:
            return df.repartition(8, "dt", "id")

        steps: dict[str, Callable[[Path], Callable[[], Any]]] = {
            "noop": lambda out: lambda: df.write.format("noop").mode("overwrite").save(),
            REFERENCE: step_parquet,
            "py_null": lambda out: lambda: df.write.format("floor_null").mode("append").save(),
            "py_parquet": step_py_parquet,
            "lake_write": step_lake,
        }
        if args.sort_probe:
            # what a per-task sort in the JVM costs (sortWithinPartitions, before the Arrow transfer),
            # against the Python-side sort and gather it would replace: sorted_py_null - py_null
            steps["sorted_py_null"] = lambda out: lambda: (
                df.sortWithinPartitions("dt", "id").write.format("floor_null").mode("append").save())
        if args.routed:
            steps["repartition_parquet"] = lambda out: lambda: (
                routed().write.mode("overwrite").option("compression", "zstd").parquet(str(out)))
            steps["repartition_py_null"] = lambda out: lambda: routed().write.format("floor_null").mode("append").save()
            steps["write_table"] = step_write_table

        measured: dict[str, list[tuple[float, float]]] = {s: [] for s in steps}
        outputs: dict[str, set[tuple[int, int, int]]] = {s: set() for s in WRITES if s in steps}
        loads = [load_average()]

        def run(step: str, r: int) -> tuple[float, float]:
            out = work / f"{step}_{r}"
            if step in ("lake_write", "write_table"):
                out = new_table(f"db.{step}_{r}")
            fn = steps[step](out)
            gc.collect()
            jvm.java.lang.System.gc()
            gc.disable()
            try:
                result = timed(fn, tree)
            finally:
                gc.enable()
            if step in outputs:
                outputs[step].add(output_of(out))
                shutil.rmtree(out, ignore_errors=True)
            return result

        # the warm-up round, untimed: the whole size through every step, the lake write first (the
        # other writers' files per task follow its file count)
        run("lake_write", -1)
        if not args.one_file_per_task:
            shape["files"] = max(1, next(iter(outputs["lake_write"]))[0] // tasks)
        order = list(steps)
        for step in order:
            if step != "lake_write":
                run(step, -1)
        for seen in outputs.values():
            seen.clear()
        for stale in cpu_dir.glob("*_write-*.cpu"):  # the warm-up's tasks (lake_import stays: once per worker)
            stale.unlink()
        for stale in cpu_dir.glob("py_parquet-*.cpu"):
            stale.unlink()
        for r in range(args.rounds):
            for step in (order if r % 2 == 0 else order[::-1]):
                measured[step].append(run(step, r))
            loads.append(load_average())
        tree.close()
        spark.stop()
        report(args, measured, outputs, loads, tasks, shape["files"], str(cpu_dir) if args.task_cpu else None)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(args: argparse.Namespace, measured: dict[str, list[tuple[float, float]]],
           outputs: dict[str, set[tuple[int, int, int]]], loads: list[str], tasks: int, files: int,
           cpu_dir: str | None) -> None:
    ref = measured[REFERENCE]
    print(f"rows {args.rows}, {args.rounds} paired rounds, {tasks} tasks, {files} files per task (Spark, floor), "
          f"zstd level {args.zstd_level}, cached {not args.no_cache}, conf {args.conf}")
    print(f"load average {' | '.join(loads)}\n")
    print("| step | wall s, median (best) | CPU s, median (best) | paired wall ratio, median (spread) "
          "| paired CPU ratio, median (spread) |")
    print("|---|---:|---:|---:|---:|")
    for step, runs in measured.items():
        walls = [w for w, _ in runs]
        cpus = [c for _, c in runs]
        wall_ratios = [w / rw for (w, _), (rw, _) in zip(runs, ref, strict=True)]
        cpu_ratios = [c / rc for (_, c), (_, rc) in zip(runs, ref, strict=True)]
        print(f"| {step} | {statistics.median(walls):.2f} ({min(walls):.2f}) | "
              f"{statistics.median(cpus):.2f} ({min(cpus):.2f}) | "
              f"{statistics.median(wall_ratios):.2f}x ({min(wall_ratios):.2f}–{max(wall_ratios):.2f}) | "
              f"{statistics.median(cpu_ratios):.2f}x ({min(cpu_ratios):.2f}–{max(cpu_ratios):.2f}) |")
    print("\nOutput of each writing step (every timed round):\n")
    print("| step | files | rows | MB | vs parquet_zstd |\n|---|---|---|---|---|")
    ref_files = sorted({f for f, _, _ in outputs[REFERENCE]})
    for step, seen in outputs.items():
        counts = sorted({f for f, _, _ in seen})
        rows = sorted({n for _, n, _ in seen})
        mb = [b / 1e6 for _, _, b in seen]
        note = ("ROWS DIFFER" if rows != [args.rows] else "files differ" if counts != ref_files
                else "same rows and files")
        print(f"| {step} | {'/'.join(map(str, counts))} | {'/'.join(map(str, rows))} | "
              f"{min(mb):.1f}–{max(mb):.1f} | {note} |")
    if cpu_dir:
        print("\nPython worker CPU s per write task, all rounds:\n")
        print("| step | tasks | least | median | all |\n|---|---:|---:|---:|---|")
        for step in ("py_parquet", "lake_write", "lake_import", "lake_first_task"):
            found = sorted(task_cpu(cpu_dir, step))
            if found:
                print(f"| {step} | {len(found)} | {found[0]:.3f} | {statistics.median(found):.3f} | "
                      + " ".join(f"{x:.2f}" for x in found) + " |")


if __name__ == "__main__":
    main()
