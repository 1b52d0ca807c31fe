"""range-bitmap index benchmark: CPU seconds and peak memory of `RangeBitmapIndexBuilder` fed one
data file's column in row-group-sized batches, next to the bsi and bitmap index writers on the same
column, the size of each index, and what pruning by it costs: CPU milliseconds to parse the
payload and answer one ``=`` and one ``<`` term (the bitmap index answers ``=`` only; bsi keys no
strings). Each case and kind runs in a fresh subprocess (peak RSS is per process), the kinds
alternating. Example::

    PYTHONPATH=. .venv/bin/python bench/bench_range_bitmap.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CASES = {
    # name: (rows, Paimon type, how values are drawn, kinds)
    "bigint x100": (2_000_000, "BIGINT", "x100", ("range-bitmap", "bsi", "bitmap")),
    "bigint random +-2^40": (2_000_000, "BIGINT", "wide", ("range-bitmap", "bsi", "bitmap")),
    "timestamp(6) ascending": (2_000_000, "TIMESTAMP(6)", "ascending", ("range-bitmap", "bsi", "bitmap")),
    "int 10% null": (2_000_000, "INT", "nulls", ("range-bitmap", "bsi", "bitmap")),
    "string 5000 distinct": (2_000_000, "STRING", "strings", ("range-bitmap", "bitmap")),
}
BATCH = 262_144
QUERIES = 20

_CHILD = r"""
import json, resource, sys, time
import numpy as np, pyarrow as pa
from lake_assets.spec.types import parse_type
rows, type_name, draw, kind, batch, queries = (int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4],
                                               int(sys.argv[5]), int(sys.argv[6]))
rng = np.random.default_rng(1)
dt = parse_type(type_name)
if draw == "x100":
    column = pa.array(rng.integers(-50, 50, rows) * 7919)
elif draw == "wide":
    column = pa.array(rng.integers(-2**40, 2**40, rows))
elif draw == "ascending":
    column = pa.array(1_700_000_000_000_000 + np.arange(rows) * 1000).cast(pa.timestamp("us"))
elif draw == "strings":
    column = pa.array([f"customer-{i:07d}" for i in range(5000)]).take(pa.array(rng.integers(0, 5000, rows)))
else:
    column = pa.array(rng.integers(-10**6, 10**6, rows).astype(np.int32), mask=rng.random(rows) < 0.1)
if kind == "range-bitmap":
    from lake_assets.formats.range_bitmap_index_write import RangeBitmapIndexBuilder
    builder = RangeBitmapIndexBuilder(dt, "c")
elif kind == "bsi":
    from lake_assets.formats.bsi_index import BsiIndexBuilder
    builder = BsiIndexBuilder(dt, "c")
else:
    from lake_assets.formats.bitmap_index import BitmapIndexBuilder
    builder = BitmapIndexBuilder(dt)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.process_time()
for start in range(0, rows, batch):
    builder.add(column.slice(start, batch))
payload = builder.finish()
cpu = time.process_time() - t0
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
# prune cost: parse the payload afresh and answer one term, per literal (values of the column)
literals = column.drop_null().take(pa.array(rng.integers(0, rows // 2, queries)))
cost = {}
for op in ("=", "<"):
    if kind == "bitmap" and op == "<":
        continue
    t1 = time.process_time()
    for i in range(queries):
        one = literals.slice(i, 1)
        if kind == "range-bitmap":
            from lake_assets.formats.range_bitmap_index import RangeBitmapIndex, literal_keys
            RangeBitmapIndex(payload, dt).rows_matching(op, literal_keys(one, dt))
        elif kind == "bsi":
            from lake_assets.formats.bsi_index import BsiIndex, term_keys
            BsiIndex.parse(payload).rows_matching(*term_keys(one, dt, op))
        else:
            from lake_assets.formats.bitmap_index import BitmapIndex
            BitmapIndex.parse(payload, dt).rows_in(one)
    cost[op] = (time.process_time() - t1) / queries * 1000
print(json.dumps({"cpu": cpu, "rss_mb": (rss1 - rss0) / 1024, "bytes": len(payload),
                  "column_mb": column.nbytes / 2**20, "eq_ms": cost["="], "lt_ms": cost.get("<")}))
"""


def _run(args: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], check=True, capture_output=True, text=True, env=env)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Run every case ``--repeat`` times per kind, alternating; print a Markdown table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    print("| case | kind | write CPU s (each run) | median | peak RSS growth MB | index bytes | column MB "
          "| parse + `=` CPU ms | parse + `<` CPU ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name, (rows, type_name, draw, kinds) in CASES.items():
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
        for _ in range(args.repeat):
            for kind in runs:
                runs[kind].append(_run([str(rows), type_name, draw, kind, str(BATCH), str(QUERIES)]))
        for kind, results in runs.items():
            cpus = [r["cpu"] for r in results]
            lt = [r["lt_ms"] for r in results if r["lt_ms"] is not None]
            print(f"| {name} | {kind} | {' '.join(f'{c:.2f}' for c in cpus)} | {statistics.median(cpus):.2f} | "
                  f"{max(r['rss_mb'] for r in results):.0f} | {int(results[0]['bytes'])} | "
                  f"{results[0]['column_mb']:.1f} | {statistics.median(r['eq_ms'] for r in results):.1f} | "
                  f"{statistics.median(lt):.1f} |" if lt else
                  f"| {name} | {kind} | {' '.join(f'{c:.2f}' for c in cpus)} | {statistics.median(cpus):.2f} | "
                  f"{max(r['rss_mb'] for r in results):.0f} | {int(results[0]['bytes'])} | "
                  f"{results[0]['column_mb']:.1f} | {statistics.median(r['eq_ms'] for r in results):.1f} | — |")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
