"""CPU of measuring a postpone table's batch as postpone files (ops/postpone_size.py, issue 14 §3)
against the write it sizes: `staged_partitions` (the measure `write_fixed_buckets` plans with) and
the whole `write_fixed_buckets`, alternated, plus the old measure (Arrow ``nbytes``).

    PYTHONPATH=. .venv/bin/python bench/bench_postpone_size.py --rows 1000000 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.postpone_fixed_bucket import staged_partitions, write_fixed_buckets

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("x", pa.float64())])


def batch(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    ks = np.arange(n)
    v = pa.array(np.char.add("value-", (ks % 977).astype(str)))
    return pa.table({"k": ks, "dt": np.where(ks % 4 == 0, "d1", "d2"), "v": v, "x": rng.random(n)}, schema=SCHEMA)


def cpu(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    data = batch(a.rows)
    print(f"load average {os.getloadavg()}; rows {a.rows}; arrow bytes {data.nbytes}")
    for r in range(a.repeat):
        wh = tempfile.mkdtemp()
        try:
            cat = Catalog(wh)
            cat.create_database("db")
            t = cat.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                 options={"bucket": "-2", "postpone.target-size-per-bucket": "4 mb"})
            store = t.store
            old = cpu(lambda: data.nbytes)
            measure = cpu(lambda: staged_partitions(store, data))  # noqa: B023 - called at once
            write = cpu(lambda: write_fixed_buckets(store, data))  # noqa: B023 - called at once
            staged = staged_partitions(store, data)
            print(f"run {r}: measure {measure:.3f} s CPU, write_fixed_buckets {write:.3f} s CPU "
                  f"(measure {measure / write:.1%} of it; old Arrow measure {old:.6f} s); "
                  f"bytes {sorted(s.nbytes for s in staged.values())}")
        finally:
            shutil.rmtree(wh, ignore_errors=True)


if __name__ == "__main__":
    main()
