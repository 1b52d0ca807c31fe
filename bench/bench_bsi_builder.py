"""bsi index writer benchmark: CPU seconds and peak memory of `BsiIndexBuilder` fed one data file's
column in row-group-sized batches, next to the bitmap index writer (`BitmapIndexBuilder`, the
other index of a numeric column) on the same column, and the size of each index. Each case and
kind runs in a fresh subprocess (peak RSS is per process), the kinds alternating. Example::

    PYTHONPATH=. .venv/bin/python bench/bench_bsi_builder.py --repeat 3
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
    # name: (rows, Paimon type, how values are drawn)
    "bigint x100": (2_000_000, "BIGINT", "x100"),
    "bigint random +-2^40": (2_000_000, "BIGINT", "wide"),
    "timestamp(6) ascending": (2_000_000, "TIMESTAMP(6)", "ascending"),
    "int 10% null": (2_000_000, "INT", "nulls"),
}
BATCH = 262_144

_CHILD = r"""
import json, resource, sys, time
import numpy as np, pyarrow as pa
from lake_assets.spec.types import parse_type
rows, type_name, draw, kind, batch = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
rng = np.random.default_rng(1)
dt = parse_type(type_name)
if draw == "x100":
    column = pa.array(rng.integers(-50, 50, rows) * 7919)
elif draw == "wide":
    column = pa.array(rng.integers(-2**40, 2**40, rows))
elif draw == "ascending":
    column = pa.array(1_700_000_000_000_000 + np.arange(rows) * 1000).cast(pa.timestamp("us"))
else:
    column = pa.array(rng.integers(-10**6, 10**6, rows).astype(np.int32), mask=rng.random(rows) < 0.1)
if kind == "bsi":
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
print(json.dumps({"cpu": cpu, "rss_mb": (rss1 - rss0) / 1024, "bytes": len(payload),
                  "column_mb": column.nbytes / 2**20}))
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
    print("| case | kind | CPU s (each run) | median | peak RSS growth MB | index bytes | column MB |")
    print("|---|---|---|---:|---:|---:|---:|")
    for name, (rows, type_name, draw) in CASES.items():
        runs: dict[str, list[dict[str, float]]] = {"bsi": [], "bitmap": []}
        for _ in range(args.repeat):
            for kind in runs:
                runs[kind].append(_run([str(rows), type_name, draw, kind, str(BATCH)]))
        for kind, results in runs.items():
            cpus = [r["cpu"] for r in results]
            print(f"| {name} | {kind} | {' '.join(f'{c:.2f}' for c in cpus)} | {statistics.median(cpus):.2f} | "
                  f"{max(r['rss_mb'] for r in results):.0f} | {int(results[0]['bytes'])} | "
                  f"{results[0]['column_mb']:.1f} |")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
