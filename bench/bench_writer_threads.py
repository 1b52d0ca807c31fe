"""Many writers in one process: each round's thread starts, wall and CPU, and the RSS over rounds.

Each round is ``Table.write_arrow`` (a new writer: write, prepare_commit, commit, close). Two parts:

* **rounds**: ``--rounds`` small upserts (``--upsert-rows`` keys) alternating a plain and a
  deletion-vector table of ``--rows`` rows in ``--buckets`` buckets; per table the thread starts
  per round (``threading.Thread.start`` calls, writer threads and all) and the wall spent inside
  them (the caller waits until the new thread is scheduled), the median, p90 and largest wall and
  the median CPU (`time.process_time`) of the rounds after the first.
* **memory** (``--memory-rounds``): rounds alternating a small upsert and a large write of
  ``--large-rows`` rows with a 4 MiB write buffer (it spills, then merges), on a plain table; the
  process's current RSS (``/proc/self/statm``) every 25 rounds, and its peak.

    PYTHONPATH=. .venv/bin/python bench/bench_writer_threads.py --rounds 60 --memory-rounds 200

Prints one JSON line. Run the same script against two trees (``PYTHONPATH=<tree>``), alternated.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lake_assets
from lake_assets import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])

_starts = [0]
_start_s = [0.0]  # wall inside `Thread.start`: it returns once the new thread has been scheduled
_real_start = threading.Thread.start


def _counted_start(self: threading.Thread) -> None:
    _starts[0] += 1
    began = time.perf_counter()
    _real_start(self)
    _start_s[0] += time.perf_counter() - began


threading.Thread.start = _counted_start  # type: ignore[method-assign]


def _batch(ids: np.ndarray, round_: int) -> pa.Table:
    return pa.table({"id": ids, "name": pa.array([f"n{round_}-{i % 997}" for i in ids.tolist()]),
                     "amount": ids.astype(np.float64) + round_}, schema=SCHEMA)


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def rounds(cat: Catalog, args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(5)
    tables = {}
    for name, dv in (("plain", False), ("dv", True)):
        opts = {"bucket": str(args.buckets), **({"deletion-vectors.enabled": "true"} if dv else {})}
        t = cat.create_table(f"db.{name}", SCHEMA, primary_keys=["id"], options=opts)
        t.write_arrow(_batch(np.arange(args.rows), 0))
        tables[name] = t
    out: dict[str, Any] = {}
    samples: dict[str, dict[str, list[float]]] = {n: {"wall": [], "cpu": [], "starts": [], "start_ms": []}
                                                  for n in tables}
    for r in range(1, args.rounds + 1):
        for name, t in tables.items():  # alternated: both see the same load
            data = _batch(np.sort(rng.choice(args.rows, args.upsert_rows, replace=False)), r)
            starts, start_s, cpu, wall = _starts[0], _start_s[0], time.process_time(), time.perf_counter()
            t.write_arrow(data)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            s = samples[name]
            s["wall"].append(wall * 1e3)
            s["cpu"].append(cpu * 1e3)
            s["starts"].append(_starts[0] - starts)
            s["start_ms"].append((_start_s[0] - start_s) * 1e3)
    for name, s in samples.items():
        walls = sorted(s["wall"][1:])
        out[name] = {"starts_per_round": round(statistics.mean(s["starts"][1:]), 2),
                     "in_thread_start_ms_mean": round(statistics.mean(s["start_ms"][1:]), 3),
                     "in_thread_start_ms_max": round(max(s["start_ms"][1:]), 2),
                     "wall_ms_median": round(statistics.median(walls), 2),
                     "wall_ms_p90": round(walls[int(0.9 * (len(walls) - 1))], 2),
                     "wall_ms_max": round(walls[-1], 2),
                     "cpu_ms_median": round(statistics.median(s["cpu"][1:]), 2)}
    return out


def memory(cat: Catalog, args: argparse.Namespace) -> dict[str, Any]:
    t = cat.create_table("db.mem", SCHEMA, primary_keys=["id"],
                         options={"bucket": "4", "write-buffer-size": "4 mb"})
    rng = np.random.default_rng(9)
    large = _batch(np.arange(args.large_rows), 0)
    rss: list[float] = []
    for r in range(args.memory_rounds):
        if r % 2:
            t.write_arrow(large)
        else:
            t.write_arrow(_batch(np.sort(rng.choice(args.large_rows, args.upsert_rows, replace=False)), r))
        if (r + 1) % 25 == 0:
            rss.append(round(_rss_mib(), 1))
            t.expire_snapshots(retain_min=1, retain_max=2)  # the table's own metadata stays small
    return {"rss_mib_every_25_rounds": rss,
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--upsert-rows", type=int, default=2_000)
    ap.add_argument("--buckets", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--large-rows", type=int, default=200_000)
    ap.add_argument("--memory-rounds", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cat = Catalog(str(Path(tmp) / "wh"))
        cat.create_database("db")
        result: dict[str, Any] = {"tree": str(Path(lake_assets.__file__).parents[1]),
                                  "load_average": [round(os.getloadavg()[0], 2)]}
        if args.rounds:
            result["rounds"] = rounds(cat, args)
        if args.memory_rounds:
            result["memory"] = memory(cat, args)
        result["load_average"].append(round(os.getloadavg()[0], 2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
