"""CPU of a compaction of a row-tracking table and of a data-evolution table, beside the same
compaction of a plain append table (the baseline: no engine at hand compacts these tables, pypaimon
2.1 has no compaction and Java 0.9 predates row tracking).

    PYTHONPATH=<tree> python bench/bench_row_tracking_compact.py --rounds 5

Each table gets ``--commits`` commits of ``--rows`` rows (an int64 key, a 40-byte string, a double),
unpartitioned, ``compaction.min.file-num = 2``; then one ``compact()`` takes every file into one
(row tracking: ids and sequence numbers stored as columns; data evolution: one unit of whole row-id
ranges). Measured: ``time.process_time`` around ``compact()`` (threads included), each kind in a
fresh interpreter, kinds alternating round by round; reported median and best per kind.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

KINDS = {
    "plain": {},
    "row_tracking": {"row-tracking.enabled": "true"},
    "data_evolution": {"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
}

CHILD = """
import json, time
import pyarrow as pa
from lake_assets import Catalog
c = Catalog({wh!r}); c.create_database("db")
schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("d", pa.float64())])
t = c.create_table("db.t", schema, options={{**{options!r}, "compaction.min.file-num": "2",
                                            "compaction.parallelism": "1"}})
for i in range({commits}):
    lo = i * {rows}
    t.write_arrow(pa.table({{"k": pa.array(range(lo, lo + {rows}), pa.int64()),
                            "s": pa.array([f"{{j:040d}}" for j in range(lo, lo + {rows})]),
                            "d": pa.array([j * 0.5 for j in range(lo, lo + {rows})])}}, schema=schema))
start = time.process_time()
result = t.compact()
cpu = time.process_time() - start
print(json.dumps({{"cpu_s": cpu, "files_in": result.files_in, "files_out": result.files_out,
                  "rows": result.rows_out}}))
"""


def run(kind: str, commits: int, rows: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        code = CHILD.format(wh=os.path.join(tmp, "wh"), options=KINDS[kind], commits=commits, rows=rows)
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--commits", type=int, default=8)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    cpu: dict[str, list[float]] = {k: [] for k in KINDS}
    shape: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for kind in KINDS:
            got = run(kind, args.commits, args.rows)
            cpu[kind].append(got["cpu_s"])
            shape[kind] = got
    print(f"load average: {os.getloadavg()}")
    for kind, values in cpu.items():
        got = shape[kind]
        print(f"{kind:>15}: median {statistics.median(values):.3f} s CPU, best {min(values):.3f} s "
              f"({got['files_in']:.0f} files of {got['rows']:.0f} rows -> {got['files_out']:.0f})")


if __name__ == "__main__":
    main()
