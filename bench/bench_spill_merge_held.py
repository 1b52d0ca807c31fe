"""Arrow bytes held as each merge step of a spilled commit starts (session 12, debt 2).

One commit of ``--batches`` writes of ``--rows`` rows into a one-bucket primary-key table whose
``write-buffer-size`` makes it spill; ``prepare_commit`` merges the runs into level-0 files step
by step (`WriteBufferSpill.merge_into`). Prints, per run, the Arrow pool bytes allocated each
time the merge starts making its next step (what the previous steps left alive), and the CPU
time of the merge. Deterministic in bytes; run it under each tree with ``PYTHONPATH=<tree>``.

    PYTHONPATH=. .venv/bin/python bench/bench_spill_merge_held.py --label new
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops import write_spill

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="tree")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--buffer", default="16 mb")
    a = ap.parse_args()
    root = tempfile.mkdtemp()
    tempfile.tempdir = root  # spill runs beside the table
    catalog = Catalog(root + "/wh")
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "write-buffer-size": a.buffer})
    held: list[int] = []
    real = write_spill.WriteBufferSpill.merged

    def merged(self: write_spill.WriteBufferSpill, inputs: list[Iterator[pa.Table]],
               merge: Callable[[pa.Table], pa.Table]) -> Iterator[pa.Table]:
        steps = real(self, inputs, merge)
        while True:
            held.append(pa.total_allocated_bytes())  # as the next step starts being made
            try:
                step = next(steps)
            except StopIteration:
                return
            yield step
            del step

    write_spill.WriteBufferSpill.merged = merged  # type: ignore[method-assign]
    rng = np.random.default_rng(1)
    writer = table.new_writer("bench")
    for b in range(a.batches):
        keys = rng.choice(4 * a.rows, a.rows, replace=False)
        names = np.char.add("value-", keys.astype(str)).astype(object)
        writer.write_arrow(pa.table({"k": keys, "v": np.full(a.rows, b), "s": names}, schema=SCHEMA))
    cpu = time.process_time()
    writer.prepare_commit()
    cpu = time.process_time() - cpu
    writer.close()
    print(f"{a.label}: {len(held)} merge steps, held as a step starts: max {max(held) / 2**20:.1f} MiB, "
          f"median {sorted(held)[len(held) // 2] / 2**20:.1f} MiB; merge CPU {cpu:.2f} s")


if __name__ == "__main__":
    main()
