"""Cross-partition upsert writes (issue 14): a load and an upsert round of a table with primary key
``id`` partitioned by ``dt`` against the same rows in a dynamic-bucket table whose key holds ``dt``
(``PRIMARY KEY (id, dt)``, the peer), measured side by side in one run.

* **load**: ``write_arrow`` of ``rows`` new keys over four dates into an empty table.
* **upsert**: one ``write_arrow`` of ``upsert_rows`` existing keys, ``move`` of them with another
  date (the cross-partition table moves them: a -D in the old partition; the peer sees new keys).
  The cross-partition writer first bootstraps its key index from the whole table.
* **upsert, spilled index**: the same with ``write-buffer-size`` = 16 mb, so the index (8 MiB in
  memory at most) lives in shard files.

    PYTHONPATH=. .venv/bin/python bench/bench_cross_partition.py --rows 1000000 --upsert-rows 100000 --repeat 3

Prints one JSON line and a Markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("name", pa.string()), ("amount", pa.float64())])
DATES = np.array(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"])


def batch(ids: np.ndarray, dates: np.ndarray, round_: int) -> pa.Table:
    names = pa.array([f"n{round_}-{i % 1000}" for i in ids.tolist()])
    return pa.table({"id": ids, "dt": pa.array(dates), "name": names,
                     "amount": ids.astype(np.float64) * 0.5 + round_}, schema=SCHEMA)


def new_table(root: Path, kind: str, target: int) -> Any:
    cat = Catalog(str(root))
    cat.create_database("db")
    options = {"bucket": "-1", "dynamic-bucket.target-row-num": str(target)}
    if kind == "cross-spilled":
        options["write-buffer-size"] = "16 mb"
    keys = ["id", "dt"] if kind == "peer" else ["id"]
    return cat.create_table("db.t", SCHEMA, primary_keys=keys, partition_keys=["dt"], options=options)


def cpu_of(fn: Any) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--upsert-rows", type=int, default=100_000)
    ap.add_argument("--move", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-crosspart-"))
    rng = np.random.default_rng(1)
    ids = rng.permutation(args.rows).astype(np.int64)
    load = batch(ids, DATES[ids % 4], 0)
    target = -(-args.rows // 16)  # four buckets per date
    best: dict[tuple[str, str], tuple[float, float]] = {}
    try:
        for i in range(args.repeat):
            up = np.sort(np.random.default_rng(100 + i).choice(args.rows, args.upsert_rows, replace=False))
            moved = np.random.default_rng(200 + i).random(len(up)) < args.move
            upsert = batch(up, DATES[(up + moved) % 4], 1)
            for kind in ("peer", "cross", "cross-spilled"):  # interleaved: the same machine load
                root = work / f"{kind}-{i}"
                table = new_table(root, kind, target)
                for step, data in (("load", load), ("upsert", upsert)):
                    wall, cpu = cpu_of(lambda t=table, d=data: t.write_arrow(d))
                    old = best.get((kind, step), (float("inf"), float("inf")))
                    best[(kind, step)] = (min(old[0], wall), min(old[1], cpu))
                got = table.to_arrow().num_rows
                expected = args.rows + (int(moved.sum()) if kind == "peer" else 0)
                assert got == expected, (kind, got, expected)
                shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result: dict[str, Any] = {"rows": args.rows, "upsert_rows": args.upsert_rows, "move": args.move,
                              "load": os.getloadavg()[0]}
    for (kind, step), (wall, cpu) in sorted(best.items()):
        result[f"{step}_{kind}_s"], result[f"{step}_{kind}_cpu_s"] = round(wall, 3), round(cpu, 3)
    result.update({"python": platform.python_version(), "pyarrow": pa.__version__})
    print(json.dumps(result))
    print()
    print("| measure | peer (PK id, dt) cpu s | cross-partition cpu s | ratio | cross, spilled index cpu s | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for step in ("load", "upsert"):
        peer, cross, spilled = (best[(k, step)][1] for k in ("peer", "cross", "cross-spilled"))
        print(f"| {step} | {peer:.3f} | {cross:.3f} | {cross / peer:.2f}x | {spilled:.3f} | {spilled / peer:.2f}x |")


if __name__ == "__main__":
    main()
