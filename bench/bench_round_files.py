"""What each data file of an upsert round costs on its own (issue 17 §1): the same rounds written
into tables of 1 and 16 buckets per partition (2 and 32 files a round), CPU per part of the write.

    PYTHONPATH=. .venv/bin/python bench/bench_round_files.py [--rows 400000] [--rounds 4] [--repeat 3]

`bench_write_limit.py`'s table and rows (2 partitions, an int64 key, 5 value columns), loaded with
``--rows`` rows, then ``--rounds`` upsert rounds of 10% of the keys into each table. Each part's CPU
(`bench.cpu_breakdown.cpu_by_part`: pools inline, no profiler) is the best of ``--repeat`` passes
over the rounds, per round; "per extra file" is the difference between the two tables over the 30
files more the second writes: the fixed cost of a file, whatever its rows.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import bench.bench_write_limit as limit  # noqa: E402
from bench.cpu_breakdown import WRITE_PARTS, cpu_by_part  # noqa: E402

PARTS = [*WRITE_PARTS, ("lake_assets.ops.level0_flush", "Level0Flush.flush"),
         ("lake_assets.ops.level0_flush", "Level0Flush._take_merged"),
         ("lake_assets.formats.data_file", "DataFileWriter.parquet_options")]
BUCKETS = (1, 16)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    base, ups = limit.make_workload(args.rows, args.rounds)
    best: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as work:
        for buckets in BUCKETS:
            limit.BUCKETS = buckets  # the table `lake_table` makes
            t = limit.lake_table(tempfile.mkdtemp(dir=work))
            t.write_arrow(base)
            for _ in range(args.repeat):
                with cpu_by_part(PARTS) as totals:
                    for u in ups:
                        t.write_arrow(u)
                old = best.get(buckets)
                best[buckets] = dict(totals) if old is None else {k: min(v, totals[k]) for k, v in old.items()}
    few, many = BUCKETS
    extra_files = 2 * (many - few)
    print(f"{args.rows // 10} rows a round; CPU ms a round (best of {args.repeat}), and per extra file (µs)")
    print(f"| part | {2 * few} files | {2 * many} files | per extra file |")
    print("|---|---:|---:|---:|")
    for part in best[few]:
        a, b = best[few][part] / len(ups), best[many][part] / len(ups)
        print(f"| {part} | {a * 1e3:.2f} | {b * 1e3:.2f} | {(b - a) / extra_files * 1e6:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
