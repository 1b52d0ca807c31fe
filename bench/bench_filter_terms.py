"""CPU of `Predicate.filter_table` per term shape on one 65,536-row batch (a read's batch).

    PYTHONPATH=<tree> python bench/bench_filter_terms.py 200

Run once per lake_assets tree (alternate them); prints the mean CPU (`time.process_time`) of a
call, in ms, per shape. The filter is bound to the batch's schema first where the tree has
`Predicate.bind` (a read binds once, then filters every batch).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pyarrow as pa

from lake_assets.predicate import Predicate

ROWS = 65_536
SHAPES = {
    "k = 5": [("k", "=", 5)],
    "k in 3": [("k", "in", [1, 2, 3])],
    "k not in 3": [("k", "not in", [1, 2, 3])],
    "k in 1000": [("k", "in", list(range(0, 2000, 2)))],
    "s = and k <": [("s", "=", "n7"), ("k", "<", 500)],
    "x >= 0.5": [("x", ">=", 0.5)],
}


def main(repeat: int) -> None:
    rng = np.random.default_rng(1)
    data = pa.table({"k": pa.array(rng.integers(0, 1000, ROWS), mask=rng.random(ROWS) < 0.1),
                     "s": pa.array([f"n{i % 50}" for i in range(ROWS)]), "x": pa.array(rng.random(ROWS))})
    for name, flt in SHAPES.items():
        pred = Predicate.of(flt)
        assert pred is not None
        if hasattr(pred, "bind"):
            pred = pred.bind(data.schema, "bench")
        pred.filter_table(data)  # warm-up
        start = time.process_time()
        for _ in range(repeat):
            pred.filter_table(data)
        print(f"{name:12s} {1e3 * (time.process_time() - start) / repeat:.3f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
