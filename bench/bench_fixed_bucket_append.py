"""A fixed-bucket append load (``bucket = 8``, ``bucket-key = id``) against a pyarrow write of the
same rows, CPU seconds (issue 14: fixed-bucket append writes).

Per round, interleaved, each on a fresh directory: ``fixed``: `Table.write_arrow` of ``ROWS`` rows
into a fixed-bucket append table (routing by the bucket hash, 8 files, the commit); ``unaware``:
the same rows into an unaware-bucket append table (one file, no hash); ``pyarrow``:
``pq.write_table`` of the rows into one Parquet file (zstd, as the tables' default). Ratios are of
the rounds' medians.

    PYTHONPATH=. python bench/bench_fixed_bucket_append.py [rounds] [rows]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])


def _data(rows: int) -> pa.Table:
    ids = np.random.default_rng(3).integers(0, 1 << 40, rows, dtype=np.int64)
    return pa.table({"id": ids, "v": pa.array([f"s{i % 997}" for i in range(rows)]), "x": ids * 0.5},
                    schema=SCHEMA)


def _cpu(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _load(root: str, data: pa.Table, options: dict[str, str]) -> None:
    cat = Catalog(root)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, options=options).write_arrow(data)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    data = _data(rows)
    root = tempfile.mkdtemp(prefix="bench-fixed-append-")
    times: dict[str, list[float]] = {"fixed": [], "unaware": [], "pyarrow": []}
    try:
        for r in range(rounds):
            order = ["fixed", "unaware", "pyarrow"] if r % 2 == 0 else ["pyarrow", "unaware", "fixed"]
            for kind in order:
                here = os.path.join(root, f"{kind}-{r}")
                os.makedirs(here)
                if kind == "fixed":
                    run = lambda h=here: _load(h, data, {"bucket": "8", "bucket-key": "id"})  # noqa: E731
                elif kind == "unaware":
                    run = lambda h=here: _load(h, data, {"bucket": "-1"})  # noqa: E731
                else:
                    run = lambda h=here: pq.write_table(data, os.path.join(h, "f.parquet"), compression="zstd")  # noqa: E731
                times[kind].append(_cpu(run))
                shutil.rmtree(here)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"rows={rows} rounds={rounds} cpu_s median: " + ", ".join(f"{k}={v:.3f}" for k, v in med.items()))
    print(f"fixed / pyarrow = {med['fixed'] / med['pyarrow']:.2f}x, unaware / pyarrow = "
          f"{med['unaware'] / med['pyarrow']:.2f}x, fixed / unaware = {med['fixed'] / med['unaware']:.2f}x")


if __name__ == "__main__":
    main()
