"""CPU of `Table.to_batches` over a table of many small files: the first read (footers parsed) and
the best of the warm reads after it (footers from `formats.parquet_footer_cache` where the tree
has it on the batched path). Process CPU time, so other jobs on a shared machine matter less.

A write-only table of 4 buckets gets ``--commits`` commits of ``--rows`` random keys each (so
every bucket holds that many overlapping level-0 files, read by the streaming merge). Example::

    PYTHONPATH=. .venv/bin/python bench/bench_batches_cpu.py --commits 100 --rows 2000 --reads 8
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lake_assets import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64()), ("c", pa.string())])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commits", type=int, default=100)
    p.add_argument("--rows", type=int, default=2000, help="keys drawn per commit (from 10x as many)")
    p.add_argument("--reads", type=int, default=8, help="reads in a row; the first is reported apart")
    a = p.parse_args(argv)
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(100)], dtype=object)
    warehouse = tempfile.mkdtemp(prefix="bench-batches-cpu-")
    try:
        catalog = Catalog(warehouse)
        catalog.create_database("db")
        table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "4", "write-only": "true"})
        for _ in range(a.commits):
            ids = np.unique(rng.integers(0, 10 * a.rows, a.rows))
            table.write_arrow(pa.table({"id": ids, "a": rng.integers(0, 1 << 40, len(ids)), "b": rng.random(len(ids)),
                                        "c": words[rng.integers(0, len(words), len(ids))]}, schema=SCHEMA))
        files = sum(len(s.files) for s in table.plan())
        cpu_ms = []
        rows = 0
        for _ in range(max(2, a.reads)):
            start = time.process_time()
            rows = sum(b.num_rows for b in table.to_batches(batch_size=65536))
            cpu_ms.append((time.process_time() - start) * 1000)
        print(f"files {files} rows {rows}: first read {cpu_ms[0]:.0f} ms CPU, "
              f"best of the next {len(cpu_ms) - 1} {min(cpu_ms[1:]):.0f} ms CPU")
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
