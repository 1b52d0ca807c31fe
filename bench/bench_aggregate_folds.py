"""CPU time of the aggregation engine's DECIMAL ``sum`` where runs may leave their precision
(`aggregate_arithmetic._decimal_sum_passes`; before session 18 one Python ``decimal`` step per
record), for the checkout given (to compare a base checkout with this one in one run).

Usage: ``python bench/bench_aggregate_folds.py <checkout root> [repeats]``; prints the best CPU time
(``time.process_time``) of each case. Run it alternately on two checkouts.
"""

from __future__ import annotations

import sys
import time
from decimal import Context, Decimal

import numpy as np
import pyarrow as pa


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    from lake_assets.lsm.merge_engine.aggregate_functions import FieldFunction, fold

    rng = np.random.default_rng(0)
    exact = Context(prec=100)
    for precision, scale in ((20, 2), (38, 4)):
        for shape, sizes in {"2 per key x 50k": np.full(50_000, 2),
                             "1-40 per key x 5k": rng.integers(1, 41, 5_000)}.items():
            gid = np.repeat(np.arange(sizes.size), sizes)
            rows, retract = np.arange(gid.size), rng.random(gid.size) < 0.1
            # values near the top of the precision: every run may leave it
            unscaled = rng.integers(-(10**15), 10**15, gid.size).astype(object) * 10 ** (precision - 15)
            values = pa.array([Decimal(int(u)).scaleb(-scale, exact) for u in unscaled],
                              type=pa.decimal128(precision, scale))
            best = float("inf")
            for _ in range(repeats):
                start = time.process_time()
                fold(FieldFunction("c", "sum"), values, rows, retract, gid, sizes.size)
                best = min(best, time.process_time() - start)
            print(f"sum DECIMAL({precision},{scale}) {shape:20s} {best * 1000:8.1f} ms")
    sizes = rng.integers(1, 5, 200_000)
    gid = np.repeat(np.arange(sizes.size), sizes)
    rows, no_retract = np.arange(gid.size), np.zeros(gid.size, dtype=bool)
    words = np.array(["alpha", "beta", " ", "", "gamma"], dtype=object)
    for func, values in (("max", pa.array(rng.standard_normal(gid.size))),
                         ("listagg", pa.array(words[rng.integers(0, 5, gid.size)], type=pa.string()))):
        best = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            fold(FieldFunction("c", func), values, rows, no_retract, gid, sizes.size)
            best = min(best, time.process_time() - start)
        print(f"{func:7s} {values.type!s:10s} 1-4 per key x 200k {best * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
