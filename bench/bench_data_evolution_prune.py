"""CPU of selective reads of a data-evolution table: pruning of row-id ranges by merged stats and by
``_ROW_ID`` (session 15), against reading every range (main, which prunes such tables by partition only).

    python bench/bench_data_evolution_prune.py --trees /tmp/main_tree /work/wt/devolve --rounds 3

The table (made once, with the last tree: it needs ``Table.update_columns``): 40 commits of 5,000 rows
(40 row-id ranges; ``k``, a 100-byte string ``s``, an int ``w``), then one column update setting ``w`` of
the rows of 10 ranges to ``range * 10000 + position``. Measured, each in a fresh interpreter with only that
tree on ``PYTHONPATH`` (after a warm-up filtered read of snapshot 1), trees alternated, ``time.process_time``
around the read:

* ``w = 170_003`` (one row of one updated range; older files' own stats for ``w`` do not exclude it);
* ``_SEQUENCE_NUMBER = 3`` (the range the third commit wrote; session 16: pruned by each range's
  sequence number, where session 15 read every range and filtered the rows);
* ``_ROW_ID < 5000`` (the first range; a `FilterError` on main, which has no ``_ROW_ID`` filter);
* ``update_columns`` of ``w`` of 100 rows spread over 10 ranges (new tree only).
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
schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("w", pa.int64())])
t = c.create_table("db.t", schema, options={{"row-tracking.enabled": "true", "data-evolution.enabled": "true"}})
for r in range(40):
    ks = range(r * 5000, (r + 1) * 5000)
    t.write_arrow(pa.table({{"k": pa.array(ks, pa.int64()), "s": pa.array([f"{{i:0100d}}" for i in ks]),
                            "w": pa.array([i % 97 for i in ks], pa.int64())}}, schema=schema))
ids = [r * 5000 + i for r in range(10, 20) for i in range(5000)]
t.update_columns(pa.table({{"_ROW_ID": pa.array(ids, pa.int64()),
                           "w": pa.array([(i // 5000) * 10000 + i % 5000 for i in ids], pa.int64())}}))
"""

MEASURE = """
import json, time
import pyarrow as pa
from lake_assets import Catalog
t = Catalog({wh!r}).get_table("db.t")
out = {{}}
# warm-up: the imports of a filtered read (a first call pays ~0.25 s of them)
assert t.to_arrow(columns=["k", "s", "w"], snapshot_id=1, filter=[("w", "=", 3)]).num_rows > 0
cpu = time.process_time()
got = t.to_arrow(columns=["k", "s", "w"], filter=[("w", "=", 170_003)])
out["w_eq_cpu_s"] = time.process_time() - cpu
assert got.column("k").to_pylist() == [17 * 5000 + 3], got.column("k").to_pylist()
cpu = time.process_time()
got = t.to_arrow(columns=["k", "s"], filter=[("_SEQUENCE_NUMBER", "=", 3)])
out["seq_eq_cpu_s"] = time.process_time() - cpu
assert got.num_rows == 5000 and got.column("k")[0].as_py() == 2 * 5000
try:
    cpu = time.process_time()
    got = t.to_arrow(columns=["k", "s"], filter=[("_ROW_ID", "<", 5000)])
    out["row_id_cpu_s"] = time.process_time() - cpu
    assert got.num_rows == 5000
    ids = pa.array([r * 5000 + i * 50 for r in range(20, 30) for i in range(10)], pa.int64())
    cpu = time.process_time()
    t.update_columns(pa.table({{"_ROW_ID": ids, "w": pa.array([-1] * 100, pa.int64())}}))
    out["update_cpu_s"] = time.process_time() - cpu
except Exception as exc:
    out["row_id"] = type(exc).__name__
print(json.dumps(out))
"""


def run(tree: str, code: str, cwd: str) -> str:
    # ``-c`` puts the working directory first on sys.path: run outside every tree
    env = {**os.environ, "PYTHONPATH": tree}
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trees", nargs="+", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[str, list[dict[str, float]]] = {t: [] for t in args.trees}
        for _ in range(args.rounds):
            for tree in args.trees:  # a fresh table each round: the update of a measurement changes it
                wh = os.path.join(tmp, f"wh-{len(results[tree])}-{os.path.basename(tree)}")
                run(args.trees[-1], SETUP.format(wh=wh), tmp)
                results[tree].append(json.loads(run(tree, MEASURE.format(wh=wh), tmp)))
        for tree, rows in results.items():
            keys = sorted({k for r in rows for k in r if k.endswith("_s")})
            print(tree, {k: round(min(r[k] for r in rows if k in r), 4) for k in keys},
                  {k: r[k] for r in rows for k in r if not k.endswith("_s")})


if __name__ == "__main__":
    main()
