"""CPU cost of the collection aggregate functions' fold (issue 14) against sum and listagg peers.

One aggregation merge (the write buffer's, a compaction's, a read's) of ``--rows`` records over
``--keys`` keys, every record holding a small array / map / ARRAY<ROW> of ``--width`` elements;
each function merges the same key groups. Prints CPU seconds (best of ``--repeat``) and rows per
CPU second per function, and the cost of the one sequential path (nested_update with a count
limit in key groups that hold a retraction) per such group.

    PYTHONPATH=. .venv/bin/python bench/bench_collection_aggregates.py --rows 200000 --keys 20000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyarrow as pa

from lake_assets.lsm.merge import sort_for_merge
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.options import CoreOptions

ROW = pa.struct([("id", pa.int32()), ("v", pa.string())])


def _table(rows: int, keys: int, width: int, retract_share: float, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, keys, rows)
    n = rows * width
    ints = pa.array(rng.integers(0, 50, n).astype(np.int32))
    offsets = pa.array(np.arange(0, n + 1, width, dtype=np.int32))
    strs = pa.array(np.char.add("v", rng.integers(0, 50, n).astype(str)))
    rows_arr = pa.StructArray.from_arrays([ints, strs], fields=list(ROW))
    kinds = np.where(rng.random(rows) < retract_share, 1, 0).astype(np.int8)
    return pa.table({
        "k": pa.array(k, pa.int64()),
        "s": pa.array(rng.integers(0, 100, rows)),
        "la": pa.array(np.char.add("x", rng.integers(0, 50, rows).astype(str))),
        "c": pa.ListArray.from_arrays(offsets, ints),
        "m": pa.MapArray.from_arrays(offsets, strs, ints),
        "n": pa.ListArray.from_arrays(offsets, rows_arr),
        "_SEQUENCE_NUMBER": pa.array(np.arange(rows, dtype=np.int64)),
        "_VALUE_KIND": pa.array(kinds),
    })


CASES = {
    "sum (peer)": ("s", {"fields.s.aggregate-function": "sum"}),
    "listagg (peer)": ("la", {"fields.la.aggregate-function": "listagg", "fields.la.ignore-retract": "true"}),
    "collect": ("c", {"fields.c.aggregate-function": "collect"}),
    "collect distinct": ("c", {"fields.c.aggregate-function": "collect", "fields.c.distinct": "true"}),
    "merge_map": ("m", {"fields.m.aggregate-function": "merge_map"}),
    "nested_update": ("n", {"fields.n.aggregate-function": "nested_update"}),
    "nested_update keyed": ("n", {"fields.n.aggregate-function": "nested_update", "fields.n.nested-key": "id"}),
    "nested_update keyed, count-limit (sequential groups)": (
        "n", {"fields.n.aggregate-function": "nested_update", "fields.n.nested-key": "id",
              "fields.n.count-limit": "3"}),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=20_000)
    ap.add_argument("--width", type=int, default=4)
    ap.add_argument("--retract-share", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    data = sort_for_merge(_table(args.rows, args.keys, args.width, args.retract_share), ["k"])
    for name, (col, options) in CASES.items():
        t = data.select(["k", col, "_SEQUENCE_NUMBER", "_VALUE_KIND"])
        fn = Aggregation([(f.name, f.type) for f in t.schema][:2], ["k"], CoreOptions(options))
        best = float("inf")
        for _ in range(args.repeat):
            start = time.process_time()
            fn.merge(t, ["k"])
            best = min(best, time.process_time() - start)
        print(f"{name:55s} {best:7.3f} s CPU  {args.rows / best / 1e6:6.2f} M records/s")
    kinds = data.column("_VALUE_KIND").to_numpy()
    keys = data.column("k").to_numpy()
    print(f"key groups holding a retraction: {len(np.unique(keys[kinds == 1]))} of {len(np.unique(keys))}")


if __name__ == "__main__":
    main()
