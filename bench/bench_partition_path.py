"""CPU of naming partition directories (`lake_assets.spec.partition.partition_path`) for the checkout
named by ``--peer`` (a directory holding ``lake_assets``, e.g. ``git archive main`` unpacked) or this one:
50,000 distinct four-key partitions (DATE, TIMESTAMP(6), STRING, INT), legacy names, best of five
rounds of process CPU time. A path is computed once per distinct partition (`FileStore` caches it),
so this is a per-partition cost, never a per-row one.

    python bench/bench_partition_path.py [--peer /tmp/main]
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--partitions", type=int, default=50_000)
    args = parser.parse_args()
    sys.path.insert(0, args.peer)
    from lake_assets.spec.data_types import DateType, IntType, TimestampType, VarCharType
    from lake_assets.spec.partition import partition_path

    # the peer may predate partition.legacy-name (legacy names only, no keyword)
    kw = {"legacy_name": True} if "legacy_name" in inspect.signature(partition_path).parameters else {}
    types = [DateType(), TimestampType(6), VarCharType(20), IntType()]
    values = [(dt.date(2024, 1, 1) + dt.timedelta(days=i % 400), dt.datetime(2024, 1, 1, 1, 2, 3, i % 1_000_000),
               f"s{i}", i) for i in range(args.partitions)]
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for v in values:
            partition_path(["d", "ts", "s", "n"], v, types, "__DEFAULT_PARTITION__", **kw)
        best = min(best, time.process_time() - t0)
    print(f"{args.peer}: {best / len(values) * 1e6:.2f} us CPU per partition path (best of 5)")


if __name__ == "__main__":
    main()
