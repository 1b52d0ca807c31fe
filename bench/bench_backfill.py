"""Range backfill: one ingest application per day (before) against one for the whole range (now).

Writes ``--days`` days of landing Parquet (``--rows`` per day) and a daily-partitioned primary-key
table, then runs the real ingest job exactly as the Dagster ingest asset launches it
(`SparkJobResource.command`, python launcher) in two ways on fresh copies of the table:

* ``per_day``: one job run per day (``--partition dt=D --overwrite``), the way a range was
  backfilled before; ``--per-day-sample K`` runs only the first K days and scales the time to the
  range (each run pays the same JVM and session start, so the per-day cost is flat);
* ``one_app``: one job run for the range (``--partition-source dt=D GLOB`` per day, ``--overwrite``).

Both tables must end up with the same rows per day. Example::

    .venv/bin/python bench/bench_backfill.py --days 30 --per-day-sample 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lake_assets import Catalog
from lake_assets.defs.resources import SparkJobResource

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("amount", pa.float64())])
CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}


def _landing(base: Path, days: list[str], rows: int) -> dict[str, str]:
    out = {}
    for i, day in enumerate(days):
        folder = base / "landing" / day
        folder.mkdir(parents=True)
        ids = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        pq.write_table(pa.table({"id": ids, "name": pc.cast(ids, pa.string()),
                                 "amount": pc.multiply(pc.cast(ids, pa.float64()), 0.5)}), folder / "part-0.parquet")
        out[day] = str(folder / "*.parquet")
    return out


def _table(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    catalog.create_table("db.orders", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2"})


def _run(launcher: SparkJobResource, args: list[str]) -> float:
    command = launcher.command("ingest", args)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ingest failed ({done.returncode}): {done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def _rows_per_day(warehouse: Path) -> dict[str, int]:
    dt = Catalog(str(warehouse)).get_table("db.orders").to_arrow(columns=["dt"])["dt"]
    return {c["values"]: c["counts"] for c in pc.value_counts(dt).to_pylist()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--rows", type=int, default=10_000, help="rows per day")
    p.add_argument("--per-day-sample", type=int, default=None,
                   help="run the per-day way for this many days only and scale to --days")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)
    start = date(2024, 1, 1)
    days = [(start + timedelta(days=i)).isoformat() for i in range(args.days)]
    sample = min(args.per_day_sample or args.days, args.days)
    launcher = SparkJobResource(launcher="python", master=args.master, conf=CONF)
    with tempfile.TemporaryDirectory(prefix="bench_backfill_") as tmp:
        base = Path(tmp)
        sources = _landing(base, days, args.rows)
        per_day_wh, one_app_wh = base / "per_day", base / "one_app"
        _table(per_day_wh)
        _table(one_app_wh)
        per_day_runs = [_run(launcher, ["--warehouse", str(per_day_wh), "--table", "db.orders", "--source",
                                        sources[d], "--format", "parquet", "--partition", f"dt={d}", "--overwrite"])
                        for d in days[:sample]]
        pairs = [a for d in days for a in ("--partition-source", f"dt={d}", sources[d])]
        one_app = _run(launcher, ["--warehouse", str(one_app_wh), "--table", "db.orders", "--format", "parquet",
                                  *pairs, "--overwrite"])
        one_app_rows = _rows_per_day(one_app_wh)
        if one_app_rows != dict.fromkeys(days, args.rows):
            raise SystemExit(f"one_app wrote {one_app_rows}")
        if _rows_per_day(per_day_wh) != dict.fromkeys(days[:sample], args.rows):
            raise SystemExit("per_day wrote other rows")
    per_day_total = sum(per_day_runs) / sample * args.days
    result = {
        "days": args.days, "rows_per_day": args.rows, "master": args.master,
        "per_day_runs_measured": sample, "per_day_mean_s": round(sum(per_day_runs) / sample, 1),
        "per_day_range_s": round(per_day_total, 1), "per_day_range_extrapolated": sample < args.days,
        "one_app_range_s": round(one_app, 1), "speedup": round(per_day_total / one_app, 1),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
