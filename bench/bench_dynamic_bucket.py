"""Dynamic-bucket writes: a load and an upsert round of a ``bucket = -1`` table against the same
rows in a fixed-bucket table, as ratios measured side by side in one run (issue 14).

Both tables have the same primary key, rows and number of buckets: the dynamic table's
``dynamic-bucket.target-row-num`` is ``rows / buckets``, so its assigner fills ``buckets`` buckets
with the load (Paimon's default of 2,000,000 would put a 1,000,000-row load in one bucket). What
the dynamic table does on top: look every key up in the hash index, assign new keys to buckets,
and write a HASH index file per bucket written (committed in the index manifest).

* **load**: ``write_arrow`` of ``rows`` new keys into an empty table.
* **upsert**: one ``write_arrow`` of ``upsert_rows`` existing keys (each writer compacts inline as
  Paimon's writers do) on a loaded table.

    PYTHONPATH=. .venv/bin/python bench/bench_dynamic_bucket.py --rows 1000000 --upsert-rows 100000 --repeat 3

``--profile`` prints the cProfile of one dynamic load and upsert (main thread only). Prints one
JSON line and a Markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import platform
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lake_assets import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()), ("qty", pa.int32())])


def batch(ids: np.ndarray, round_: int) -> pa.Table:
    return pa.table({
        "id": ids,
        "name": pa.array([f"n{round_}-{i % 1000}" for i in ids.tolist()]),
        "amount": ids.astype(np.float64) * 0.5 + round_,
        "qty": (ids % 100).astype(np.int32),
    }, schema=SCHEMA)


def new_table(root: Path, rows: int, buckets: int, dynamic: bool) -> Any:
    cat = Catalog(str(root))
    cat.create_database("db")
    options = {"bucket": "-1", "dynamic-bucket.target-row-num": str(-(-rows // buckets))} if dynamic \
        else {"bucket": str(buckets)}
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], options=options)


def timed(fn: Any) -> tuple[float, float]:
    """Wall and CPU seconds (all threads of the process) of one call."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--upsert-rows", type=int, default=100_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-dynbucket-"))
    work.mkdir(parents=True, exist_ok=True)
    load = batch(np.random.default_rng(1).permutation(args.rows).astype(np.int64), 0)
    best: dict[tuple[str, str], tuple[float, float]] = {}
    buckets_seen: dict[str, int] = {}
    try:
        for i in range(args.repeat):
            ids = np.sort(np.random.default_rng(100 + i).choice(args.rows, args.upsert_rows, replace=False))
            upsert = batch(ids, 1)
            for dynamic in (False, True):  # interleaved: both see the same machine load
                name = "dynamic" if dynamic else "fixed"
                root = work / f"{name}-{i}"
                table = new_table(root, args.rows, args.buckets, dynamic)
                for step, data in (("load", load), ("upsert", upsert)):
                    wall, cpu = timed(lambda t=table, d=data: t.write_arrow(d))
                    old = best.get((name, step), (float("inf"), float("inf")))
                    best[(name, step)] = (min(old[0], wall), min(old[1], cpu))
                buckets_seen[name] = len({s.bucket for s in table.plan()})
                assert table.to_arrow().num_rows == args.rows
                shutil.rmtree(root, ignore_errors=True)
        if args.profile:
            table = new_table(work / "profile", args.rows, args.buckets, True)
            prof = cProfile.Profile()
            prof.enable()
            table.write_arrow(load)
            table.write_arrow(batch(np.sort(np.random.default_rng(7).choice(args.rows, args.upsert_rows,
                                                                              replace=False)), 1))
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    result: dict[str, Any] = {"rows": args.rows, "upsert_rows": args.upsert_rows, "buckets": buckets_seen}
    for step in ("load", "upsert"):
        (fw, fc), (dw, dc) = best[("fixed", step)], best[("dynamic", step)]
        result.update({f"{step}_fixed_s": round(fw, 4), f"{step}_dynamic_s": round(dw, 4),
                       f"{step}_fixed_cpu_s": round(fc, 4), f"{step}_dynamic_cpu_s": round(dc, 4),
                       f"{step}_ratio": round(dw / fw, 3), f"{step}_cpu_ratio": round(dc / fc, 3)})
    result.update({"python": platform.python_version(), "pyarrow": pa.__version__})
    print(json.dumps(result))
    print()
    print("| measure | dynamic s (cpu s) | fixed s (cpu s) | ratio wall | ratio cpu |")
    print("|---|---:|---:|---:|---:|")
    for step, what in (("load", f"load of {args.rows:,} new keys"), ("upsert", f"upsert of {args.upsert_rows:,} keys")):
        (fw, fc), (dw, dc) = best[("fixed", step)], best[("dynamic", step)]
        print(f"| {what}, bucket = -1 vs bucket = {args.buckets} | {dw:.3f} ({dc:.3f}) | {fw:.3f} ({fc:.3f}) | "
              f"{dw / fw:.2f}x | {dc / fc:.2f}x |")


if __name__ == "__main__":
    main()
