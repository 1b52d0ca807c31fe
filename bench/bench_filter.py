"""CPU of a filtered read: a fresh process's first one (imports included), and the row filter alone.

    python bench/bench_filter.py --trees /tmp/main /work/wt/splits --repeat 4

Each tree is a lake_assets checkout; the trees are measured alternately, each measurement in a fresh
interpreter with only that tree on ``PYTHONPATH``, with `time.process_time` (CPU, not wall time).

* ``first read``: load a table and read it with a tuple filter (key, partition and float terms)
  in a fresh interpreter, the import of ``lake_assets`` included; the modules it loaded.
* ``filter N rows``: `Predicate.filter_table` of N rows already in memory (four clause shapes),
  the best of 5 calls after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SETUP = """
import pyarrow as pa
from lake_assets import Catalog
c = Catalog({wh!r}); c.create_database("db")
schema = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.float64())])
t = c.create_table("db.t", schema, primary_keys=["k", "dt"], partition_keys=["dt"], options={{"bucket": "2"}})
n = 20_000
t.write_arrow(pa.table({{"k": list(range(n)), "dt": ["a", "b"] * (n // 2), "v": [i * 0.5 for i in range(n)]}},
                       schema=schema))
"""

FIRST_READ = """
import json, sys, time
start = time.process_time()
from lake_assets import Catalog
t = Catalog({wh!r}).get_table("db.t")
rows = t.to_arrow(filter=[[("k", ">", 100), ("v", "<", 5000.0)], [("dt", "=", "b"), ("k", "in", [1, 3, 5])]])
cpu = time.process_time() - start
print(json.dumps({{"cpu": cpu, "rows": rows.num_rows, "modules": len(sys.modules),
                  "dataset": "pyarrow.dataset" in sys.modules}}))
"""

FILTER_ROWS = """
import json, time
import numpy as np
import pyarrow as pa
from lake_assets.predicate import Predicate
n = {rows}
rng = np.random.default_rng(0)
data = pa.table({{"k": rng.integers(0, n, n), "dt": pa.array(rng.choice(["a", "b", "c"], n)),
                 "v": rng.normal(size=n), "s": pa.array(rng.choice(["x", "y", "z"], n))}})
filters = {{
    "int range": [("k", ">=", n // 4), ("k", "<", n // 2)],
    "float (coded)": [("v", ">", 0.0)],
    "in / not in": [("dt", "in", ["a", "c"]), ("s", "not in", ["y"])],
    "OR of ANDs": [[("k", "<", n // 10), ("s", "=", "x")], [("v", "<=", -1.0)], [("dt", "!=", "b")]],
}}
out = {{}}
for name, f in filters.items():
    pred = Predicate.of(f)
    pred.filter_table(data)
    best = None
    for _ in range(5):
        start = time.process_time()
        kept = pred.filter_table(data).num_rows
        cpu = time.process_time() - start
        best = cpu if best is None else min(best, cpu)
    out[name] = {{"cpu": best, "kept": kept}}
print(json.dumps(out))
"""


def run(tree: str, code: str) -> dict | None:
    """What ``code`` prints last, as JSON (None if it prints nothing), run in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": tree}
    # run in the tree: ``-c`` puts the working directory first on sys.path
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          cwd=tree)
    lines = done.stdout.splitlines()
    return json.loads(lines[-1]) if lines else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", required=True)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    args = parser.parse_args()
    print("load average", os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        for i, tree in enumerate(args.trees):
            run(tree, SETUP.format(wh=str(Path(tmp) / f"wh{i}")))
        for r in range(args.repeat):
            for i, tree in enumerate(args.trees):
                first = run(tree, FIRST_READ.format(wh=str(Path(tmp) / f"wh{i}")))
                print(json.dumps({"round": r, "tree": tree, "first read": first}))
                for n in args.rows:
                    rows = run(tree, FILTER_ROWS.format(rows=n))
                    print(json.dumps({"round": r, "tree": tree, f"filter {n} rows": rows}))
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
