"""Deletion-vector forms: what a 32-bit vector costs before and after 64-bit support, and what the
64-bit form costs beside it (session 13).

* ``round``: CPU seconds of one upsert round (write + inline compaction marking vectors) on a
  deletion-vector table, fresh table per repeat, in the form ``--form`` (32 or 64).
* ``vector``: the vector work of such a round, ``--iterations`` times: decode a bucket's index file,
  copy a vector, add found positions, run-optimize, encode the new file, build a read mask. Run it
  under ``valgrind --tool=callgrind`` with two iteration counts: the difference is the instructions
  of the iterations alone (imports and set-up cancel out).

The script imports the lake_assets of the tree it sits in (copy it into another checkout to
measure that one)::

    .venv/bin/python bench/bench_dv_forms.py round --form 32 --rows 400000 --upsert-rows 40000 --repeat 5
    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python bench/bench_dv_forms.py \\
        vector --form 32 --iterations 21
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lake_assets import Catalog
from lake_assets.spec import deletion_vector as dv

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])


def _batch(ids: np.ndarray, round_: int) -> pa.Table:
    return pa.table({"id": ids, "name": pa.array([f"n{round_}"] * ids.size),
                     "amount": ids.astype(np.float64) + round_}, schema=SCHEMA)


def _options(form: int) -> dict[str, str]:
    options = {"bucket": "2", "deletion-vectors.enabled": "true", "compaction.delete-ratio-threshold": "0.99"}
    if form == 64:
        options["deletion-vectors.bitmap64"] = "true"
    return options


def round_cpu(root: Path, form: int, rows: int, upsert_rows: int, seed: int) -> float:
    """CPU seconds of the third upsert round on a fresh table (the first two give its top files vectors)."""
    cat = Catalog(str(root))
    cat.create_database("db")
    table = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options=_options(form))
    table.write_arrow(_batch(np.arange(rows, dtype=np.int64), 0))
    rng = np.random.default_rng(seed)
    for r in (1, 2):
        table.write_arrow(_batch(np.sort(rng.choice(rows, upsert_rows, replace=False)), r))
    data = _batch(np.sort(rng.choice(rows, upsert_rows, replace=False)), 3)
    c0 = time.process_time()
    table.write_arrow(data)
    return time.process_time() - c0


def vector_work(form: int, iterations: int, rows: int = 250_000, found: int = 25_000) -> int:
    """The vector work of a round, ``iterations`` times; returns a checksum (nothing is optimized away)."""
    wide = form == 64
    rng = np.random.default_rng(7)
    # (the base tree's new_vector has no ``bitmap64``: the 32-bit form is built without it)
    old = {f"data-{i}.parquet": (dv.new_vector(np.sort(rng.choice(rows, found, replace=False)), bitmap64=True)
                                 if wide else dv.new_vector(np.sort(rng.choice(rows, found, replace=False))))
           for i in range(4)}
    data, ranges = dv.encode_index_file(old)
    positions = np.sort(rng.choice(rows, found, replace=False)).astype(np.int64)
    total = 0
    for _ in range(iterations):
        vectors = {r.data_file: dv.read_vector(data, r, "index-x") for r in ranges}
        marked = vectors["data-0.parquet"].copy()
        dv.add_positions(marked, positions, "data-0.parquet")
        marked.run_optimize()
        vectors["data-0.parquet"] = marked
        out, _ = dv.encode_index_file(vectors)
        keep = dv.deleted_mask(marked, rows, "data-0.parquet")
        assert keep is not None
        total += len(out) + int(keep.sum())
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["round", "vector"])
    ap.add_argument("--form", type=int, choices=[32, 64], default=32)
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--upsert-rows", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=1)
    args = ap.parse_args()
    if args.mode == "vector":
        print(json.dumps({"mode": "vector", "form": args.form, "iterations": args.iterations,
                          "checksum": vector_work(args.form, args.iterations)}))
        return
    cpus = []
    for i in range(args.repeat):
        root = Path(tempfile.mkdtemp(prefix="bench-dv-forms-"))
        try:
            cpus.append(round_cpu(root, args.form, args.rows, args.upsert_rows, 100 + i))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({"mode": "round", "form": args.form, "rows": args.rows, "upsert_rows": args.upsert_rows,
                      "cpu_s": [round(c, 4) for c in cpus], "best_cpu_s": round(min(cpus), 4),
                      "median_cpu_s": round(statistics.median(cpus), 4),
                      "load_average": round(os.getloadavg()[0], 2),
                      "tree": str(Path(__file__).resolve().parent.parent)}))


if __name__ == "__main__":
    main()
