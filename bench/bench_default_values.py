"""CPU of batch reads with and without column default values (``fields.<column>.default-value``).

    python bench/bench_default_values.py --trees /tmp/dv_base /work/wt/defaultvalue --repeat 5

Two append tables of the same rows (1,000,000 in 4 files; a quarter of ``v`` and ``s`` null, one
file all null): ``plain`` without defaults, ``dflt`` with defaults on ``v`` and ``s``. Each tree (a
lake_assets checkout) reads ``plain`` - the cost every table pays for the feature, the planning's
filter check and the reader's defaults lookup - and a tree that has the feature reads ``dflt`` too
(the fill, and a filter on the default that cannot prune). Trees alternate, each measurement a fresh
interpreter with only that tree on ``PYTHONPATH``, CPU by `time.process_time` around the read alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SETUP = """
import pyarrow as pa
from lake_assets import Catalog
c = Catalog({wh!r}); c.create_database("db")
schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
for name, opts in (("plain", {{}}), ("dflt", {{"fields.v.default-value": "-1", "fields.s.default-value": "none"}})):
    t = c.create_table("db." + name, schema, options={{"bucket": "-1", **opts}})
    for f in range(4):
        n, base = 250_000, f * 250_000
        ks = pa.array(range(base, base + n), pa.int64())
        null = pa.array([f == 1 or i % 4 == 0 for i in range(n)])
        v = pa.compute.if_else(null, pa.scalar(None, pa.int64()), ks)
        s = pa.compute.if_else(null, pa.scalar(None, pa.string()), pa.compute.cast(ks, pa.string()))
        t.write_arrow(pa.table({{"k": ks, "v": v, "s": s}}, schema=schema))
"""

READ = """
import json, time
import lake_assets
from lake_assets import Catalog
t = Catalog({wh!r}).get_table("db." + {table!r})
flt = {flt!r}
t.to_arrow(filter=flt)  # warm-up: imports, footers
best = None
for _ in range(3):
    start = time.process_time()
    rows = t.to_arrow(filter=flt).num_rows
    spent = time.process_time() - start
    best = spent if best is None else min(best, spent)
print(json.dumps({{"ms": best * 1000, "rows": rows, "tree": lake_assets.__file__}}))
"""

CASES = [("plain", None), ("plain", [("k", "<", 500_000)]), ("dflt", None), ("dflt", [("v", "=", -1)])]


def run(tree: str, code: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": tree}
    # run outside any checkout: ``-c`` puts the working directory first on sys.path
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", nargs="+", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    wh = tempfile.mkdtemp(prefix="bench-dv-")
    subprocess.run([sys.executable, "-c", SETUP.format(wh=wh)], env={**os.environ, "PYTHONPATH": a.trees[-1]},
                   check=True, cwd=tempfile.gettempdir())
    times: dict[tuple[str, str, str], list[float]] = {}
    for _ in range(a.repeat):
        for table, flt in CASES:
            for tree in a.trees:
                try:
                    r = run(tree, READ.format(wh=wh, table=table, flt=flt))
                except subprocess.CalledProcessError:
                    continue  # a tree without the feature refuses the table
                assert str(r["tree"]).startswith(tree), (r["tree"], tree)  # the tree measured is the one named
                times.setdefault((table, repr(flt), tree), []).append(float(r["ms"]))
    for (table, flt, tree), ms in times.items():
        print(f"{table:6} {flt:28} {tree:28} best {min(ms):8.1f} ms  median {statistics.median(ms):8.1f} ms")


if __name__ == "__main__":
    main()
