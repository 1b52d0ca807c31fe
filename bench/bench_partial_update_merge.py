"""CPU time of the partial-update merge with sequence groups, with and without
``partial-update.remove-record-on-sequence-group`` deletes, and of a bitmap index build in
versions 1 and 2.

    PYTHONPATH=. .venv/bin/python bench/bench_partial_update_merge.py [--rows N] [--repeat R]

Prints the best ``time.process_time`` of R runs per case. Run it from two checkouts alternately
(e.g. a ``git archive main`` copy as PYTHONPATH) to compare.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from lake_assets.formats.bitmap_index import BitmapIndexBuilder
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.options import CoreOptions
from lake_assets.spec.data_types import VarCharType


def best(fn: Callable[[], object], repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        out = min(out, time.process_time() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.rows
    rng = np.random.default_rng(1)
    kinds = np.zeros(n, np.int8)
    kinds[rng.random(n) < 0.05] = 3  # 5% -D records
    table = pa.table({"k": np.sort(rng.integers(0, n // 4, n)), "a": rng.integers(0, 9, n),
                      "g1": rng.integers(0, 5, n), "b": rng.integers(0, 9, n), "g2": rng.integers(0, 5, n),
                      "_SEQUENCE_NUMBER": np.arange(n, dtype=np.int64), "_VALUE_KIND": np.zeros(n, np.int8)})
    with_deletes = table.set_column(6, "_VALUE_KIND", pa.array(kinds))
    fields = [(f.name, f.type) for f in table.schema if not f.name.startswith("_")]
    groups = {"fields.g1.sequence-group": "a", "fields.g2.sequence-group": "b"}
    cases: list[tuple[str, dict[str, str], pa.Table]] = [("plain", {}, table), ("groups", groups, table)]
    try:
        PartialUpdate(fields, ["k"], CoreOptions({**groups, "partial-update.remove-record-on-sequence-group": "g1"}))
        cases += [("groups, 5% -D, remove-record-on-sequence-group g1",
                   {**groups, "partial-update.remove-record-on-sequence-group": "g1"}, with_deletes)]
    except Exception:
        pass
    for name, options, data in cases:
        merge = PartialUpdate(fields, ["k"], CoreOptions(options))
        print(f"partial-update merge, {name}: {best(lambda m=merge, d=data: m.merge(d, ['k']), args.repeat):.4f} s")
    words = pa.array([f"value-{i}" for i in rng.integers(0, n // 50, n)])
    for version in (1, 2):
        def build(v: int = version) -> bytes:
            try:
                builder = BitmapIndexBuilder(VarCharType(100), version=v)  # type: ignore[call-arg]
            except TypeError:
                builder = BitmapIndexBuilder(VarCharType(100))
            builder.add(words)
            return builder.finish()
        print(f"bitmap index build, {n} strings, version {version}: {best(build, args.repeat):.4f} s")


if __name__ == "__main__":
    main()
