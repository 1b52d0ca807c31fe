"""CPU of `lsm.key_ranks.KeyRanks` on the DV bench's composite keys (int32 tenant, string order id).

One file's keys (50,000 of `bench_dv.py --key composite`'s keys in key order) indexed
(`KeyRanks.build`: codes of 8, then 16 bytes) and 5,000 of them looked up (`locate`), with the
parts: the codes (`key_codes.order_codes`) and the check of the string column. Thread CPU, mean of
``--repeat`` calls each.

    PYTHONPATH=. .venv/bin/python bench/bench_key_codes.py --repeat 20
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_dv

from lake_assets.lsm import key_codes
from lake_assets.lsm.key_ranks import KeyRanks


def _cpu_ms(repeat: int, fn: Callable[[], Any]) -> float:
    start = time.thread_time()
    for _ in range(repeat):
        fn()
    return (time.thread_time() - start) / repeat * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--key", choices=sorted(bench_dv.KEYS), default="composite")
    args = ap.parse_args()
    bench_dv.KEY = args.key
    names = [name for name, _ in bench_dv.KEYS[args.key]]
    import pyarrow as pa
    keys = pa.table(bench_dv.key_columns(np.arange(200_000))).sort_by([(n, "ascending") for n in names])
    file_keys = keys.slice(0, 50_000)
    wanted = file_keys.take(np.sort(np.random.default_rng(0).choice(50_000, 5_000, replace=False)))
    ranks = KeyRanks.build(file_keys)
    assert ranks is not None
    columns = [c.combine_chunks() for c in file_keys.columns]
    print(f"key {args.key}: {ranks.kind}, {ranks.code_width} bytes; CPU ms, mean of {args.repeat}")
    print(f"  KeyRanks.build, 50,000 keys        {_cpu_ms(args.repeat, lambda: KeyRanks.build(file_keys)):7.3f}")
    print(f"  KeyRanks.locate, 5,000 keys        {_cpu_ms(args.repeat, lambda: ranks.locate(wanted)):7.3f}")
    for width in (8, 16):
        layout = key_codes.CodeLayout.plan(columns, width)
        print(f"  order_codes, 50,000 keys, {width:2d} bytes "
              f"{_cpu_ms(args.repeat, lambda layout=layout: key_codes.order_codes(columns, layout)):7.3f}")


if __name__ == "__main__":
    main()
