"""Peak RSS of a cross-partition writer's key index (issue 14 review): `KeyIndex.bootstrap` of
``n`` BIGINT keys, then a lookup and a put of 100,000 random keys, each case in its own process
(``ru_maxrss`` is a process's peak). Measured beside the same with no key: the fixed cost of the
imports and numpy/pyarrow's first calls, which is not the index's.

    PYTHONPATH=. .venv/bin/python bench/bench_key_index_rss.py --keys 1000000 4000000 --memory-mb 8 1024

``--memory-mb`` is the index's bound, half of ``write-buffer-size`` (8: a 16 mb write buffer).
Prints a Markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

PIECE_ROWS = 65536


def _one(n: int, memory: int) -> dict[str, float | bool]:
    from lake_assets.ops.key_index import ENTRY_SCHEMA, KeyIndex, encode_keys
    from lake_assets.spec.data_types import BigIntType

    def keys(ids: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        return encode_keys([pa.array(ids, pa.int64())], [BigIntType(nullable=False)], len(ids))

    def pieces():  # type: ignore[no-untyped-def]
        for start in range(0, n, PIECE_ROWS):
            ids = np.arange(start, min(n, start + PIECE_ROWS), dtype=np.int64) * 7
            k, h = keys(ids)
            m = len(ids)
            yield pa.table([k, pa.array(h), pa.array(np.full(m, start % 5, np.int32)),
                            pa.array(np.full(m, 3, np.int32))], schema=ENTRY_SCHEMA)

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu0 = time.process_time()
    with tempfile.TemporaryDirectory() as spill:
        index = KeyIndex("bench.t", memory, spill)
        index.bootstrap(pieces(), n)
        cpu1 = time.process_time()
        query = np.unique(np.random.default_rng(1).integers(0, max(1, n) * 7, 100_000))
        k, h = keys(query)
        found = index.lookup(k, h)
        assert int(found.found.sum()) == (int((query % 7 == 0).sum()) if n else 0)
        index.put(k, h, np.zeros(len(query), np.int32), np.zeros(len(query), np.int32))
        cpu2 = time.process_time()
        spilled = index.spilled
        index.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"rss_mib": (peak - base) / 1024, "arrow_peak_mib": pa.default_memory_pool().max_memory() / 2**20,
            "bootstrap_cpu_s": cpu1 - cpu0, "lookup_put_cpu_s": cpu2 - cpu1, "spilled": spilled}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, nargs="+", default=[1_000_000, 4_000_000])
    parser.add_argument("--memory-mb", type=int, nargs="+", default=[8, 1024])
    parser.add_argument("--one", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(*args.one)))
        return
    print("| keys | bound MiB | spilled | RSS growth MiB | Arrow pool peak MiB | bootstrap cpu s | lookup+put cpu s |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for n in [0, *args.keys]:
        for mb in args.memory_mb:
            out = subprocess.run([sys.executable, __file__, "--one", str(n), str(mb << 20)], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out)
            print(f"| {n:,} | {mb} | {r['spilled']} | {r['rss_mib']:.0f} | {r['arrow_peak_mib']:.0f} | "
                  f"{r['bootstrap_cpu_s']:.2f} | {r['lookup_put_cpu_s']:.2f} |")


if __name__ == "__main__":
    main()
