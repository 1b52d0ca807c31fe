"""CPU time per 100k merged rows of the aggregation engine's DECIMAL ``product`` fold
(`aggregate_functions.fold`) where it used to go record by record in Python: DECIMAL(38, s), and
any precision with retractions. For the checkout given, to compare a base checkout with this
one alternately in one run.

Usage: ``python bench/bench_decimal_product.py <checkout root> [repeats]``; prints the best CPU
time (``time.process_time``) per 100k rows of each case. The factors (0.5, 0.8, 1.25, 1.6, 2,
2.5, 4) keep every retraction's quotient exact (Java's BigDecimal.divide would fail otherwise);
long products leave the precision and restart, as Java's do.
"""

from __future__ import annotations

import sys
import time
from decimal import Decimal

import numpy as np
import pyarrow as pa

FACTORS = [Decimal(x) for x in ("0.5", "0.8", "1.25", "1.6", "2", "2.5", "4")]


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    from lake_assets.lsm.merge_engine.aggregate_functions import FieldFunction, fold

    rng = np.random.default_rng(0)
    rows_n = 100_000
    shapes = {"2 per key": np.full(rows_n // 2, 2), "1-40 per key": rng.integers(1, 41, rows_n // 20),
              "1 key": np.array([rows_n])}
    for shape, sizes in shapes.items():
        gid = np.repeat(np.arange(sizes.size), sizes)
        rows = np.arange(gid.size)
        for precision, scale, retract_share in ((38, 4, 0.0), (38, 4, 0.1), (20, 4, 0.1)):
            retract = rng.random(gid.size) < retract_share
            picks = rng.integers(0, len(FACTORS), gid.size)
            values = pa.array([FACTORS[i] for i in picks], type=pa.decimal128(precision, scale))
            best = float("inf")
            for _ in range(repeats):
                start = time.process_time()
                fold(FieldFunction("c", "product"), values, rows, retract, gid, sizes.size)
                best = min(best, time.process_time() - start)
            per_100k = best * 1000 * rows_n / gid.size
            case = f"DECIMAL({precision},{scale}) retract {retract_share:.0%}"
            print(f"{shape:14s} {case:28s} {per_100k:8.1f} ms / 100k rows")


if __name__ == "__main__":
    main()
