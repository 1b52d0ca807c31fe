"""CPU cost of the merge engines' NOT NULL check (`lake_assets.lsm.merge_engine.not_null`).

Usage: ``PYTHONPATH=<checkout> python bench/bench_merge_not_null.py <label>``; run it alternately on
`main` (``git archive main``) and a branch. 400k records, 4 per key, a NOT NULL column without nulls
and a nullable one 30% null: the partial-update merge and the aggregation merge with
``aggregation.remove-record-on-delete``, mean CPU time of 5 merges (``time.process_time``).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pyarrow as pa

from lake_assets.lsm.merge import sort_for_merge
from lake_assets.lsm.merge_engine.registry import merge_engine
from lake_assets.options import CoreOptions

ROWS = 400_000
ENGINES = (
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
     "fields.b.aggregate-function": "sum"},
)


def main(label: str) -> None:
    rng = np.random.default_rng(1)
    b = pa.array(rng.integers(0, 100, ROWS), mask=rng.random(ROWS) < 0.3)
    table = sort_for_merge(pa.table({
        "k": rng.integers(0, ROWS // 4, ROWS), "a": rng.integers(0, 100, ROWS), "b": b,
        "_SEQUENCE_NUMBER": np.arange(ROWS), "_VALUE_KIND": np.zeros(ROWS, np.int8)}), ["k"])
    fields = [("k", pa.int64()), ("a", pa.int64()), ("b", pa.int64())]
    for options in ENGINES:
        core = CoreOptions(options)
        engine = merge_engine(core.merge_engine)
        try:
            fn = engine.create(fields, ["k"], core, {"k", "a"}, "Table t")
        except TypeError:  # a checkout before the NOT NULL check
            fn = engine.create(fields, ["k"], core)
        fn.merge(table, ["k"])
        start = time.process_time()
        for _ in range(5):
            fn.merge(table, ["k"])
        print(f"{label} {options['merge-engine']}: {(time.process_time() - start) / 5 * 1000:.1f} ms CPU")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
