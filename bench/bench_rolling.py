"""CPU of writing rows into rolled data files (formats/rolling_writer.py), this tree against another.

Each round writes ``--rows`` rows (an int64 id, a double, a 13-character string, a small int) into
an append table with ``target-file-size`` ``--target`` in each format, once with this tree and once
with ``--base`` (e.g. ``git archive main | tar -x -C /tmp/base``), alternating, each in a fresh
subprocess; it prints the CPU seconds (all threads: ``resource.getrusage``) and the files written.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, resource, sys, tempfile
import numpy as np, pyarrow as pa
from lake_assets import Catalog
rows, target, fmt = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rng = np.random.default_rng(0)
data = pa.table({"id": pa.array(np.arange(rows), pa.int64()), "v": pa.array(rng.random(rows)),
                 "s": pa.array(np.char.add("s", rng.integers(0, 10**12, rows).astype("U12")).astype(object)),
                 "c": pa.array(rng.integers(0, 50, rows), pa.int32())})
cat = Catalog(tempfile.mkdtemp()); cat.create_database("db")
t = cat.create_table("db.t", data.schema, options={"bucket": "-1", "file.format": fmt, "target-file-size": target})
before = resource.getrusage(resource.RUSAGE_SELF)
t.write_arrow(data)
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
files = [e.file.row_count for e in t.store.file_store_scan().live_entries(t.snapshot_manager.latest())]
print(json.dumps({"cpu": cpu, "files": len(files)}))
"""


def run(tree: Path, rows: int, target: str, fmt: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(rows), target, fmt], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, required=True, help="the other tree (its lake_assets is imported)")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--target", default="4 mb")
    p.add_argument("--formats", default="parquet,orc,avro")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    here = Path(__file__).resolve().parents[1]
    print("load average", os.getloadavg())
    for fmt in args.formats.split(","):
        got: dict[str, list[dict[str, float]]] = {"base": [], "new": []}
        for _ in range(args.rounds):
            got["base"].append(run(args.base, args.rows, args.target, fmt))
            got["new"].append(run(here, args.rows, args.target, fmt))
        best = {k: min(r["cpu"] for r in v) for k, v in got.items()}
        cpu = {k: [round(r["cpu"], 2) for r in v] for k, v in got.items()}
        print(f"{fmt}: CPU s base {cpu['base']} new {cpu['new']}"
              f" (best new/base {best['new'] / best['base']:.2f}x); files base {got['base'][0]['files']:.0f}"
              f" new {got['new'][0]['files']:.0f}")
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
