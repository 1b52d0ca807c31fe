"""CPU of a Spark Python worker's import of the lake writer, and of its first write task (issue 17 §3).

Each measurement runs in a fresh interpreter: pyspark's own worker imports first (`pyspark.worker`,
`pyspark.sql.datasource`), then ``import lake_assets.spark.writer`` (``cold``), the same with
pyarrow, ``pyarrow.parquet`` and pandas already loaded as in a worker after its first task of any
source (``warm``), and that warm import plus one write task of three rows into a fixed-bucket
primary-key table (``task``: what the task imports when it runs). CPU seconds (`time.process_time`)
and modules added. Trees alternate, base first, in every round:

    PYTHONPATH=. /work/main/.venv/bin/python bench/bench_worker_import.py --rounds 6 --base <dir of main>
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_PROBE = """
import sys, time
mode, warehouse = sys.argv[1], sys.argv[2]
import pyspark.worker, pyspark.sql.datasource
if mode != "cold":
    import pyarrow, pyarrow.parquet, pandas
n0 = len(sys.modules)
t0 = time.process_time()
from lake_assets.spark.source_options import SourceOptions
from lake_assets.spark.writer import write_task
if mode == "task":
    import pyarrow as pa
    rows = pa.record_batch({"k": [1, 2, 3], "dt": ["a", "a", "b"], "v": [1.0, 2.0, 3.0]})
    write_task(SourceOptions.parse({"path": "db.t", "warehouse": warehouse}), "bench", iter([rows]))
print(time.process_time() - t0, len(sys.modules) - n0)
"""

_CREATE = """
import sys
import pyarrow as pa
from lake_assets import Catalog
c = Catalog(sys.argv[1])
c.create_database("db")
c.create_table("db.t", pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.float64())]),
               primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "2"})
"""


def _run(tree: str, code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                          check=True, cwd=tempfile.gettempdir())
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--base", required=True, help="a tree of the base revision (git archive)")
    args = parser.parse_args()
    trees = {"base": args.base, "branch": str(Path(__file__).resolve().parents[1])}
    results: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for r in range(1, args.rounds + 1):
        for name, tree in trees.items():
            with tempfile.TemporaryDirectory() as warehouse:
                _run(tree, _CREATE, warehouse)
                for mode in ("cold", "warm", "task"):
                    cpu, modules = _run(tree, _PROBE, mode, warehouse).split()
                    results.setdefault((name, mode), []).append((float(cpu), int(modules)))
            load = os.getloadavg()[0]
            print(f"round {r} {name}: " + ", ".join(f"{m} {results[(name, m)][-1][0]:.3f}"
                                                 for m in ("cold", "warm", "task")) + f" (load {load:.1f})")
    for (name, mode), runs in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cpus = [c for c, _ in runs]
        print(f"{mode:5} {name:6}: least {min(cpus):.3f} median {statistics.median(cpus):.3f} CPU s, "
              f"{runs[0][1]} modules")


if __name__ == "__main__":
    main()
