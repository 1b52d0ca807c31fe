"""The Spark path against Spark's own Parquet, in one Spark session (issue 17 §3).

    .venv/bin/python bench/bench_spark.py [--rows 2000000] [--repeat 2] [--profile]

Workload (issue 17): an int64 primary key and six value columns (int64, int32, two doubles, two
strings), 2 partitions x 4 buckets, ``--rows`` rows generated once into an input Parquet file that
Spark reads in 2 splits. One ``local[2]`` session runs, each ``--repeat`` times (best kept):

* ``parquet_write``: ``df.write.parquet`` of the input DataFrame (Spark's default snappy), and
  ``parquet_write_zstd`` with zstd (the lake table's codec, Paimon's default);
* ``lake_write``: ``df.write.format("lake")`` into a fresh primary-key table (each task writes
  the buckets its rows fall in, no shuffle), and ``lake_write_table``: `write_table` (rows
  routed so that each bucket has one writer: bucket column plus a shuffle), and
  ``lake_write_native``: `write_table_native` (Spark's own Parquet writer writes the table's
  files after the same shuffle, the driver commits them);
* ``parquet_read`` / ``lake_read``: every column of every row into Spark's ``noop`` sink, of the
  snappy Parquet output and of the table ``lake_write`` made (merge-on-read: level-0 files of two
  tasks per bucket), ``lake_read_routed`` of the table `write_table` made (one file per bucket),
  ``lake_read_compacted`` after a full compaction (files that need no merge); ``read_table_*`` the
  same tables through `lake_assets.spark.read_table` (Spark's Parquet reader for the files that
  need no merge).

Ratios are lake / Parquet of the same run (target: ≤ 1.3x), of wall time and of CPU time (the
driver, the JVM and its Python workers: every process of the JVM's tree, read from /proc, so a
busy machine's waiting does not count). Steps alternate within each round. ``--writes-only``
skips the reads. The table contents are checked against the input (untimed). ``--profile`` wraps the
driver in cProfile for one extra run of
each lake step (the Python workers are separate processes: it shows planning and commit).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # run as `python bench/bench_spark.py` from a checkout

from bench.tpch.machine import describe, versions  # noqa: E402
from bench.tree_cpu import TreeCpu  # noqa: E402
from lake_assets import Catalog  # noqa: E402

PARTITIONS = ("2024-01-01", "2024-01-02")
BUCKETS = 4
TARGET = 1.3
SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "3g",
}


def generate(rows: int, path: Path) -> pa.Table:
    """The input rows (unique keys in random order) as a Parquet file Spark reads in 2+ splits."""
    rng = np.random.default_rng(17)
    ids = rng.permutation(rows).astype(np.int64)
    words = np.array([f"w{i:07d}" for i in range(4096)], dtype=object)
    data = pa.table({
        "id": ids,
        "dt": pa.array(np.array(PARTITIONS, dtype=object)[ids % len(PARTITIONS)], pa.string()),
        "v_long": rng.integers(0, 1 << 40, rows),
        "v_int": rng.integers(0, 1 << 20, rows).astype(np.int32),
        "v_double": rng.random(rows),
        "v_price": np.round(rng.random(rows) * 1000, 2),
        "v_code": pa.array(words[rng.integers(0, len(words), rows)], pa.string()),
        "v_text": pa.array([f"text {i}" for i in ids.tolist()], pa.string()),
    })
    pq.write_table(data, path, row_group_size=max(1, rows // 8))
    return data


def create_table(catalog: Catalog, name: str, schema: pa.Schema) -> None:
    catalog.create_table(name, schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": str(BUCKETS)})


_TREE: list[TreeCpu] = []  # the JVM's process tree, sampled from the session's start


def process_cpu() -> float:
    """CPU seconds so far of this driver process plus the JVM's process tree (Python workers):
    each process's own time as last seen (`bench.tree_cpu.TreeCpu`), so a worker reaped outside
    the tree keeps counting (summing reaped children's time made a step's CPU go down)."""
    if not _TREE:
        return time.process_time()
    tree = _TREE[0]
    total = tree.sample()
    return time.process_time() - tree.overhead + total  # the sampler runs in this process


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``fn``."""
    start, cpu = time.perf_counter(), process_cpu()
    fn()
    return time.perf_counter() - start, process_cpu() - cpu


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(args: argparse.Namespace) -> dict[str, Any]:
    from lake_assets.spark import read_table, write_table, write_table_native
    from lake_assets.spark.session import build_session

    work = Path(tempfile.mkdtemp(prefix="bench-spark-", dir=args.work))
    try:
        source = work / "input.parquet"
        expected = generate(args.rows, source)
        conf = {**SPARK_CONF, **dict(kv.split("=", 1) for kv in args.conf)}
        spark = build_session("bench-spark", master="local[2]", conf=conf, log_level="ERROR")
        _TREE[:] = [TreeCpu(int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()))]
        wh = str(work / "warehouse")
        catalog = Catalog(wh)
        catalog.create_database("db")
        df = spark.read.parquet(str(source))
        splits = df.rdd.getNumPartitions()
        best: dict[str, float] = {}
        best_cpu: dict[str, float] = {}
        loads: list[str] = [load_average()]

        def keep(step: str, measured: tuple[float, float]) -> None:
            best[step] = min(best.get(step, float("inf")), measured[0])
            best_cpu[step] = min(best_cpu.get(step, float("inf")), measured[1])

        def one_round(r: int) -> str:
            out, zstd = str(work / f"parquet-{r}"), str(work / f"parquet-zstd-{r}")
            direct, routed, native = f"db.direct_{r}", f"db.routed_{r}", f"db.native_{r}"
            for name in (direct, routed, native):
                create_table(catalog, name, expected.schema)
            keep("parquet_write", timed(lambda: df.write.mode("overwrite").parquet(out)))
            keep("parquet_write_zstd", timed(lambda: df.write.mode("overwrite").option("compression", "zstd")
                                             .parquet(zstd)))
            keep("lake_write", timed(lambda: df.write.format("lake").option("warehouse", wh)
                                     .mode("append").save(direct)))
            keep("lake_write_table", timed(lambda: write_table(df, wh, routed)))
            keep("lake_write_native", timed(lambda: write_table_native(df, wh, native, require_native=True)))
            if args.writes_only:
                loads.append(load_average())
                return direct
            keep("parquet_read", timed(lambda: spark.read.parquet(out).write.format("noop")
                                       .mode("overwrite").save()))
            keep("lake_read", timed(lambda: spark.read.format("lake").option("warehouse", wh).load(direct)
                                    .write.format("noop").mode("overwrite").save()))
            keep("lake_read_routed", timed(lambda: spark.read.format("lake").option("warehouse", wh)
                                           .load(routed).write.format("noop").mode("overwrite").save()))
            keep("read_table_routed", timed(lambda: read_table(spark, wh, routed).write.format("noop")
                                            .mode("overwrite").save()))
            loads.append(load_average())
            return direct

        warm_up(spark, df.limit(10_000), catalog, wh, expected.schema, work)
        tables = [one_round(r) for r in range(args.repeat)]
        compacted = tables[-1]
        if not args.writes_only:
            catalog.get_table(compacted).compact(full=True)
        for _ in range(0 if args.writes_only else args.repeat):
            keep("lake_read_compacted", timed(lambda: spark.read.format("lake").option("warehouse", wh)
                                              .load(compacted).write.format("noop").mode("overwrite").save()))
            keep("read_table_compacted", timed(lambda: read_table(spark, wh, compacted).write.format("noop")
                                               .mode("overwrite").save()))
        loads.append(load_average())
        problems = check(catalog, expected, [*tables, f"db.routed_{args.repeat - 1}",
                                             *[f"db.native_{r}" for r in range(args.repeat)]])
        profiles: dict[str, str] = {}
        if args.profile:
            profiles = profile(spark, df, catalog, wh, expected.schema, work)
        # What the session really ran with (build_session defaults to the unix socket).
        uds = spark.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled", "false")
        spark.stop()
        return {"rows": args.rows, "input_splits": splits, "conf": args.conf,
                "worker_transport": "unix socket" if uds == "true" else "TCP", "best_seconds": best,
                "best_cpu_seconds": best_cpu,
                "load_average": loads, "problems": problems, "profiles": profiles}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def warm_up(spark: Any, df: Any, catalog: Catalog, wh: str, schema: pa.Schema, work: Path) -> None:
    """Run every step once on a few rows: the JVM's JIT and Spark's Python workers start here,
    not in the first timed step."""
    from lake_assets.spark import write_table, write_table_native

    create_table(catalog, "db.warm_up", schema)
    create_table(catalog, "db.warm_up_native", schema)
    df.write.mode("overwrite").parquet(str(work / "warm-up"))
    df.write.format("lake").option("warehouse", wh).mode("append").save("db.warm_up")
    write_table(df, wh, "db.warm_up")
    write_table_native(df, wh, "db.warm_up_native", require_native=True)
    spark.read.parquet(str(work / "warm-up")).write.format("noop").mode("overwrite").save()
    spark.read.format("lake").option("warehouse", wh).load("db.warm_up").write.format("noop").mode("overwrite").save()


def check(catalog: Catalog, expected: pa.Table, names: list[str]) -> list[str]:
    """Each table holds exactly the input rows."""
    want = expected.sort_by("id")
    problems = []
    for name in names:
        got = catalog.get_table(name).to_arrow().select(want.column_names).sort_by("id")
        if got.num_rows != want.num_rows or not all(got.column(c).equals(want.column(c)) for c in want.column_names):
            problems.append(f"{name}: {got.num_rows} rows differ from the {want.num_rows} input rows")
    return problems


def profile(spark: Any, df: Any, catalog: Catalog, wh: str, schema: pa.Schema, work: Path) -> dict[str, str]:
    """The driver's cProfile of one lake write and one lake read (top functions by cumulative time)."""
    from lake_assets.spark import write_table_native

    create_table(catalog, "db.profiled", schema)
    create_table(catalog, "db.profiled_native", schema)
    out = {}
    for step, fn in (
        ("lake_write", lambda: df.write.format("lake").option("warehouse", wh).mode("append").save("db.profiled")),
        ("lake_write_native", lambda: write_table_native(df, wh, "db.profiled_native", require_native=True)),
        ("lake_read", lambda: spark.read.format("lake").option("warehouse", wh).load("db.profiled")
         .write.format("noop").mode("overwrite").save()),
    ):
        prof = cProfile.Profile()
        prof.runcall(fn)
        text = work / f"{step}.txt"
        with open(text, "w") as fh:
            pstats.Stats(prof, stream=fh).sort_stats("cumulative").print_stats(12)
        out[step] = text.read_text()
    return out


def report(result: dict[str, Any]) -> str:
    best = result["best_seconds"]
    rows = result["rows"]
    lines = [
        f"rows {rows:,}, input splits {result['input_splits']}, extra conf {result['conf']}, "
        f"Python worker transport {result['worker_transport']}; load average: "
        + " | ".join(result["load_average"]),
        "",
        "| step | seconds (best) | CPU seconds (best) | M rows/s |",
        "|---|---:|---:|---:|",
    ]
    cpu = result["best_cpu_seconds"]
    lines += [f"| {k} | {v:.2f} | {cpu[k]:.2f} | {rows / v / 1e6:.2f} |" for k, v in best.items()]
    lines += ["", "| target | ratio (wall) | ratio (CPU) | result (wall) |", "|---|---:|---:|---|"]
    for lake, ref in (("lake_write", "parquet_write"), ("lake_write_table", "parquet_write"),
                      ("lake_write_native", "parquet_write"), ("lake_write_native", "parquet_write_zstd"),
                      ("lake_write", "parquet_write_zstd"), ("lake_read", "parquet_read"),
                      ("lake_read_routed", "parquet_read"), ("read_table_routed", "parquet_read"),
                      ("lake_read_compacted", "parquet_read"), ("read_table_compacted", "parquet_read")):
        if lake not in best or ref not in best:
            continue
        ratio = best[lake] / best[ref]
        lines.append(f"| {lake} / {ref} ≤ {TARGET}x | {ratio:.2f}x | {cpu[lake] / cpu[ref]:.2f}x | "
                     f"{'PASS' if ratio <= TARGET else 'MISS'} |")
    if result["problems"]:
        lines += ["", "WRONG RESULTS:", *result["problems"]]
    for step, text in result["profiles"].items():
        lines += ["", f"driver profile of {step}:", text]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--work", default=None, help="directory for the temporary files (default: $TMPDIR)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--writes-only", action="store_true", help="only the write steps")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra Spark conf (e.g. spark.python.unix.domain.socket.enabled=false "
                        "for the TCP worker transport; the unix socket is build_session's default)")
    parser.add_argument("--json", type=Path, default=None, help="also write the result as JSON here")
    args = parser.parse_args(argv)
    result = run(args)
    result["machine"] = describe()
    result["versions"] = versions()
    print(report(result))
    print("\nMachine:", result["machine"])
    print("Versions:", ", ".join(f"{k} {v}" for k, v in result["versions"].items()))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
