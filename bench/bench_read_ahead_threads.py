"""Many short streaming reads (`Table.to_batches` of a small 4-bucket table: 4 splits, 2 read-ahead
workers each read): CPU and wall time per read of the lake_assets at ROOT, and the threads started.

Read-ahead workers were started per read (`threading.Thread`, joined at the end; a close polled every
50 ms) and are now the process's kept threads (`ops.kept_threads`); run the two trees alternated:

    for r in 1 2 3; do for root in /tmp/base /work/wt/x; do
        PYTHONPATH= python bench/bench_read_ahead_threads.py $root 300; done; done
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
READS = int(sys.argv[2]) if len(sys.argv) > 2 else 300
sys.path.insert(0, ROOT)

import pyarrow as pa  # noqa: E402

from lake_assets import Catalog  # noqa: E402


def main() -> None:
    catalog = Catalog(tempfile.mkdtemp(prefix="bench-read-ahead-"))
    catalog.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    table = catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "4"})
    table.write_arrow(pa.table({"k": list(range(400)), "v": list(range(400))}, schema=schema))
    starts = 0
    real_start = threading.Thread.start

    def counted(self: threading.Thread) -> None:
        nonlocal starts
        starts += 1
        real_start(self)

    threading.Thread.start = counted  # type: ignore[method-assign]
    for _ in range(20):  # warm: imports, caches, the first kept threads
        sum(b.num_rows for b in table.to_batches(read_ahead=1))
    results = {}
    for name, early in (("full", False), ("first batch, then close", True)):
        best_cpu = best_wall = float("inf")
        for _ in range(3):
            c0, w0, s0 = time.process_time(), time.perf_counter(), starts
            for _ in range(READS):
                it = table.to_batches(read_ahead=1)
                if early:
                    next(iter(it))
                    it.close()  # type: ignore[attr-defined]
                else:
                    sum(b.num_rows for b in it)
            best_cpu = min(best_cpu, (time.process_time() - c0) / READS * 1e3)
            best_wall = min(best_wall, (time.perf_counter() - w0) / READS * 1e3)
            started = starts - s0
        results[name] = (best_cpu, best_wall, started)
    for name, (cpu, wall, started) in results.items():
        print(f"{ROOT} {name}: CPU {cpu:.2f} ms/read, wall {wall:.2f} ms/read, threads started {started}")


if __name__ == "__main__":
    main()
