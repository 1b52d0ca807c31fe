"""Bitmap index writer benchmark: CPU seconds and Arrow memory of `BitmapIndexBuilder` fed one data
file's column in row-group-sized batches, for the checkout named by ``--peer`` (a directory holding
``lake_assets``, e.g. ``git archive main`` unpacked) against this one. Each case runs in a fresh
subprocess per side (Arrow's pool peak is per process), the sides alternating. Example::

    PYTHONPATH=. .venv/bin/python bench/bench_bitmap_builder.py --peer /tmp/main --repeat 3
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
    # name: (rows, distinct, value width in bytes; 0 for BIGINT)
    "string x16 (100 B)": (2_000_000, 16, 100),
    "string x1000 (20 B)": (2_000_000, 1000, 20),
    "string unique (20 B)": (1_000_000, 1_000_000, 20),
    "bigint x100": (2_000_000, 100, 0),
    "bigint unique": (2_000_000, 2_000_000, 0),
}
BATCH = 262_144

_CHILD = r"""
import json, resource, sys, time
import numpy as np, pyarrow as pa
from lake_assets.formats.bitmap_index import BitmapIndexBuilder
from lake_assets.spec.types import parse_type
rows, distinct, width, batch = (int(x) for x in sys.argv[1:5])
rng = np.random.default_rng(1)
keys = rng.integers(0, distinct, rows) if distinct < rows else rng.permutation(rows)
if width:
    pool = pa.array([str(i).rjust(width, "v") for i in range(distinct)])
    column, dt = pool.take(pa.array(keys)), parse_type("STRING")
    del pool
else:
    column, dt = pa.array(keys), parse_type("BIGINT")
base = pa.total_allocated_bytes()
t0 = time.process_time()
b = BitmapIndexBuilder(dt)
for start in range(0, rows, batch):
    b.add(column.slice(start, batch))
payload = b.finish()
cpu = time.process_time() - t0
print(json.dumps({"cpu": cpu, "pool_peak_mb": (pa.default_memory_pool().max_memory() - base) / 2**20,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "payload_mb": len(payload) / 2**20}))
"""


def _run(root: str, case: tuple[int, int, int]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run([sys.executable, "-c", _CHILD, *map(str, case), str(BATCH)], env=env, check=True,
                         capture_output=True, text=True, cwd=root).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--peer", required=True, help="a checkout to compare with (its root directory)")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    print("| case | side | CPU s (median) | Arrow pool peak MiB | max RSS MiB | payload MiB |")
    print("|---|---|---:|---:|---:|---:|")
    for name, case in CASES.items():
        runs: dict[str, list[dict[str, float]]] = {"peer": [], "this": []}
        for _ in range(args.repeat):
            for side, root in (("peer", args.peer), ("this", str(HERE))):
                runs[side].append(_run(root, case))
        for side, rs in runs.items():
            print(f"| {name} | {side} | {statistics.median(r['cpu'] for r in rs):.3f} | "
                  f"{max(r['pool_peak_mb'] for r in rs):.1f} | {max(r['rss_mb'] for r in rs):.0f} | "
                  f"{rs[0]['payload_mb']:.2f} |")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
