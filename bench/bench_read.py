"""Micro-benchmark of the batch read path on the TPC-H lineitem layout (issue 8).

Builds, once, a warehouse from the TPC-H benchmark's generated inputs (``bench/bench_tpch.py`` makes
them): the load plus the upsert rounds, write-only (merge-on-read), and a fully compacted copy.
Then times ``Table.to_arrow()`` on both, next to pyarrow reading the one-file compacted reference.

    .venv/bin/python bench/bench_read.py --inputs bench/out/tpch/work/sf1/inputs --work /tmp/bench-read
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.tpch.generate import KEYS, OP, PARTITION
from bench.tpch.worker import input_reader
from lake_assets import Catalog

TABLE = "db.lineitem"


def build(inputs: Path, work: Path, buckets: int) -> None:
    """Write the merge-on-read warehouse (``mor``) and a compacted copy (``compacted``)."""
    plan = json.loads((inputs / "plan.json").read_text())
    mor = work / "mor"
    if not mor.exists():
        cat = Catalog(str(mor))
        cat.create_database("db")
        cat.create_table(TABLE, pq.read_schema(plan["base"]), primary_keys=[*KEYS, PARTITION],
                         partition_keys=[PARTITION],
                         options={"bucket": str(buckets), "rowkind.field": OP, "write-only": "true"})
        t0 = time.perf_counter()
        cat.get_table(TABLE).write_arrow(input_reader(plan["base"]))
        for path in plan["rounds"]:
            cat.get_table(TABLE).write_arrow(input_reader(path))
        print(f"built {mor} in {time.perf_counter() - t0:.1f} s", flush=True)
    compacted = work / "compacted"
    if not compacted.exists():
        shutil.copytree(mor, compacted)
        t0 = time.perf_counter()
        Catalog(str(compacted)).get_table(TABLE).compact(full=True)
        print(f"compacted {compacted} in {time.perf_counter() - t0:.1f} s", flush=True)


def timed(label: str, fn: Callable[[], object], repeat: int) -> object:
    """Best wall and CPU seconds (all threads) of ``repeat`` calls: on a shared machine the CPU
    time is the steadier number."""
    best, best_cpu = float("inf"), float("inf")
    out = None
    for _ in range(repeat):
        out = None
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    rows = getattr(out, "num_rows", "?")
    print(f"{label:<28} {best:7.3f} s wall  {best_cpu:7.3f} s cpu  (best of {repeat}, {rows} rows)", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=Path, default=Path("bench/out/tpch/work/sf1/inputs"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-read"))
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="mor,compacted,pyarrow")
    ap.add_argument("--profile", default="", help="write a cProfile of the mor read to this path")
    args = ap.parse_args()
    build(args.inputs, args.work, args.buckets)
    plan = json.loads((args.inputs / "plan.json").read_text())
    only = set(args.only.split(","))
    if "pyarrow" in only:
        timed("pyarrow one compacted file", lambda: pq.read_table(plan["ref_upserted"]), args.repeat)
    if "mor" in only:
        table = Catalog(str(args.work / "mor")).get_table(TABLE)
        timed("lake merge-on-read", table.to_arrow, args.repeat)
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            table.to_arrow()
            prof.disable()
            prof.dump_stats(args.profile)
            pstats.Stats(args.profile).sort_stats("cumulative").print_stats(25)
    if "compacted" in only:
        table = Catalog(str(args.work / "compacted")).get_table(TABLE)
        timed("lake after full compaction", table.to_arrow, args.repeat)


if __name__ == "__main__":
    main()
