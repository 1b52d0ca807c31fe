"""Focused write-path benchmark on the TPC-H lineitem inputs: load, upsert rounds, full compaction.

Reuses the inputs `bench_tpch.py` generated (``--work``, default ``bench/out/tpch/work``) and the
same table layout (ship_month partitions x 4 buckets, ``write-only``), but runs only lake_assets
and only the write-side steps, so a change to the writer or compaction can be measured in a
minute. Peak memory per step is the kernel's high-water mark, reset before each step (see
`bench.tpch.measure`). Example::

    .venv/bin/python bench/bench_write.py --sf 0.1 --steps load,upsert,compact
    .venv/bin/python bench/bench_write.py --sf 1 --steps load --write-buffer-size "64 mb"
"""

from __future__ import annotations

import argparse
import cProfile
import json
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.tpch.generate import KEYS, OP, PARTITION
from bench.tpch.measure import Meter
from bench.tpch.worker import input_reader
from bench.tpch.workload import INPUT_ROW_GROUP
from lake_assets import Catalog

TABLE = "db.lineitem"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sf", default="0.1")
    p.add_argument("--work", type=Path, default=Path("bench/out/tpch/work"))
    p.add_argument("--steps", default="load,upsert,compact", help="load, upsert, compact (comma-separated)")
    p.add_argument("--rounds", type=int, default=5, help="upsert rounds to run")
    p.add_argument("--write-buffer-size", default="256 mb")
    p.add_argument("--parallelism", type=int, default=None, help="compaction units in flight")
    p.add_argument("--warehouse", type=Path, default=None, help="keep the warehouse here (default: a temp dir)")
    p.add_argument("--profile", default="", help="a step to cProfile into /tmp/bench_write-<step>.prof")
    p.add_argument("--reader", choices=("harness", "plain"), default="harness",
                   help="harness: bench_tpch's input reader (pyarrow pre_buffer, whose read cache grows over "
                        "the file); plain: pre_buffer off, so the peak shows the writer's own memory")
    args = p.parse_args(argv)
    plan = json.loads((args.work / f"sf{args.sf}" / "inputs" / "plan.json").read_text())
    steps = args.steps.split(",")
    read = input_reader if args.reader == "harness" else _plain_reader
    wh = args.warehouse or Path(tempfile.mkdtemp(prefix="bench-write-"))
    meter = Meter("lake", Path(tempfile.mkdtemp()) / "meter.json")
    try:
        cat = Catalog(str(wh))
        if "load" in steps:
            cat.create_database("db", ignore_if_exists=True)
            cat.create_table(TABLE, pq.read_schema(plan["base"]), primary_keys=[*KEYS, PARTITION],
                             partition_keys=[PARTITION],
                             options={"bucket": str(plan["bucket"]), "rowkind.field": OP, "write-only": "true",
                                      "write-buffer-size": args.write_buffer_size})
            _run(meter, args.profile, "load", plan["base_rows"],
                 lambda: cat.get_table(TABLE).write_arrow(read(plan["base"])))
        if "upsert" in steps:
            for r, (path, rows) in enumerate(zip(plan["rounds"], plan["round_rows"], strict=True), start=1):
                if r > args.rounds:
                    break
                table = cat.get_table(TABLE)
                _run(meter, args.profile, f"upsert_{r}", rows, lambda t=table, p=path: t.write_arrow(read(p)))
        if "compact" in steps:
            table = cat.get_table(TABLE)
            kw = {} if args.parallelism is None else {"parallelism": args.parallelism}  # older trees lack it
            _run(meter, args.profile, "compact", plan["upserted_rows"], lambda: table.compact(full=True, **kw))
        for s in meter.steps:
            print(f"{s.step:10s} {s.seconds:7.3f} s  peak {s.peak_rss_mib:7.1f} MiB "
                  f"(+{s.peak_above_start_mib:.1f})  {s.rows / max(s.seconds, 1e-9) / 1000:.0f}k rows/s")
    finally:
        if args.warehouse is None:
            shutil.rmtree(wh, ignore_errors=True)
    return 0


def _plain_reader(path: str) -> pa.RecordBatchReader:
    """The same batches as `input_reader`, without pyarrow's pre-buffering: with ``pre_buffer`` on,
    a ParquetFile keeps every coalesced read range until it is closed (about 250 MiB by the end of
    the SF 1 base file), which a load's peak memory would otherwise count."""
    pf = pq.ParquetFile(path, pre_buffer=False)
    return pa.RecordBatchReader.from_batches(pf.schema_arrow, pf.iter_batches(batch_size=INPUT_ROW_GROUP))


def _run(meter: Meter, profile: str, name: str, rows: int, fn: object) -> None:
    prof = cProfile.Profile() if profile and name.startswith(profile) else None
    with meter.step(name, rows):
        if prof is not None:
            prof.enable()
        fn()  # type: ignore[operator]
        if prof is not None:
            prof.disable()
    if prof is not None:
        prof.dump_stats(f"/tmp/bench_write-{name}.prof")


if __name__ == "__main__":
    raise SystemExit(main())
