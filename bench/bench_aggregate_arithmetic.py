"""CPU time of the aggregation engine's ``sum`` fold (`aggregate_functions.fold`) on float and
integer columns, for the checkout given (to compare a base checkout with this one in one run).

Usage: ``python bench/bench_aggregate_arithmetic.py <checkout root> [repeats]``; prints the best
CPU time (``time.process_time``) of each case. Run it alternately on two checkouts.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pyarrow as pa


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    from lake_assets.lsm.merge_engine.aggregate_functions import FieldFunction, fold

    rng = np.random.default_rng(0)
    shapes = {"2 per key x 200k": np.full(200_000, 2), "1-40 per key x 20k": rng.integers(1, 41, 20_000),
              "1 key x 1M": np.array([1_000_000])}
    for shape, sizes in shapes.items():
        gid = np.repeat(np.arange(sizes.size), sizes)
        rows, retract = np.arange(gid.size), rng.random(gid.size) < 0.1
        for dtype in (np.float64, np.float32, np.int32, np.int64):
            raw = rng.standard_normal(gid.size) * 1000
            values = pa.array(raw.astype(dtype))
            best = float("inf")
            for _ in range(repeats):
                start = time.process_time()
                fold(FieldFunction("c", "sum"), values, rows, retract, gid, sizes.size)
                best = min(best, time.process_time() - start)
            print(f"{shape:22s} {np.dtype(dtype).name:8s} {best * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
