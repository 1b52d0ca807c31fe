"""Placement of a cross-partition upsert batch whose partitions both lose and receive keys (issue 14,
round 2): ``rows`` keys over four dates (``dynamic-bucket.target-row-num`` = rows / 4, so each
date's bucket 0 is full), then one ``write_arrow`` moving ``moves`` keys each to the next date, so
every move frees a slot of a full bucket that a later placement into that date takes (Java's
BucketAssigner, in arrival order). The writer's key index is bootstrapped by a first write of one
key (not measured); the CPU seconds of the moving ``write_arrow`` (routing and buffering) are.

    PYTHONPATH=<tree> .venv/bin/python bench/bench_cross_partition_placement.py --rows 400000 --moves 40000

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from lake_assets import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])
BUCKETS = int(os.environ.get("BENCH_BUCKETS", "1"))
DATES = np.array(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"])


def batch(ids: np.ndarray, dates: np.ndarray) -> pa.Table:
    return pa.table({"id": ids, "dt": pa.array(dates), "amount": ids.astype(np.float64)}, schema=SCHEMA)


def run(rows: int, moves: int) -> float:
    root = Path(tempfile.mkdtemp(prefix="bench-cp-place-"))
    try:
        cat = Catalog(str(root))
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": str(rows // (4 * BUCKETS))})
        ids = np.arange(rows, dtype=np.int64)
        t.write_arrow(batch(ids, DATES[ids % 4]))
        rng = np.random.default_rng(7)
        moved = rng.choice(rows, size=moves, replace=False).astype(np.int64)
        with t.refresh().new_writer("bench", write_only=True) as w:
            w.write_arrow(batch(ids[:1], DATES[:1]))  # bootstraps the key index
            data = batch(moved, DATES[(moved + 1) % 4])
            c0 = time.process_time()
            w.write_arrow(data)
            return time.process_time() - c0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--moves", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    cpu = [run(a.rows, a.moves) for _ in range(a.repeat)]
    print(json.dumps({"rows": a.rows, "moves": a.moves, "cpu_s": [round(c, 4) for c in cpu],
                      "tree": str(Path(sys.modules["lake_assets"].__file__ or "").parent.parent)}))


if __name__ == "__main__":
    main()
