"""In-process writes against their physical limit (issue 17 §1): load, upsert rounds, cross-read.

    PYTHONPATH=. .venv/bin/python bench/bench_write_limit.py [--rows 2000000] [--rounds 5] [--repeat 2]

Workload (issue 17): an int64 key and six value columns (one of them the partition column with 2
values), a primary-key table with 4 buckets per partition, ``write-only``; the initial load of
``--rows`` rows, then ``--rounds`` upsert rounds of 10% of the keys (new values for existing keys).

Peers, measured in the same run on the same rows:
- pyarrow: ``pq.write_table`` of the same rows (zstd level 1, the table's codec), the physical
  reference of the load and of a round (one file, no routing, no sort);
- delta-rs (when ``deltalake`` imports): ``write_deltalake`` for the load, one MERGE per round;
- the floor (`run_floor`): pyarrow writing the same rows in our files' 10 columns, sorted by key,
  with our Parquet options: encoding alone, and with the sort and gather unsorted input needs;
- Paimon Java 0.9 (``--java-rows N``, the repository's oracle JVM): writes the same rows into a
  table of the same layout, fully compacted, so its files can be cross-read next to ours.

Cross-read: both tables are fully compacted, then every data file of each is decoded by the same
readers (pyarrow ``read_table`` and polars ``read_parquet`` per file, lake_assets' own ``to_arrow``
of the table), best of ``2 * --repeat + 1``. Other times are best of
``--repeat``. ``--sorted`` hands every system its rows sorted by key. The wall clock and this
process's CPU time are both printed (the machine is shared:
the CPU time is the steadier figure). ``--profile STEP`` writes a cProfile of that step;
``--breakdown`` prints the load's and the upsert rounds' CPU per part of the write without a profiler
(`bench.cpu_breakdown`: cProfile inflates Python-heavy parts several times over).
"""

from __future__ import annotations

import argparse
import cProfile
import glob
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # run as `python bench/bench_write_limit.py` from a checkout

from bench.cpu_breakdown import cpu_by_part  # noqa: E402
from bench.tpch.machine import describe, versions  # noqa: E402
from lake_assets import Catalog  # noqa: E402

TABLE = "db.t"
KEY, PART = "id", "p"
BUCKETS = 4
SEED = 17


# ---------------------------------------------------------------------------------------- data
def _strings(rng: np.random.Generator, n: int, lo: int, hi: int) -> pa.Array:
    """``n`` random lowercase strings of ``lo``..``hi - 1`` chars: nearly all distinct."""
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    lengths = rng.integers(lo, hi, size=n)
    chars = alphabet[rng.integers(0, len(alphabet), size=int(lengths.sum()))]
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes()))


def make_rows(rng: np.random.Generator, ids: np.ndarray, version: int) -> pa.Table:
    """The key, the partition (2 values, derived from the key so a key never moves) and 5 more
    value columns: int64, float64, a high-cardinality string, timestamp[us], a 5-value string."""
    n = len(ids)
    codes = np.array(["new", "open", "paid", "sent", "done"], dtype=object)
    return pa.table({
        KEY: pa.array(ids, pa.int64()),
        PART: pa.array(np.where(ids % 2 == 0, "2024-01-01", "2024-01-02").astype(object), pa.string()),
        "qty": pa.array(rng.integers(0, 1_000_000, n) + version * 1_000_000, pa.int64()),
        "price": pa.array(rng.standard_normal(n)),
        "name": _strings(rng, n, 12, 21),
        "ts": pa.array(1_700_000_000_000_000 + rng.integers(0, 86_400_000_000 * 365, n), pa.timestamp("us")),
        "status": pa.array(codes[rng.integers(0, len(codes), n)], pa.string()),
    })


def make_workload(rows: int, rounds: int) -> tuple[pa.Table, list[pa.Table]]:
    rng = np.random.default_rng(SEED)
    ids = rng.permutation(rows).astype(np.int64) * 3 + 1_000_001
    base = make_rows(rng, ids, 0)
    ups = [make_rows(rng, rng.choice(ids, size=rows // 10, replace=False), r) for r in range(1, rounds + 1)]
    return base, ups


# ------------------------------------------------------------------------------------- timing
def timed(fn: Callable[[], Any], profile: str | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process, all threads) of one call."""
    prof = cProfile.Profile() if profile else None
    t0, c0 = time.perf_counter(), time.process_time()
    if prof is not None:
        prof.enable()
    fn()
    if prof is not None:
        prof.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if prof is not None and profile:
        prof.dump_stats(profile)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    return wall, cpu


class Results:
    """Best (wall, cpu) per (step, system) over the repeats."""

    def __init__(self) -> None:
        self.best: dict[tuple[str, str], tuple[float, float]] = {}
        self.serial: dict[str, float] = {}

    def add(self, step: str, system: str, wall: float, cpu: float) -> None:
        old = self.best.get((step, system))
        self.best[(step, system)] = (min(old[0], wall), min(old[1], cpu)) if old else (wall, cpu)

    def add_serial(self, step: str, cpu: float) -> None:
        """CPU seconds of lake_assets' calling thread in ``step`` (best of the repeats)."""
        self.serial[step] = min(self.serial.get(step, cpu), cpu)

    def serial_note(self, step: str, cores: int) -> str | None:
        """The calling thread's CPU (work no pool thread shares) and the wall time the step's CPU
        allows on ``cores`` idle cores: serial + (cpu - serial) / cores, a bound, not a measurement."""
        lake, base = self.best.get((step, "lake_assets")), self.best.get((step, "pyarrow"))
        if step not in self.serial or lake is None:
            return None
        serial = self.serial[step]
        bound = serial + max(0.0, lake[1] - serial) / cores
        # pyarrow's write is single-threaded: its CPU is its wall time on an idle core
        ratio = f" = {bound / base[1]:.2f}x pyarrow's CPU" if base else ""
        return (f"{step}: calling thread {serial:.3f} cpu of {lake[1]:.3f}; on {cores} idle cores "
                f"at best {bound:.3f} s{ratio}")

    def row(self, step: str, systems: list[str], ref: str) -> str:
        cells = []
        for s in systems:
            v = self.best.get((step, s))
            cells.append("—" if v is None else f"{v[0]:.3f} s ({v[1]:.3f} cpu)")
        lake, base = self.best.get((step, "lake_assets")), self.best.get((step, ref))
        ratio = f"{lake[0] / base[0]:.2f}x / {lake[1] / base[1]:.2f}x" if lake and base else "—"
        return f"| {step} | " + " | ".join(cells) + f" | {ratio} |"


# ---------------------------------------------------------------------------------- the steps
def lake_table(wh: str, extra: dict[str, str] | None = None) -> Any:
    cat = Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(TABLE, make_rows(np.random.default_rng(0), np.arange(1), 0).schema,
                            primary_keys=[KEY, PART], partition_keys=[PART],
                            options={"bucket": str(BUCKETS), "write-only": "true", **(extra or {})})


def run_lake(base: pa.Table, ups: list[pa.Table], res: Results, work: str, profile: str) -> str:
    wh = tempfile.mkdtemp(prefix="lake-", dir=work)
    t = lake_table(wh)

    def step(name: str, fn: Callable[[], Any], prof: str | None) -> None:
        # the calling thread's own CPU is the part of the step no pool thread runs: the serial part
        c0 = time.thread_time()
        wall, cpu = timed(fn, prof)
        res.add(name, "lake_assets", wall, cpu)
        res.add_serial(name, time.thread_time() - c0)

    step("load", lambda: t.write_arrow(base), _prof(profile, "load"))
    for i, u in enumerate(ups, 1):
        step("upsert round", lambda u=u: t.write_arrow(u), _prof(profile, f"upsert{i}"))
    return wh


def run_breakdown(base: pa.Table, ups: list[pa.Table], work: str) -> None:
    """The load's and the upsert rounds' CPU per part of the write (`cpu_by_part`: no profiler,
    pools inline), side by side."""
    t = lake_table(tempfile.mkdtemp(prefix="lake-parts-", dir=work))
    with cpu_by_part() as load:
        t.write_arrow(base)
    with cpu_by_part() as rounds:
        for u in ups:
            t.write_arrow(u)
    print("\nCPU by part (ms, pools inline, nested parts count in their callers too):")
    print("| part | load | upsert round |")
    print("|---|---:|---:|")
    for part, seconds in load.items():
        print(f"| {part} | {seconds * 1000:.1f} | {rounds[part] / len(ups) * 1000:.2f} |")


def _prof(profile: str, step: str) -> str | None:
    return f"/tmp/bench_write_limit-{step}.prof" if profile and step.startswith(profile) else None


def run_pyarrow(base: pa.Table, ups: list[pa.Table], res: Results, work: str) -> None:
    d = tempfile.mkdtemp(prefix="pyarrow-", dir=work)
    res.add("load", "pyarrow", *timed(lambda: pq.write_table(base, f"{d}/base.parquet", compression="zstd",
                                                             compression_level=1)))
    for i, u in enumerate(ups, 1):
        res.add("upsert round", "pyarrow", *timed(lambda u=u, i=i: pq.write_table(
            u, f"{d}/round{i}.parquet", compression="zstd", compression_level=1)))


def _file_layout(rows: pa.Table, order: np.ndarray | None) -> pa.Table:
    """``rows`` as our files hold them: sorted by ``order`` (None: as they are), the key copied
    to ``_KEY_id``, sequence numbers and all-insert ``_VALUE_KIND`` in front."""
    if order is not None:
        rows = rows.take(pa.array(order))
    n = rows.num_rows
    system = [rows.column(KEY), pa.array(np.arange(n, dtype=np.int64)), pa.array(np.zeros(n, np.int8))]
    return pa.Table.from_arrays([*system, *rows.columns], names=[f"_KEY_{KEY}", "_SEQUENCE_NUMBER", "_VALUE_KIND",
                                                               *rows.column_names])


def _floor_write(rows: pa.Table, path: str) -> None:
    # the options our Parquet files use (formats/data_file.py): zstd 1, 1 MiB pages, dictionaries
    # on the low-cardinality strings and _VALUE_KIND only
    pq.write_table(rows, path, compression="zstd", compression_level=1, data_page_size=1 << 20,
                   use_dictionary=["_VALUE_KIND", PART, "status"], write_statistics=True)


def run_floor(base: pa.Table, ups: list[pa.Table], res: Results, work: str) -> None:
    """The physical floor of our files with pyarrow alone, one thread: "floor encode" writes the
    rows already sorted by key with the 10 columns of our files (the encoding our files cost
    whatever the writer does); "floor sort+encode" also sorts the unsorted input and gathers
    every column (numpy argsort of the key, one take), which a writer of unsorted input must do."""
    d = tempfile.mkdtemp(prefix="floor-", dir=work)
    for step, rows in [("load", base), *(("upsert round", u) for u in ups)]:
        laid_out = _file_layout(rows, np.argsort(rows.column(KEY).to_numpy()))
        res.add(step, "floor encode", *timed(lambda laid_out=laid_out: _floor_write(laid_out, f"{d}/enc.parquet")))
        res.add(step, "floor sort+encode", *timed(lambda rows=rows: _floor_write(
            _file_layout(rows, np.argsort(rows.column(KEY).to_numpy())), f"{d}/sort.parquet")))
        res.add(step, "floor sort+gather", *timed(lambda rows=rows: _sort_and_gather(rows)))


def _sort_and_gather(rows: pa.Table) -> None:
    """The least a writer of unsorted input does besides encoding: per partition (its files'
    partition column is one constant), sort the keys and gather the other columns."""
    values = rows.drop_columns([PART])
    enc = pc.dictionary_encode(rows.column(PART)).combine_chunks()
    part = enc.indices.to_numpy()
    for v in range(len(enc.dictionary)):
        idx = np.flatnonzero(part == v)
        keys = rows.column(KEY).to_numpy()[idx]
        values.take(pa.array(idx[np.argsort(keys)]))


def run_delta(base: pa.Table, ups: list[pa.Table], res: Results, work: str) -> None:
    try:
        import deltalake
    except ImportError:
        print("delta-rs: deltalake is not importable, skipped", flush=True)
        return
    d = tempfile.mkdtemp(prefix="delta-", dir=work)
    res.add("load", "delta-rs", *timed(lambda: deltalake.write_deltalake(d, base, partition_by=[PART])))
    for u in ups:
        def merge(u: pa.Table = u) -> None:
            (deltalake.DeltaTable(d).merge(u, predicate="t.id = s.id AND t.p = s.p", source_alias="s",
                                           target_alias="t")
             .when_matched_update_all().when_not_matched_insert_all().execute())
        res.add("upsert round", "delta-rs", *timed(merge))


def run_java(base: pa.Table, res: Results, work: str, rows: int) -> str | None:
    """Paimon Java writes the first ``rows`` rows (full compaction after), in the oracle JVM."""
    try:
        from tests.java.build import ensure_built
        from tests.java.oracle import PaimonJava
    except ImportError as exc:
        print(f"Paimon Java: oracle not importable ({exc}), skipped", flush=True)
        return None
    wh = tempfile.mkdtemp(prefix="java-", dir=work)
    java = PaimonJava(ensure_built(), tempfile.mkdtemp(prefix="java-log-", dir=work))
    try:
        java.create_table(wh, TABLE, base.schema, primary_keys=[KEY, PART], partition_keys=[PART],
                          options={"bucket": str(BUCKETS), "write-only": "true"})
        data = base.slice(0, rows)
        t0 = time.perf_counter()
        for start in range(0, rows, 100_000):
            java.write(wh, TABLE, data.slice(start, 100_000))
        java.compact(wh, TABLE, full=True, options={"write-only": "false"})
        print(f"Paimon Java wrote and compacted {rows} rows in {time.perf_counter() - t0:.1f} s "
              "(JSON transport: not a timing)", flush=True)
    finally:
        java.close()
    return wh


def cross_read(res: Results, tables: dict[str, str], repeat: int) -> None:
    """Decode every data file of each (fully compacted) table with the same readers."""
    for label, wh in tables.items():
        t = Catalog(wh).get_table(TABLE)
        live = {f.file_name for split in t.plan() for f in split.files}
        files = [f for f in sorted(glob.glob(f"{wh}/db.db/t/*/bucket-*/data-*.parquet"))
                 if os.path.basename(f) in live]
        groups = sum(pq.ParquetFile(f).num_row_groups for f in files)
        print(f"{label}: {len(files)} live data files, {groups} row groups, "
              f"{sum(os.path.getsize(f) for f in files) / 2**20:.1f} MiB", flush=True)
        try:
            import polars as pl
        except ImportError:
            pl = None
        for _ in range(repeat):
            res.add(f"read {label} files: pyarrow", "reader",
                    *timed(lambda files=files: [pq.read_table(f) for f in files]))
            res.add(f"read {label} files: lake_assets", "reader", *timed(t.to_arrow))
            if pl is not None:
                res.add(f"read {label} files: polars", "reader",
                        *timed(lambda files=files, pl=pl: [pl.read_parquet(f) for f in files]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--systems", default="lake,pyarrow,delta,floor")
    ap.add_argument("--sorted", action="store_true",
                    help="hand every system its rows sorted by key (a sorted source; upserts of sorted keys)")
    ap.add_argument("--java-rows", type=int, default=0, help="cross-read against Paimon Java's files of N rows")
    ap.add_argument("--read", action="append", default=[], metavar="LABEL=WAREHOUSE",
                    help="also cross-read this warehouse's table (e.g. files an older lake_assets wrote)")
    ap.add_argument("--profile", default="", help="cProfile the lake_assets step starting with this (load, upsert)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also print the load's and the upsert rounds' CPU per part of the write, without a profiler")
    ap.add_argument("--work", default=None, help="scratch directory (default: a temp dir, removed after)")
    args = ap.parse_args(argv)
    systems = args.systems.split(",")
    work = args.work or tempfile.mkdtemp(prefix="bench-write-limit-")
    print(f"{describe()}; load average at start {os.getloadavg()}", flush=True)
    print({k: v for k, v in versions().items()}, flush=True)
    base, ups = make_workload(args.rows, args.rounds)
    if args.sorted:
        base, ups = base.sort_by(KEY), [u.sort_by(KEY) for u in ups]
    res = Results()
    try:
        for r in range(args.repeat):
            if "lake" in systems:
                run_lake(base, ups, res, work, args.profile if r == args.repeat - 1 else "")
            if "pyarrow" in systems:
                run_pyarrow(base, ups, res, work)
            if "floor" in systems:
                run_floor(base, ups, res, work)
            if "delta" in systems and r == 0:
                run_delta(base, ups, res, work)
        names = ["lake_assets", "pyarrow", "delta-rs", "floor encode", "floor sort+encode", "floor sort+gather"]
        print(f"\nload average at end {os.getloadavg()}")
        print("| step | " + " | ".join(names) + " | lake/pyarrow (wall / cpu) |")
        print("|---|" + "---:|" * (len(names) + 1))
        for step in ("load", "upsert round"):
            print(res.row(step, names, "pyarrow"))
        for step in ("load", "upsert round"):
            note = res.serial_note(step, os.cpu_count() or 1)
            if note:
                print(note)
        if args.breakdown and ups:
            run_breakdown(base, ups, work)
        readers = dict(r.split("=", 1) for r in args.read)
        if args.java_rows:
            java_wh = run_java(base, res, work, args.java_rows)
            if java_wh is not None:
                ours = tempfile.mkdtemp(prefix="lake-x-", dir=work)
                lake_table(ours).write_arrow(base.slice(0, args.java_rows))
                Catalog(ours).get_table(TABLE).compact(full=True)
                readers = {"lake_assets": ours, "Paimon Java": java_wh, **readers}
        if readers:
            cross_read(res, readers, 2 * args.repeat + 1)
            for (step, _), (w, c) in sorted(res.best.items()):
                if step.startswith("read"):
                    print(f"| {step} | {w:.3f} s | {c:.3f} cpu |")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
