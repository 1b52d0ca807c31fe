"""CPU per part of one deletion-vector upsert round of a partial-update or aggregation table (issue 14).

Times ``--rounds`` DV upsert rounds as `bench_dv.py` does (``--key``, ``--merge-engine``): each on
a fresh table of a load and one upsert round (its build left out), with the write path's pools
inline (`cpu_breakdown.cpu_by_part`: each listed function's thread CPU, nested parts counted in
their callers too), and prints the mean CPU ms of each part per round; ``--cprofile N`` prints
cProfile's top N functions by own time instead (cProfile inflates Python-heavy code against C
kernels: read its ranking, not its figures).

    LAKE_ASSETS_CPUS=1 PYTHONPATH=. .venv/bin/python bench/profile_dv_round.py --merge-engine aggregation \
        --key composite --rows 200000 --upsert-rows 20000 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_dv
from cpu_breakdown import WRITE_PARTS, cpu_by_part

DV_PARTS: list[tuple[str, str]] = [
    ("lake_assets.table", "Table.write_arrow"),
    ("lake_assets.ops.compact.rewrite", "run_compaction_task"),
    ("lake_assets.ops.dv_old_values", "OldValues.merge"),
    ("lake_assets.ops.dv_old_values", "OldValues._pair_records"),
    ("lake_assets.ops.dv_old_values", "strictly_ascending"),
    ("lake_assets.ops.dv_old_values", "OldValues._sources"),
    ("lake_assets.ops.dv_old_values", "OldValues._distinct_keys"),
    ("lake_assets.ops.dv_old_values", "OldValues._without_high_level"),
    ("lake_assets.ops.dv_old_values", "OldValues._merge_found"),
    ("lake_assets.ops.dv_compact", "VectorUpdate.record"),
    ("lake_assets.ops.dv_compact", "VectorUpdate.live"),
    ("lake_assets.ops.dv_compact", "VectorUpdate.found"),
    ("lake_assets.ops.dv_old_values", "OldValues._pair_positions"),
    ("lake_assets.ops.dv_old_values", "_gathered"),
    ("lake_assets.lsm.key_ranks", "KeyRanks.build"),
    ("lake_assets.lsm.key_ranks", "KeyRanks.locate"),
    ("lake_assets.lsm.merge_engine.partial_update", "PartialUpdate.merge_pairs"),
    ("lake_assets.lsm.merge_engine.aggregation", "Aggregation.merge_pairs"),
    ("lake_assets.ops.compact.rewrite", "same_rows"),
    ("lake_assets.ops.compact.rewrite", "spliced_rewrite"),
    ("lake_assets.ops.compact.splice_rewrite", "_changed"),
    ("lake_assets.ops.compact.splice_rewrite", "_encoded_columns"),
    ("lake_assets.ops.compact.splice_rewrite", "splice_columns"),
    ("lake_assets.formats.rolling_writer", "RollingFileWriter.write_prepared"),
    ("lake_assets.ops.dv_compact", "VectorUpdate.finish"),
    *[part for part in WRITE_PARTS if part[1] != "Table.write_arrow"],
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--upsert-rows", type=int, default=20_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--merge-engine", default="aggregation")
    ap.add_argument("--key", choices=sorted(bench_dv.KEYS), default="int64")
    ap.add_argument("--cprofile", type=int, default=0, metavar="N")
    ap.add_argument("--plain", action="store_true", help="the same rounds on a table without deletion vectors")
    ap.add_argument("--partial-columns", default=None,
                    help="partial-update: the round fills only these value columns (bench_dv --partial-columns)")
    args = ap.parse_args()
    bench_dv.KEY = args.key
    work = Path(tempfile.mkdtemp(prefix="profile-dv-"))
    try:
        profiler = cProfile.Profile() if args.cprofile else None
        parts = [p for p in DV_PARTS if _exists(p)]
        with cpu_by_part(parts) as totals:
            for i in range(args.rounds):
                # as bench_dv times a round: a fresh table (a load and one upsert round), then the round
                root = work / f"t{i}"
                with _paused(totals):
                    table = bench_dv.build(root, args.rows, args.upsert_rows, 1, args.buckets, not args.plain, 2,
                                           args.merge_engine)
                ids = np.sort(np.random.default_rng(100 + i).choice(args.rows, args.upsert_rows, replace=False))
                data = bench_dv.batch(ids, 99)
                if args.merge_engine == "partial-update" and args.partial_columns:
                    data = bench_dv.partial(data, args.partial_columns.split(","))
                os.sync()
                if profiler is not None:
                    profiler.enable()
                table.write_arrow(data)
                if profiler is not None:
                    profiler.disable()
                shutil.rmtree(root, ignore_errors=True)
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(args.cprofile)
            return
        kind = "plain" if args.plain else "DV"
        print(f"{args.merge_engine}, key {args.key}, {kind}: CPU ms per round ({args.rounds} rounds)")
        for label, seconds in totals.items():
            print(f"  {label:55s} {seconds / args.rounds * 1e3:8.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def _paused(totals: dict[str, float]) -> Iterator[None]:
    """The block's CPU (a table's build) left out of ``totals``."""
    saved = dict(totals)
    try:
        yield
    finally:
        totals.update(saved)


def _exists(part: tuple[str, str]) -> bool:
    import importlib
    owner: object = importlib.import_module(part[0])
    for attr in part[1].split("."):
        if not hasattr(owner, attr):
            return False
        owner = getattr(owner, attr)
    return True


if __name__ == "__main__":
    main()
