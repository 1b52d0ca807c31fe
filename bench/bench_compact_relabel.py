"""CPU of compaction units that only relabel files (upgrades), per unit.

A primary-key table of ``--buckets`` buckets, one level-0 file each (inserts only): a full
compaction relabels every file to the top level. The units are planned once and run serially
(`run_compaction_task`, nothing committed) ``--rounds`` times; prints the best and median CPU per
unit in microseconds (``time.process_time``), for a table without and with deletion vectors.

    PYTHONPATH=<tree> /work/main/.venv/bin/python bench/bench_compact_relabel.py --buckets 64 --rounds 30
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.compact import plan_compaction, run_compaction_task


def measure(buckets: int, rounds: int, options: dict[str, str]) -> tuple[float, float]:
    catalog = Catalog(tempfile.mkdtemp(prefix="bench-relabel-"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": str(buckets), **options})
    n = buckets * 50
    writer = t.new_writer("bench", write_only=True)  # level-0 files, left for a later compaction
    writer.write_arrow(pa.table({"k": list(range(n)), "v": [f"v{i}" for i in range(n)]}, schema=schema))
    t.new_committer("bench").commit(writer.prepare_commit(), 1)
    writer.close()
    tasks = plan_compaction(t.store, full=True).tasks
    assert all({s.kind for s in task.sections} == {"upgrade"} for task in tasks), "not relabel-only units"
    per_unit = []
    for _ in range(rounds):
        start = time.process_time()
        for task in tasks:
            run_compaction_task(t.store, task)
        per_unit.append((time.process_time() - start) / len(tasks) * 1e6)
    return min(per_unit), statistics.median(per_unit)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--buckets", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    for label, options in (("plain", {}), ("deletion vectors", {"deletion-vectors.enabled": "true"})):
        best, median = measure(args.buckets, args.rounds, options)
        print(f"{label}: {best:.1f} us best, {median:.1f} us median per relabel-only unit")


if __name__ == "__main__":
    main()
