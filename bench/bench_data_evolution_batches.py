"""Peak memory and CPU of ``to_batches`` over a data-evolution row-id range (a base file and an update
file of one column), the batched merge against the whole-range merge.

    python bench/bench_data_evolution_batches.py --trees /tmp/rt_main /work/wt/rtreview --rounds 3

One range of 400,000 rows (a 200-byte string column ``s`` in the base file, ``v`` updated by a file of
its own, made in the layout pypaimon 2.1's ``update_by_arrow_with_row_id`` commits). Each measurement
is a fresh interpreter with only that tree on ``PYTHONPATH``: peak Arrow memory (the default pool's
``max_memory()`` less what it held before the read) and ``time.process_time`` around
``to_batches(batch_size=10_000)`` consumed batch by batch. Trees alternate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

SETUP = """
import os
import pyarrow as pa, pyarrow.parquet as pq
from lake_assets import Catalog
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.manifest import EMPTY_ROW, DataFileMeta, FileSource, SimpleStats
n = 400_000
c = Catalog({wh!r}); c.create_database("db")
schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.string())])
t = c.create_table("db.t", schema, options={{"row-tracking.enabled": "true", "data-evolution.enabled": "true"}})
t.write_arrow(pa.table({{"k": pa.array(range(n), pa.int64()), "s": pa.array([f"{{i:0200d}}" for i in range(n)]),
                        "v": pa.array([f"old{{i:097d}}" for i in range(n)])}}, schema=schema))
name = "data-00000000-0000-0000-0000-000000000001-0.parquet"
path = os.path.join(t.store.paths.root, "bucket-0", name)
pq.write_table(pa.table({{"v": pa.array([f"new{{i:097d}}" for i in range(n)])}}), path)
f = DataFileMeta(name, os.path.getsize(path), n, EMPTY_ROW, EMPTY_ROW, SimpleStats.EMPTY, SimpleStats.EMPTY, 0, 0,
                 0, 0, file_source=FileSource.APPEND, first_row_id=0, write_cols=("v",), value_stats_cols=())
t.new_committer("bench").commit([CommitMessage(EMPTY_ROW, 0, -1, new_files=(f,))], 1)
"""

MEASURE = """
import json, time
import pyarrow as pa
from lake_assets import Catalog
t = Catalog({wh!r}).get_table("db.t")
pool = pa.default_memory_pool()
base = pool.bytes_allocated()
cpu = time.process_time()
rows = 0
for b in t.to_batches(columns=["k", "s", "v", "_ROW_ID"], batch_size=10_000):
    rows += b.num_rows
cpu = time.process_time() - cpu
assert rows == 400_000
print(json.dumps({{"cpu_s": cpu, "peak_arrow_mb": (pool.max_memory() - base) / 2**20}}))
"""


def run(tree: str, code: str, cwd: str) -> str:
    # ``-c`` puts the working directory first on sys.path: run outside every tree
    env = {**os.environ, "PYTHONPATH": tree}
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", required=True, help="lake_assets checkouts to compare")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the trees")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wh = os.path.join(tmp, "wh")
        run(args.trees[-1], SETUP.format(wh=wh), tmp)
        results: dict[str, list[dict[str, float]]] = {tree: [] for tree in args.trees}
        for _ in range(args.rounds):
            for tree in args.trees:
                results[tree].append(json.loads(run(tree, MEASURE.format(wh=wh), tmp)))
    print(f"load average: {os.getloadavg()}")
    for tree, rs in results.items():
        print(f"{tree}: cpu_s min {min(r['cpu_s'] for r in rs):.3f}, "
              f"peak Arrow memory MB min {min(r['peak_arrow_mb'] for r in rs):.1f} "
              f"max {max(r['peak_arrow_mb'] for r in rs):.1f}")


if __name__ == "__main__":
    main()
