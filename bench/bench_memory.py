"""Memory bounded by configuration at any size (issue 17 §2): load, upsert, streaming read and
compaction of a generated table at several sizes, with time per million rows and the peak RSS
of each step next to the configured bounds.

Each size runs in its own worker process (fresh warehouse, fresh allocator) so one size's peak
never hides in another's. Input rows are generated batch by batch inside the step, never held
whole. Peak memory per step is the kernel's high-water mark reset before the step
(`bench.tpch.measure.Meter`). The table is the issue's layout: an int64 key and six value columns,
2 partitions x 4 buckets, ``write-only`` (compaction is its own step), a spilling write buffer.

``--table first-row`` (``merge-engine = first-row``) and ``--table lookup-changelog``
(``changelog-producer = lookup``) measure the compactions that look older levels up: after the
load and a full compaction (the bucket at the top level), the upsert's level 0 is compacted
(``compact-level0``), which drops the keys already present (first-row) or produces the -U/+U
changelog of the upserted keys (lookup). Example::

    .venv/bin/python bench/bench_memory.py --rows 1000000,16000000 --out bench/out/memory
    .venv/bin/python bench/bench_memory.py --table first-row --rows 1000000,4000000 --out bench/out/memory-fr

``--many-runs N`` (round 6, issue 17 §2: compaction's fan-in) loads the rows in N commits that
each cover the whole key range instead of one load, so each bucket holds N overlapping level-0
runs, and measures the full compaction that merges them; ``--fan-in`` lists the
``sort-spill-threshold`` values to run it with, each size and value in its own process
(``unset``: the default, num-sorted-run.stop-trigger + 1). Example::

    .venv/bin/python bench/bench_memory.py --many-runs 200 --fan-in 1000000,unset --rows 4000000,16000000

``--option KEY=VALUE`` adds table options (round 7, issue 17 §2: column chunks). With
``compaction.merge-rows`` at least the rows of a bucket, the full compaction writes each bucket as
one file of few row groups, as Java's writer does (one row group per file up to
``parquet.block.size``); the read after it then shows what a batched read holds of a large row
group, with ``read.parquet.buffer-size`` (default) or without it (``=0``). Example::

    .venv/bin/python bench/bench_memory.py --rows 16000000 --option compaction.merge-rows=4194304 \
        --option read.parquet.buffer-size=0

Each step also reports the Arrow pool's exact peak (round 8: ``pa.default_memory_pool().max_memory()``,
known when the step raises the process's high-water mark, which a compaction after the load does)
beside the peak sampled every millisecond, which misses short allocations such as a sort's output.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.memory_bounds import bounds, compaction_bound
from bench.memory_tables import (
    OPTIONS,
    SCHEMA,
    TABLES,
    UPSERT_FRACTION,
    batch,
    load_batches,
    upsert_batches,
    write_batches,
)
from bench.tpch.measure import Meter
from lake_assets import Catalog
from lake_assets.ops import spill
from lake_assets.ops.compact import rewrite as compact_rewrite
from lake_assets.ops.streaming_read import DEFAULT_BATCH_ROWS, DEFAULT_READ_AHEAD
from lake_assets.option_rules import RULES
from lake_assets.options import CoreOptions


class ArrowPeak:
    """Samples the bytes Arrow's memory pool holds (live Arrow data, without the allocator's
    retained pages that RSS also counts) every millisecond in a background thread."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, pa.total_allocated_bytes())
            self._stop.wait(0.001)

    def __enter__(self) -> ArrowPeak:
        self.peak = pa.total_allocated_bytes()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def step(meter: Meter, name: str, rows: int = 0) -> Iterator[dict[str, object]]:
    """`Meter.step` plus the sampled peak of Arrow's pool above its start, in MiB, and the
    process's CPU seconds (all threads): on a machine shared with other jobs wall time per row
    follows their load, CPU time much less so."""
    pool = pa.default_memory_pool()
    with meter.step(name, rows) as extra, ArrowPeak() as arrow:
        start = pa.total_allocated_bytes()
        process_max = pool.max_memory()
        cpu = time.process_time()
        yield extra
        extra["cpu_s"] = round(time.process_time() - cpu, 2)
        extra["arrow_peak_above_start_mib"] = round((arrow.peak - start) / 2**20, 1)
        # the pool's own high-water mark (round 8): exact, unlike the sampled peak, which misses
        # short allocations (a sort's output); known only when this step raised the process's max
        if pool.max_memory() > process_max:
            extra["arrow_exact_peak_above_start_mib"] = round((pool.max_memory() - start) / 2**20, 1)


@contextmanager
def collected_spills() -> Iterator[list[spill.SpillDirectory]]:
    """The spill directories of the compaction's units (`ops.compact.fan_in`), collected while
    the block runs (`spill_counts` sums what they spilled)."""
    made: list[spill.SpillDirectory] = []
    original = compact_rewrite.spill_directory  # type: ignore[attr-defined]

    def collecting(options: CoreOptions, spill_dir: str | None = None) -> spill.SpillDirectory:
        directory = original(options, spill_dir)
        made.append(directory)
        return directory

    compact_rewrite.spill_directory = collecting  # type: ignore[attr-defined]
    try:
        yield made
    finally:
        compact_rewrite.spill_directory = original  # type: ignore[attr-defined]


def spill_counts(made: list[spill.SpillDirectory]) -> dict[str, object]:
    """Runs and rows the units spilled, their merges and the largest fan-in of those merges."""
    return {"spill_runs": sum(d.stats.runs for d in made), "spilled_rows": sum(d.stats.rows for d in made),
            "spill_merges": sum(d.stats.merges for d in made),
            "spill_max_fan_in": max((d.stats.max_fan_in for d in made), default=0)}


def run_many_runs(rows: int, table, meter: Meter, rounds: int, batch_rows: int, read_ahead: int) -> None:
    """``rounds`` commits of ``rows / rounds`` keys drawn from the whole key range (so every
    bucket gets ``rounds`` overlapping level-0 runs), then the full compaction that merges them."""
    rng = np.random.default_rng(3)
    per_round = rows // rounds
    with step(meter, f"load {rounds} commits@{rows}", rows) as x:
        written = 0
        for r in range(rounds):
            keys = np.unique(rng.integers(0, rows, per_round))  # a key at most once per commit
            written += write_batches(table, iter([batch(rng, keys, r)]), f"round-{r}")
        x["rows"] = written
    bound = compaction_bound(table, True)
    with step(meter, f"compact {rounds} runs@{rows}", written) as x, collected_spills() as made:
        table.compact(full=True)
        x.update(bound)
        x.update(spill_counts(made))
    n = sum(b.num_rows for b in table.to_batches(batch_size=batch_rows, read_ahead=read_ahead))
    if n > written or n == 0:
        raise SystemExit(f"read {n} rows after compaction, wrote {written}")


def run_size(
    rows: int, warehouse: Path, out: Path, batch_rows: int, read_ahead: int, kind: str = "deduplicate",
    load_only: bool = False, write_buffer: str = OPTIONS["write-buffer-size"], many_runs: int = 0,
    fan_in: str = "unset", extra_options: dict[str, str] | None = None,
) -> None:
    """All steps at one size (only the load with ``load_only``), in this process; with
    ``many_runs``, the many-runs compaction with ``sort-spill-threshold`` ``fan_in`` instead."""
    meter = Meter("lake_assets", out)
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    # the read bounds as table options (they also bound changelog production's reads); checked
    # against the registry so the script still measures commits from before these options
    read_options = ({"read.batch-size": str(batch_rows), "read.read-ahead": str(read_ahead)}
                    if "read.read-ahead" in RULES else {})
    fan_in_options = {} if fan_in == "unset" else {"sort-spill-threshold": fan_in}
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "part"], partition_keys=["part"],
                                 options={**OPTIONS, "write-buffer-size": write_buffer, **TABLES[kind],
                                          **read_options, **fan_in_options, **(extra_options or {})})
    if many_runs:
        run_many_runs(rows, table, meter, many_runs, batch_rows, read_ahead)
        return
    with step(meter, f"load@{rows}", rows) as x:
        x["rows"] = write_batches(table, load_batches(rows, 1), "load", x)
    if load_only:
        return
    if kind != "deduplicate":
        # the bucket at the top level, then the upsert's level 0 compacted against it
        bound = compaction_bound(table, True)
        with step(meter, f"compact@{rows}", rows) as x:
            table.compact(full=True)
            x.update(bound)
        with step(meter, f"upsert@{rows}", int(rows * UPSERT_FRACTION)) as x:
            x["rows"] = write_batches(table, upsert_batches(rows, 2), "upsert", x)
        bound = compaction_bound(table, False)
        with step(meter, f"compact-level0@{rows}", int(rows * UPSERT_FRACTION)) as x:
            table.compact()
            x.update(bound)
            x["rows"] = int(rows * UPSERT_FRACTION)
        with step(meter, f"read-stream@{rows}") as x:
            n = sum(b.num_rows for b in table.to_batches(batch_size=batch_rows, read_ahead=read_ahead))
            x["rows"] = n
        if n != rows:
            raise SystemExit(f"read {n} rows, expected {rows}")
        return
    with step(meter, f"upsert@{rows}", int(rows * UPSERT_FRACTION)) as x:
        x["rows"] = write_batches(table, upsert_batches(rows, 2), "upsert", x)
    for phase in ("before-compaction", "after-compaction"):
        if phase == "after-compaction":
            bound = compaction_bound(table, True)
            with step(meter, f"compact@{rows}", rows) as x:
                table.compact(full=True)
                x.update(bound)
        with step(meter, f"read-stream {phase}@{rows}") as x:
            n = 0
            largest = 0
            for b in table.to_batches(batch_size=batch_rows, read_ahead=read_ahead):
                n += b.num_rows
                largest = max(largest, b.num_rows)
            x["rows"] = n
            x["largest_batch"] = largest
        if n != rows:
            raise SystemExit(f"read {n} rows, expected {rows}")


def _options(pairs: list[str]) -> dict[str, str]:
    """``--option KEY=VALUE`` pairs as table options."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--option {pair!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="1000000,16000000", help="comma-separated sizes")
    p.add_argument("--out", type=Path, default=Path("bench/out/memory"))
    p.add_argument("--batch-rows", type=int, default=DEFAULT_BATCH_ROWS)
    p.add_argument("--read-ahead", type=int, default=DEFAULT_READ_AHEAD)
    p.add_argument("--table", choices=sorted(TABLES), default="deduplicate", help="which table to measure")
    p.add_argument("--write-buffer-size", default=OPTIONS["write-buffer-size"],
                   help="a smaller buffer gives a smaller table the spilled runs per bucket of a larger one")
    p.add_argument("--load-only", action="store_true", help="measure the load step only")
    p.add_argument("--many-runs", type=int, default=0,
                   help="load in this many commits over the whole key range, then measure the full compaction")
    p.add_argument("--fan-in", default="unset",
                   help="with --many-runs: comma-separated sort-spill-threshold values, 'unset' for the default")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a table option over the bench's own (repeatable), e.g. read.parquet.buffer-size=0")
    p.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # one size, in this process
    p.add_argument("--warehouse", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    if a.worker is not None:
        run_size(a.worker, a.warehouse, a.out / f"size-{a.worker}-{a.fan_in}.json", a.batch_rows, a.read_ahead,
                 a.table, a.load_only, a.write_buffer_size, a.many_runs, a.fan_in, _options(a.option))
        return 0
    sizes = [int(s) for s in a.rows.split(",")]
    fan_ins = a.fan_in.split(",") if a.many_runs else ["unset"]
    results = []
    for rows in sizes:
        for fan_in in fan_ins:
            wh = Path(tempfile.mkdtemp(prefix="bench-memory-"))
            result = a.out / f"size-{rows}-{fan_in}.json"
            result.unlink(missing_ok=True)
            try:
                load_before = os.getloadavg()[0]
                subprocess.run([sys.executable, __file__, "--worker", str(rows), "--warehouse", str(wh),
                                "--out", str(a.out), "--batch-rows", str(a.batch_rows),
                                "--read-ahead", str(a.read_ahead), "--table", a.table,
                                "--write-buffer-size", a.write_buffer_size, "--many-runs", str(a.many_runs),
                                "--fan-in", fan_in, *(["--load-only"] if a.load_only else []),
                                *(f"--option={o}" for o in a.option)],
                               check=True)
                data = json.loads(result.read_text())
                results.append((rows, load_before, os.getloadavg()[0], data["steps"]))
            finally:
                shutil.rmtree(wh, ignore_errors=True)
    print("table:", a.table, json.dumps({**TABLES[a.table], **_options(a.option)}))
    print("bounds:", json.dumps(bounds(a.batch_rows, a.read_ahead, a.write_buffer_size)))
    print(f"allocator: {pa.default_memory_pool().backend_name}")
    print("| step | rows | s per M rows | CPU s per M rows | peak RSS above start (MiB) "
          "| Arrow pool peak above start (MiB; sampled, exact) | configured bound (MiB; rows) "
          "| spilled runs; rows spilled per row; largest merge fan-in | load avg (start/end) |")
    print("|---|---:|---:|---:|---:|---:|---|---|---|")
    for _rows, l0, l1, steps in results:
        for s in steps:
            per_m = s["seconds"] / max(1, s["rows"]) * 1e6
            cpu = s["extra"].get("cpu_s")
            cpu_per_m = "" if cpu is None else f"{cpu / max(1, s['rows']) * 1e6:.2f}"
            above = max(0.0, s["peak_rss_mib"] - s["start_rss_mib"])
            arrow = s["extra"].get("arrow_peak_above_start_mib", "")
            exact = s["extra"].get("arrow_exact_peak_above_start_mib")
            arrow = arrow if exact is None else f"{arrow} (exact {exact})"
            runs = s["extra"].get("spill_runs")
            spilled = "" if runs is None else (f"{runs}; {s['extra']['spilled_rows'] / max(1, s['rows']):.2f}; "
                                               f"{s['extra']['spill_max_fan_in']}")
            bound = s["extra"].get("bound_mib")
            threshold = s["extra"].get("sort_spill_threshold")
            readers = s["extra"].get("reader_bound_mib")
            readers_txt = "" if readers is None else f"; of which Parquet readers {readers} MiB"
            bound_txt = "" if bound is None else (
                f"{bound} ({s['extra']['compaction_units_at_once']} units x {s['extra']['compaction_runs_per_unit']} "
                f"runs{'' if threshold is None else f', sort-spill-threshold {threshold}'}; "
                f"{s['extra']['compaction_bound_rows']:,} rows{readers_txt}"
                f"{'; merge only, not changelog production' if s['extra'].get('bound_excludes_changelog') else ''})")
            print(f"| {s['step']} | {s['rows']:,} | {per_m:.2f} | {cpu_per_m} | {above:.0f} | {arrow} "
                  f"| {bound_txt} | {spilled} | {l0:.1f}/{l1:.1f} |")
    (a.out / "summary.json").write_text(json.dumps({"bounds": bounds(a.batch_rows, a.read_ahead, a.write_buffer_size),
                                                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                                    "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
