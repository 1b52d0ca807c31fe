"""Placement of a cross-partition upsert batch whose partitions both lose and receive keys (issue 14,
round 2): ``rows`` keys over four dates with ``dynamic-bucket.target-row-num`` = rows / (4 *
``buckets``), so each date's buckets are full, then one ``write_arrow`` moving ``moves`` keys each
to the next date: every move frees a slot of a full bucket that a later placement into that date
takes (Java's BucketAssigner, in arrival order). The writer's key index is bootstrapped by a first
write of one key (not measured). Measured: CPU seconds of the moving ``write_arrow`` and of the
router's ``_place_in_order`` within it (the placements of partitions losing and receiving keys),
in whichever tree ``lake_assets`` is imported from (PYTHONPATH), so a base tree runs alike.

    PYTHONPATH=<tree> .venv/bin/python bench/bench_cross_partition_placement.py --rows 400000 --moves 40000 --buckets 1

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import lake_assets
from lake_assets import Catalog
from lake_assets.ops import cross_partition

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("amount", pa.float64())])
DATES = np.array(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"])
PLACE_CPU = [0.0]


def _timed(method: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c0 = time.process_time()
        try:
            return method(*args, **kwargs)
        finally:
            PLACE_CPU[0] += time.process_time() - c0
    return wrapper


def batch(ids: np.ndarray, dates: np.ndarray) -> pa.Table:
    return pa.table({"id": ids, "dt": pa.array(dates), "amount": ids.astype(np.float64)}, schema=SCHEMA)


def run(rows: int, moves: int, buckets: int) -> tuple[float, float]:
    root = Path(tempfile.mkdtemp(prefix="bench-cp-place-"))
    try:
        cat = Catalog(str(root))
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": str(rows // (4 * buckets))})
        ids = np.arange(rows, dtype=np.int64)
        t.write_arrow(batch(ids, DATES[ids % 4]))
        moved = np.random.default_rng(7).choice(rows, size=moves, replace=False).astype(np.int64)
        with t.refresh().new_writer("bench", write_only=True) as w:
            w.write_arrow(batch(ids[:1], DATES[:1]))  # bootstraps the key index
            data = batch(moved, DATES[(moved + 1) % 4])
            PLACE_CPU[0] = 0.0
            c0 = time.process_time()
            w.write_arrow(data)
            return time.process_time() - c0, PLACE_CPU[0]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--moves", type=int, default=40_000)
    ap.add_argument("--buckets", type=int, default=1, help="buckets per date")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    router = cross_partition.CrossPartitionRouter
    router._place_in_order = _timed(router._place_in_order)  # type: ignore[method-assign]
    got = [run(a.rows, a.moves, a.buckets) for _ in range(a.repeat)]
    print(json.dumps({"tree": str(Path(lake_assets.__file__).parent.parent), "rows": a.rows, "moves": a.moves,
                      "buckets": a.buckets, "write_cpu_s": [round(w, 4) for w, _ in got],
                      "place_cpu_s": [round(p, 4) for _, p in got]}))


if __name__ == "__main__":
    main()
