"""CPU cost of the bucket functions: ``default`` (murmur of the BinaryRow), ``mod`` and ``hive``, per key type.

Each round hashes the same 1M keys with every function, in alternating order, and records the CPU
time (``time.process_time``) of one ``assign_buckets`` call; the best of the rounds is reported as
rows per CPU second. The peer is the straightforward per-row reference of the property test
(`tests/property/test_bucket_function_reference.py`, Paimon HEAD's Java one value at a time), timed on
20k rows: what a per-row implementation (pypaimon's style) costs.

    PYTHONPATH=. python bench/bench_bucket_function.py [--rows 1000000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from decimal import Decimal

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lake_assets.lsm.bucket import assign_buckets
from lake_assets.spec.data_types import (
    BigIntType,
    DataType,
    DecimalType,
    IntType,
    VarCharType,
)
from tests.property.test_bucket_function_reference import hive_bucket


def _keys(rows: int) -> dict[str, tuple[pa.Array, DataType]]:
    rng = np.random.default_rng(1)
    longs = rng.integers(-(2**62), 2**62, rows)
    words = np.array([f"customer-{i}" for i in range(1000)])
    return {
        "bigint": (pa.array(longs), BigIntType()),
        "int": (pa.array(longs.astype(np.int32)), IntType()),
        "string (~12 B)": (pa.array(words[rng.integers(0, 1000, rows)].tolist()), VarCharType(100)),
        "decimal(18,4)": (pa.array(longs % 10**13).cast(pa.decimal128(19, 0)).cast(pa.decimal128(18, 4)),
                          DecimalType(18, 4)),
        "decimal(38,10)": (pa.array([Decimal(int(x)).scaleb(-10) for x in longs[: rows // 10]] * 10,
                                    pa.decimal128(38, 10)), DecimalType(38, 10)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    for name, (column, t) in _keys(args.rows).items():
        functions = ["default", "hive"] + (["mod"] if isinstance(t, IntType | BigIntType) else [])
        best = dict.fromkeys(functions, float("inf"))
        for r in range(args.rounds):
            for fn in functions if r % 2 == 0 else reversed(functions):
                start = time.process_time()
                assign_buckets([column], [t], 16, fn)
                best[fn] = min(best[fn], time.process_time() - start)
        sample = column.slice(0, 20_000).to_pylist()
        start = time.process_time()
        for v in sample:
            hive_bucket((v,), [t], 16)
        per_row = (time.process_time() - start) / len(sample)
        cells = "  ".join(f"{fn} {args.rows / best[fn] / 1e6:6.1f} M rows/s" for fn in functions)
        print(f"{name:15s} {cells}  per-row hive reference {1 / per_row / 1e6:6.3f} M rows/s")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
