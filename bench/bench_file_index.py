"""File-index cost benchmark: CPU seconds of an append write with no index, a bloom filter or a
bitmap index on one column, at three cardinalities, and of planning a filtered read that the index
prunes. Runs alternate (no index, bloom filter, bitmap) within each repetition, so that the three
see the same machine load. Example::

    PYTHONPATH=. .venv/bin/python bench/bench_file_index.py --rows 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lake_assets import Catalog

INDEXES = {
    "none": {},
    "bloom-filter": {"file-index.bloom-filter.columns": "k"},
    "bitmap": {"file-index.bitmap.columns": "k"},
}


def _data(rows: int, distinct: int, strings: bool, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, distinct, rows) if distinct < rows else rng.permutation(rows)
    k = pa.array(np.char.add("value-", keys.astype(str))) if strings else pa.array(keys)
    return pa.table({"k": k, "v": pa.array(rng.random(rows))})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    cases = [("int64", 100, False), ("int64", args.rows // 10, False), ("int64", args.rows, False),
             ("string", 1000, True), ("string", args.rows // 2, True)]
    for type_name, distinct, strings in cases:
        data = _data(args.rows, distinct, strings, 1)
        probe = data.column("k")[7].as_py()
        write: dict[str, list[float]] = {name: [] for name in INDEXES}
        plan: dict[str, list[float]] = {name: [] for name in INDEXES}
        for _ in range(args.repeat):
            for name, options in INDEXES.items():
                with tempfile.TemporaryDirectory() as wh:
                    cat = Catalog(wh)
                    cat.create_database("db")
                    t = cat.create_table("db.t", data.schema, options={"bucket": "-1", **options})
                    t0 = time.process_time()
                    t.write_arrow(data)
                    t1 = time.process_time()
                    for _ in range(4):  # four more files, so that a prune has files to skip
                        t.write_arrow(_data(args.rows // 8, distinct, strings, 2))
                    t = t.refresh()
                    t2 = time.process_time()
                    files = [f.file_name for sp in t.plan(filter=[("k", "=", probe)]) for f in sp.files]
                    t3 = time.process_time()
                    write[name].append(t1 - t0)
                    plan[name].append(t3 - t2)
                    del files
        base = statistics.median(write["none"])
        parts = [f"{name} {statistics.median(v):.2f}" + ("" if name == "none" else
                                                           f" (+{statistics.median(v) - base:.2f})")
                 for name, v in write.items()]
        plans = [f"{name} {statistics.median(v) * 1000:.0f} ms" for name, v in plan.items()]
        print(f"{type_name} {distinct} distinct in {args.rows} rows: write CPU s {', '.join(parts)}; "
              f"plan of k = probe over 5 files: {', '.join(plans)}")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
