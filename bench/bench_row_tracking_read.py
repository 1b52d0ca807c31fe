"""CPU of batch reads of row-tracking tables, and what row tracking costs plain append tables.

    python bench/bench_row_tracking_read.py --trees /tmp/rt_base /work/wt/rowtracking --repeat 5

Two append tables of the same rows (300,000 in 150 files of 2,000): ``plain`` and ``tracked``
(``row-tracking.enabled``). Every tree (a lake_assets checkout) reads ``plain`` with `to_arrow` and
`to_batches` - the cost every append table pays for the reader's row-tracking checks - and a tree
that has the feature reads ``tracked`` too, with and without ``_ROW_ID`` / ``_SEQUENCE_NUMBER``. Trees
alternate, each measurement a fresh interpreter with only that tree on ``PYTHONPATH``, CPU by
`time.process_time` around the reads alone (the best of ``--repeat``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

SETUP = """
import pyarrow as pa
from lake_assets import Catalog
c = Catalog({wh!r}); c.create_database("db")
schema = pa.schema([("k", pa.int64()), ("s", pa.string())])
for name, opts in (("plain", {{}}), ("tracked", {{"row-tracking.enabled": "true"}})):
    t = c.create_table("db." + name, schema, options=opts)
    for f in range(150):
        ks = pa.array(range(f * 2000, f * 2000 + 2000), pa.int64())
        t.write_arrow(pa.table({{"k": ks, "s": pa.compute.cast(ks, pa.string())}}, schema=schema))
"""

READ = """
import json, time
from lake_assets import Catalog
c = Catalog({wh!r})
out = {{}}
cases = [("plain", None)]
if {tracked!r}:
    cases += [("tracked", None), ("tracked", ["k", "s", "_ROW_ID", "_SEQUENCE_NUMBER"])]
for name, cols in cases:
    t = c.get_table("db." + name)
    t.to_arrow(columns=cols)
    best = None
    for _ in range({repeat}):
        c0 = time.process_time()
        assert t.to_arrow(columns=cols).num_rows == 300000
        assert sum(b.num_rows for b in t.to_batches(columns=cols)) == 300000
        spent = time.process_time() - c0
        best = spent if best is None else min(best, spent)
    out[name + ("+system" if cols else "")] = best
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", required=True, help="lake_assets checkouts to compare")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the trees")
    args = parser.parse_args()
    wh = tempfile.mkdtemp(prefix="bench-rt-")
    newest = args.trees[-1]
    env = {**os.environ, "PYTHONPATH": newest}
    # ``-c`` puts the working directory first on sys.path, ahead of PYTHONPATH: run outside every
    # tree, or a run from a checkout measures that checkout whatever ``--trees`` says
    subprocess.run([sys.executable, "-c", SETUP.format(wh=wh)], check=True, env=env, cwd=wh)
    for _ in range(args.rounds):
        for tree in args.trees:
            tracked = os.path.exists(os.path.join(tree, "lake_assets", "ops", "row_tracking.py"))
            code = READ.format(wh=wh, tracked=tracked, repeat=args.repeat)
            env = {**os.environ, "PYTHONPATH": tree}
            res = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True,
                                 cwd=wh)
            print(tree, {k: round(v, 3) for k, v in json.loads(res.stdout).items()})


if __name__ == "__main__":
    main()
