"""The Spark read paths against Spark's own Parquet read, paired rounds (issue 17 §3, session 18).

    PYSPARK_PYTHON=.venv/bin/python PYTHONPATH=. .venv/bin/python bench/bench_spark_read.py \
        [--rows 2000000] [--rounds 6] [--conf KEY=VALUE ...]

The rows of `bench_spark.generate` (int64 key, a partition string, int64, int32, two doubles, two
strings) are written once into three stores, untimed: Spark's own zstd Parquet (the reference,
``df.write.parquet`` of the input), a primary-key table (2 partitions x 4 buckets, written by the
core and fully compacted: no merge is needed) and an append table (2 partitions, ``bucket = -1``),
and into Arrow IPC files for the floor. Each step is one query over every row that touches every
column (sums of the numbers, min and max of the strings, a count), so nothing is pruned and
nothing is cached (``--noop``: Spark's ``noop`` sink instead, the form of earlier sessions; the
results are still checked by the aggregation first):

* ``parquet``: ``spark.read.parquet`` of Spark's files;
* ``lake_pk`` / ``lake_append``: ``spark.read.format("lake")`` of each table;
* ``read_table_pk`` / ``read_table_append``: `lake_assets.spark.read_table` of each table;
* ``py_floor``: ``format("floor_read")`` (`spark_read_floor.py`) yielding the same rows, pre-built
  in Spark's Arrow schema, over as many partitions as ``lake_pk`` plans: a Python source's floor;
  ``--floor-batch-rows N ...`` adds ``py_floor_N``, the same with batches of N rows (the source's
  are `lake_assets.spark.schema.MAX_BATCH_ROWS`).

One ``local[2]`` session; one untimed round first (workers started, imports done, the JIT warm);
then ``--rounds`` rounds, each running every step once, the order reversed every other round so a
busy minute falls on both sides. A step's ratio to ``parquet`` is taken within its round (wall, and
CPU of the driver plus the JVM's whole process tree, `bench.tree_cpu.TreeCpu`, of which the
Python workers' part is printed too); the median of
the paired ratios is printed with its spread. Every step's result must equal the reference's.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_spark import BUCKETS, SPARK_CONF, generate, load_average
from bench.tree_cpu import TreeCpu
from lake_assets import Catalog

REFERENCE = "parquet"
TARGET = 1.3
STEPS = ("parquet", "lake_pk", "read_table_pk", "lake_append", "read_table_append", "py_floor")


def build_tables(catalog: Catalog, data: pa.Table) -> None:
    """The compacted primary-key table and the append table, written by the core (untimed)."""
    catalog.create_table("db.pk", data.schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": str(BUCKETS)})
    catalog.create_table("db.append", data.schema, partition_keys=["dt"])
    for name in ("db.pk", "db.append"):
        table = catalog.get_table(name)
        for part in data.to_batches(max_chunksize=max(1, data.num_rows // 2)):  # two commits
            table.write_arrow(pa.Table.from_batches([part]))
    catalog.get_table("db.pk").compact(full=True)


def floor_files(data: pa.Table, schema: Any, parts: int, batch_rows: int, work: Path) -> list[str]:
    """The rows cast to Spark's Arrow schema once, in ``parts`` IPC files of ``batch_rows`` batches."""
    from lake_assets.spark.schema import spark_arrow_schema

    target = spark_arrow_schema(schema)
    rows = data.select(target.names).cast(target)
    step = -(-rows.num_rows // parts)
    files = []
    for i in range(parts):
        path = work / f"floor-{batch_rows}-{i}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, target) as writer:
            for batch in rows.slice(i * step, step).to_batches(max_chunksize=batch_rows):
                writer.write_batch(batch)
        files.append(str(path))
    return files


def aggregate(df: Any) -> list[Any]:
    """One query over every row and column: nothing can be pruned."""
    from pyspark.sql import functions as F

    numbers = [F.sum(c).alias(f"sum_{c}") for c in ("id", "v_long", "v_int", "v_double", "v_price")]
    strings = [f(c).alias(f"{f.__name__}_{c}") for c in ("dt", "v_code", "v_text") for f in (F.min, F.max)]
    row = df.agg(F.count("*").alias("rows"), *numbers, *strings).collect()[0]
    return [round(v, 3) if isinstance(v, float) else v for v in row]


def noop(df: Any) -> list[Any]:
    """Every column of every row into Spark's ``noop`` sink (``--noop``: session 7's form)."""
    df.write.format("noop").mode("overwrite").save()
    return []


def run(args: argparse.Namespace) -> dict[str, Any]:
    from lake_assets.spark import read_table
    from lake_assets.spark.reader import plan_read
    from lake_assets.spark.schema import MAX_BATCH_ROWS
    from lake_assets.spark.session import build_session
    from lake_assets.spark.source_options import SourceOptions

    work = Path(tempfile.mkdtemp(prefix="bench-spark-read-", dir=args.work))
    try:
        data = generate(args.rows, work / "input.parquet")
        wh = str(work / "warehouse")
        catalog = Catalog(wh)
        catalog.create_database("db")
        build_tables(catalog, data)
        conf = {**SPARK_CONF, **dict(kv.split("=", 1) for kv in args.conf)}
        spark = build_session("bench-spark-read", master="local[2]", conf=conf, log_level="ERROR")
        from bench.spark_read_floor import FILES, FloorReadSource

        spark.dataSource.register(FloorReadSource)
        tree = TreeCpu(int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()))
        parquet_dir = str(work / "parquet")
        spark.read.parquet(str(work / "input.parquet")).write.option("compression", "zstd").parquet(parquet_dir)
        lake_parts = len(plan_read(catalog.get_table("db.pk"), SourceOptions.parse({"warehouse": wh, "path": "db.pk"})))
        lake = spark.read.format("lake").option("warehouse", wh)
        schema = lake.load("db.pk").schema
        floor = {"py_floor": floor_files(data, schema, lake_parts, MAX_BATCH_ROWS, work)}
        floor.update({f"py_floor_{n}": floor_files(data, schema, lake_parts, n, work) for n in args.floor_batch_rows})
        names = (*STEPS, *[s for s in floor if s not in STEPS])
        steps: dict[str, Callable[[], Any]] = {
            "parquet": lambda: spark.read.parquet(parquet_dir),
            "lake_pk": lambda: lake.load("db.pk"),
            "read_table_pk": lambda: read_table(spark, wh, "db.pk"),
            "lake_append": lambda: lake.load("db.append"),
            "read_table_append": lambda: read_table(spark, wh, "db.append"),
        }
        for step, files in floor.items():
            steps[step] = (lambda f: lambda: spark.read.format("floor_read").schema(schema)
                           .option(FILES, json.dumps(f)).load())(files)
        query = noop if args.noop else aggregate
        expected = aggregate(steps[REFERENCE]())
        problems = [f"{s}: {got} != {expected}" for s in names if (got := aggregate(steps[s]())) != expected]
        wall: dict[str, list[float]] = {s: [] for s in names}
        cpu: dict[str, list[float]] = {s: [] for s in names}
        workers: dict[str, list[float]] = {s: [] for s in names}  # the Python workers' part of cpu

        def jvm_cpu() -> float:
            return sum(v for (pid, _), v in tree.seen.items() if pid == tree.root)
        loads = [load_average()]
        for r in range(args.rounds):
            for step in names if r % 2 == 0 else reversed(names):
                gc.collect()
                spark.sparkContext._jvm.java.lang.System.gc()
                gc.disable()
                start, own, tree_cpu, overhead = time.perf_counter(), time.process_time(), tree.sample(), tree.overhead
                jvm = jvm_cpu()
                query(steps[step]())
                tree_cpu = tree.sample() - tree_cpu
                workers[step].append(tree_cpu - (jvm_cpu() - jvm))
                wall[step].append(time.perf_counter() - start)
                cpu[step].append(time.process_time() - own - (tree.overhead - overhead) + tree_cpu)
                gc.enable()
            loads.append(load_average())
        tree.close()
        spark.stop()
        return {"rows": args.rows, "rounds": args.rounds, "query": query.__name__, "conf": args.conf,
                "lake_partitions": lake_parts,
                "wall": wall, "cpu": cpu, "workers": workers, "loads": loads, "problems": problems}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(result: dict[str, Any]) -> str:
    lines = [f"rows {result['rows']:,}, query {result['query']}, {result['rounds']} paired rounds, lake_pk partitions "
             f"{result['lake_partitions']}, extra conf {result['conf']}; load average per round: "
             + " | ".join(result["loads"]), "",
             "| step | wall s (median) | CPU s (median) | Python workers' CPU s (median) | "
             "wall / parquet (median, min–max) | CPU / parquet (median, min–max) | ≤ 1.3x (wall) |",
             "|---|---:|---:|---:|---:|---:|---|"]
    wall, cpu = result["wall"], result["cpu"]
    for step in wall:
        rw = [a / b for a, b in zip(wall[step], wall[REFERENCE], strict=True)]
        rc = [a / b for a, b in zip(cpu[step], cpu[REFERENCE], strict=True)]
        verdict = "" if step == REFERENCE else ("PASS" if statistics.median(rw) <= TARGET else "MISS")
        lines.append(f"| {step} | {statistics.median(wall[step]):.2f} | {statistics.median(cpu[step]):.2f} | "
                     f"{statistics.median(result['workers'][step]):.2f} | "
                     f"{statistics.median(rw):.2f}x ({min(rw):.2f}–{max(rw):.2f}) | "
                     f"{statistics.median(rc):.2f}x ({min(rc):.2f}–{max(rc):.2f}) | {verdict} |")
    for step in ("lake_pk", "lake_append"):
        over = [a / b for a, b in zip(cpu[step], cpu["py_floor"], strict=True)]
        lines.append(f"\n{step} CPU / py_floor CPU: {statistics.median(over):.2f}x ({min(over):.2f}–{max(over):.2f})")
    if result["problems"]:
        lines += ["", "WRONG RESULTS:", *result["problems"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--work", default=None, help="directory for the temporary files (default: $TMPDIR)")
    parser.add_argument("--noop", action="store_true", help="time a noop-sink write instead of the aggregation")
    parser.add_argument("--floor-batch-rows", type=int, nargs="*", default=[],
                        help="also floor steps yielding batches of these many rows (the source yields 64K)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="an extra Spark conf")
    parser.add_argument("--json", type=Path, default=None, help="also write the result as JSON here")
    args = parser.parse_args(argv)
    result = run(args)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
