"""Deletion vectors: read and upsert cost, as ratios measured side by side in one run (issue 14).

* **read**: a deletion-vector table after compaction (a load plus upsert rounds, then a dedicated
  compaction; the vectors hide the replaced rows, files sit on several levels) read whole with
  ``Table.to_arrow()``, against pyarrow reading the same rows from one plain Parquet file.
  Target: lake_assets/pyarrow ≥ 0.8x in throughput.
* **upsert**: one upsert round (write + the inline compaction every writer runs) on a table with
  deletion vectors, against the same round on the same table without them. Target: ≤ 1.5x the time.

    .venv/bin/python bench/bench_dv.py --rows 1000000 --upsert-rows 100000 --repeat 3

``--merge-engine partial-update`` builds both tables as partial-update ones: the DV round then
merges each key's old row in (ops/dv_old_values.py), the plain round merges nothing.
``--engines deduplicate,partial-update,aggregation`` times the upsert rounds of each engine in
the same run (the first gives the top-level keys; every one is under ``engines``, with its
``upsert_cpu_ratio``); aggregation sums ``amount`` and keeps the largest ``qty``.

Prints one JSON line and a Markdown table for bench/RESULTS.md. The JSON carries every upsert
round's wall (``upsert_plain_ms``, ``upsert_dv_ms``) and the share of it during which some task
of the machine waited for a CPU (``upsert_*_stall``, Linux PSI): on a shared machine the rounds
near 0 are the ones whose walls compare code. ``--upsert-only`` skips the read section, for many
alternated runs of the upsert rounds alone.

``--key string`` / ``--key composite`` key both tables on string ids (17-35 characters, as user
ids and UUIDs) or on (int32 tenant, string order id) instead of an int64 id (session 17);
``--key int32+date`` on (int32 tenant, DATE day), a key of fixed-width parts (session 18).

``--partial-columns name,qty``: the partial-update tables' timed round writes partial
rows, the key and these value columns filled and the others null (each key's old value fills them
in the merge, so a DV round's level-0 file is written again, by splicing its changed columns:
`ops/compact/splice_rewrite.py`); without it every round writes whole rows (relabelled).

Each upsert round starts after ``os.sync()`` (since session 17; ``--no-sync`` leaves it out): the
build just wrote ~40 MB, and with it still dirty in the page cache the round's file creations and
its snapshot's fsync could wait on that writeback (an 80 ms fsync in one round at load 3), by
chance in a plain or a DV round. The sync runs for both tables, outside the timed call.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lake_assets import Catalog

VALUES = [("name", pa.string()), ("amount", pa.float64()), ("qty", pa.int32())]
# ``--key``: the primary key's columns (int64 as before session 17; string ids of 17-36 characters,
# as user ids and UUIDs are; a composite (tenant int32, order id string))
KEYS: dict[str, list[tuple[str, pa.DataType]]] = {
    "int64": [("id", pa.int64())],
    "string": [("id", pa.string())],
    "composite": [("tenant", pa.int32()), ("order_id", pa.string())],
    "int32+date": [("tenant", pa.int32()), ("day", pa.date32())],
}
KEY = "int64"  # set by main from --key


def schema() -> pa.Schema:
    return pa.schema([*KEYS[KEY], *VALUES])


def key_columns(ids: np.ndarray) -> dict[str, Any]:
    """The key columns of the rows numbered ``ids``: one distinct key per number."""
    if KEY == "int64":
        return {"id": ids}
    # a scrambled hex id (its order is not the numbers') with a tail of 0-19 characters
    hashed = (ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)).tolist()
    if KEY == "int32+date":  # fixed-width parts (session 18): a tenant's orders by day
        return {"tenant": (ids % 1000).astype(np.int32),
                "day": pa.array((ids // 1000).astype(np.int32)).cast(pa.date32())}
    if KEY == "string":
        return {"id": pa.array([f"u{h:016x}{'-x7' * (i % 7)}" for h, i in zip(hashed, ids.tolist(), strict=True)])}
    return {"tenant": (ids % 1000).astype(np.int32),
            "order_id": pa.array([f"o-{h:016x}"[: 12 + i % 7] + f"#{i // 1000}" for h, i in
                                  zip(hashed, ids.tolist(), strict=True)])}


def batch(ids: np.ndarray, round_: int) -> pa.Table:
    return pa.table({
        **key_columns(ids),
        "name": pa.array([f"n{round_}-{i % 1000}" for i in ids.tolist()]),
        "amount": ids.astype(np.float64) * 0.5 + round_,
        "qty": (ids % 100).astype(np.int32),
    }, schema=schema())


def partial(data: pa.Table, filled: list[str]) -> pa.Table:
    """``data`` with its value columns other than ``filled`` null (partial-update's partial rows)."""
    for name, dtype in VALUES:
        if name not in filled:
            data = data.set_column(data.schema.get_field_index(name), name, pa.nulls(data.num_rows, dtype))
    return data


def best_of(repeat: int, fn: Callable[[], Any], walls: list[float] | None = None) -> tuple[float, float, Any]:
    """Best wall and best CPU seconds (all threads) of ``repeat`` calls, and the last result: on a
    shared machine the CPU time is the steadier of the two. ``walls`` collects every call's wall time."""
    best, best_cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall = time.perf_counter() - t0
        best = min(best, wall)
        best_cpu = min(best_cpu, time.process_time() - c0)
        if walls is not None:
            walls.append(wall)
    return best, best_cpu, out


def cpu_stall_us() -> int | None:
    """Microseconds during which some task of the machine waited for a CPU (Linux PSI,
    ``/proc/pressure/cpu``, "some" total), None where the kernel has none. Its growth over a timed
    round tells a round that had the cores it wanted (≈ 0) from one that queued behind other
    processes: on a shared machine, the rounds whose walls compare code."""
    try:
        with open("/proc/pressure/cpu") as fh:
            first = fh.readline()
    except OSError:
        return None
    total = first.rsplit("total=", 1)[-1]
    return int(total) if first.startswith("some") and total.strip().isdigit() else None


def build(root: Path, rows: int, upsert_rows: int, rounds: int, buckets: int, dv: bool, seed: int,
          engine: str = "deduplicate") -> Any:
    """A table loaded with ``rows`` keys and ``rounds`` upsert rounds (each compacted inline)."""
    return build_on(Catalog(str(root)), rows, upsert_rows, rounds, buckets, dv, seed, engine)


def build_on(cat: Catalog, rows: int, upsert_rows: int, rounds: int, buckets: int, dv: bool, seed: int,
             engine: str = "deduplicate") -> Any:
    """`build` in catalog ``cat`` (an object store's, `bench_dv_splice_s3.py`)."""
    cat.create_database("db")
    options = {"bucket": str(buckets), "merge-engine": engine}
    if engine == "aggregation":
        options.update({"fields.amount.aggregate-function": "sum", "fields.qty.aggregate-function": "max"})
    if dv:
        options["deletion-vectors.enabled"] = "true"
    table = cat.create_table("db.t", schema(), primary_keys=[name for name, _ in KEYS[KEY]], options=options)
    table.write_arrow(batch(np.arange(rows, dtype=np.int64), 0))
    rng = np.random.default_rng(seed)
    for r in range(1, rounds + 1):
        table.write_arrow(batch(np.sort(rng.choice(rows, upsert_rows, replace=False)), r))
    return table


def profile_read(table: Any, repeat: int, top: int) -> None:
    """cProfile of ``repeat`` serial reads of ``table`` (what `to_arrow` does per split), to stderr."""
    import cProfile
    import pstats

    from lake_assets.ops.read import SplitReader

    splits = table.plan()
    profiler = cProfile.Profile()
    for _ in range(repeat):
        reader = SplitReader(table.store, table.schema)
        reader.file_threads = False
        profiler.enable()
        pa.concat_tables([part for split in splits for part in reader.read_split(split)])
        profiler.disable()
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--upsert-rows", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3, help="upsert rounds before the read is timed")
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--merge-engine", default="deduplicate", help="merge-engine of both tables (upsert section)")
    ap.add_argument("--engines", default=None,
                    help="comma-separated merge engines whose upsert rounds are all timed in this run "
                         "(overrides --merge-engine; the first gives the top-level keys)")
    ap.add_argument("--upsert-only", action="store_true",
                    help="time the upsert rounds only (no read section): for many alternated runs")
    ap.add_argument("--no-sync", action="store_true",
                    help="time each upsert round right after its table's build, the build's files still "
                         "dirty in the page cache (before session 17); by default os.sync() runs first, "
                         "for the plain and the DV table alike")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="print the N costliest functions (own time) of the timed reads, read serially "
                         "(split pool and pyarrow's threads off: cProfile sees one thread)")
    ap.add_argument("--key", choices=sorted(KEYS), default="int64",
                    help="the primary key: int64 id, string id (17-36 characters), composite (int32, string) "
                         "or int32+date")
    ap.add_argument("--partial-columns", default=None,
                    help="partial-update's timed round fills only these value columns (comma-separated), "
                         "the others null")
    args = ap.parse_args()
    global KEY
    KEY = args.key
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-dv-"))
    work.mkdir(parents=True, exist_ok=True)
    read: dict[str, Any] = {}
    try:
        if not args.upsert_only:
            read = timed_read(args, work)
        engines = args.engines.split(",") if args.engines else [args.merge_engine]
        sections = {engine: timed_upserts(args, work, engine) for engine in engines}
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    first = sections[engines[0]]
    result = {
        "rows": args.rows, "upsert_rows": args.upsert_rows, "rounds": args.rounds, "buckets": args.buckets,
        "merge_engine": engines[0], "key": args.key,
        **read,
        **first,
        "python": platform.python_version(), "pyarrow": pa.__version__,
    }
    if len(engines) > 1:
        result["engines"] = sections
    print(json.dumps(result))
    print()
    print("| measure | lake_assets s (cpu s) | peer s (cpu s) | ratio wall | ratio cpu | target | result (wall) |")
    print("|---|---:|---:|---:|---:|---|---|")
    if read:
        print(f"| full read, DV table after compaction vs pyarrow Parquet | {read['read_lake_s']:.3f} "
              f"({read['read_lake_cpu_s']:.3f}) | {read['read_pyarrow_s']:.3f} ({read['read_pyarrow_cpu_s']:.3f}) | "
              f"{read['read_ratio']:.2f}x | {read['read_cpu_ratio']:.2f}x | ≥ 0.8x | "
              f"{'PASS' if read['read_ratio'] >= 0.8 else 'MISS'} |")
    for engine, up in sections.items():
        print(f"| upsert round ({engine}), DV vs no DV | {up['upsert_dv_s']:.3f} ({up['upsert_dv_cpu_s']:.3f}) | "
              f"{up['upsert_plain_s']:.3f} ({up['upsert_plain_cpu_s']:.3f}) | {up['upsert_ratio']:.2f}x | "
              f"{up['upsert_cpu_ratio']:.2f}x | ≤ 1.5x | {'PASS' if up['upsert_ratio'] <= 1.5 else 'MISS'} |")


def timed_upserts(args: argparse.Namespace, work: Path, engine: str) -> dict[str, Any]:
    """The upsert section for one merge engine: one round on a DV table against the same round on
    a plain table, ``args.repeat`` times, interleaved; its part of the printed JSON."""
    times: dict[str, float] = {}
    cpus: dict[str, float] = {}
    upsert_walls: dict[str, list[float]] = {"plain": [], "dv": []}
    upsert_cpus: dict[str, list[float]] = {"plain": [], "dv": []}
    stalls: dict[str, list[float | None]] = {"plain": [], "dv": []}  # CPU-wait share of each round
    upsert_load_before = os.getloadavg()
    for i in range(args.repeat):
        for dv in (False, True):  # interleaved: both see the same machine load
            name = "dv" if dv else "plain"
            root = work / f"upsert-{engine}-{name}-{i}"
            table = build(root, args.rows, args.upsert_rows, 1, args.buckets, dv, 2, engine)
            if not args.no_sync:
                os.sync()  # the build's ~40 MB written back before the timed round (see --no-sync)
            ids = np.sort(np.random.default_rng(100 + i).choice(args.rows, args.upsert_rows, replace=False))
            data = batch(ids, 99)
            if engine == "partial-update" and args.partial_columns:
                data = partial(data, args.partial_columns.split(","))
            stall = cpu_stall_us()
            wall, cpu, _ = best_of(1, lambda t=table, d=data: t.write_arrow(d), upsert_walls[name])
            after = cpu_stall_us()
            stalls[name].append(None if stall is None or after is None else (after - stall) / 1e6 / wall)
            upsert_cpus[name].append(cpu)
            times[name] = min(times.get(name, float("inf")), wall)
            cpus[name] = min(cpus.get(name, float("inf")), cpu)
            shutil.rmtree(root, ignore_errors=True)
    upsert_load_after = os.getloadavg()
    return {
        "upsert_plain_s": round(times["plain"], 4), "upsert_dv_s": round(times["dv"], 4),
        "upsert_ratio": round(times["dv"] / times["plain"], 3),
        "upsert_cpu_ratio": round(cpus["dv"] / cpus["plain"], 3),
        # the CPU seconds behind the CPU ratio, the median rounds beside the best, and the load
        # average around the upsert rounds (a wall ratio means little when others were running)
        "upsert_plain_cpu_s": round(cpus["plain"], 4), "upsert_dv_cpu_s": round(cpus["dv"], 4),
        "upsert_median_ratio": round(
            statistics.median(upsert_walls["dv"]) / statistics.median(upsert_walls["plain"]), 3),
        "upsert_median_cpu_ratio": round(
            statistics.median(upsert_cpus["dv"]) / statistics.median(upsert_cpus["plain"]), 3),
        # every round's wall, in run order: the distribution (a single slow round decides a miss)
        "upsert_plain_ms": [round(w * 1e3, 2) for w in upsert_walls["plain"]],
        "upsert_dv_ms": [round(w * 1e3, 2) for w in upsert_walls["dv"]],
        "upsert_plain_cpu_ms": [round(c * 1e3, 2) for c in upsert_cpus["plain"]],
        "upsert_dv_cpu_ms": [round(c * 1e3, 2) for c in upsert_cpus["dv"]],
        # per round, the share of its wall during which some task waited for a CPU (`cpu_stall_us`)
        "upsert_plain_stall": [None if x is None else round(x, 3) for x in stalls["plain"]],
        "upsert_dv_stall": [None if x is None else round(x, 3) for x in stalls["dv"]],
        "upsert_load_average": [round(upsert_load_before[0], 2), round(upsert_load_after[0], 2)],
        "upsert_synced": not args.no_sync,
        "partial_columns": args.partial_columns if engine == "partial-update" else None,
    }


def timed_read(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The read section: a DV table after compaction read whole against pyarrow reading the same
    rows from one Parquet file (reads alternated); its part of the printed JSON."""
    dv_table = build(work / "read", args.rows, args.upsert_rows, args.rounds, args.buckets, True, 1)
    # a dedicated compaction as a maintenance job runs it: files whose vectors hide more than
    # compaction.delete-ratio-threshold (0.2) of their rows are rewritten without them
    dv_table.compact()
    files = [f for s in dv_table.plan() for f in s.files]
    levels = sorted({f.level for f in files})
    health = dv_table.health().to_pylist()
    deleted = sum(r["deletion_vector_rows"] for r in health)
    load_before = os.getloadavg()
    lake_walls: list[float] = []
    arrow_walls: list[float] = []
    # One untimed read of each (the process's first read of either costs 2-3x a warm one),
    # then the two reads alternated: both see the same load, where timing all of one and then
    # all of the other let a burst of other work land on one side only (session 11).
    got = dv_table.to_arrow()
    ref = work / "plain.parquet"
    pq.write_table(got, ref, compression="zstd")
    pq.read_table(ref)
    lake_s = lake_cpu = arrow_s = arrow_cpu = float("inf")
    for _ in range(args.repeat):
        wall, cpu, got = best_of(1, dv_table.to_arrow, lake_walls)
        lake_s, lake_cpu = min(lake_s, wall), min(lake_cpu, cpu)
        wall, cpu, ref_rows = best_of(1, lambda: pq.read_table(ref), arrow_walls)
        arrow_s, arrow_cpu = min(arrow_s, wall), min(arrow_cpu, cpu)
    load_after = os.getloadavg()
    if args.profile:
        profile_read(dv_table, args.repeat, args.profile)
    assert got.num_rows == ref_rows.num_rows == args.rows
    read_ratio = arrow_s / lake_s
    read_cpu_ratio = arrow_cpu / lake_cpu
    return {
        "files": len(files), "levels": levels, "deleted_rows": deleted,
        "read_lake_s": round(lake_s, 4), "read_pyarrow_s": round(arrow_s, 4), "read_ratio": round(read_ratio, 3),
        "read_cpu_ratio": round(read_cpu_ratio, 3),
        "read_lake_cpu_s": round(lake_cpu, 4), "read_pyarrow_cpu_s": round(arrow_cpu, 4),
        # the median of the timed reads beside the best, and the 1-minute load average around them
        # (2 shared cores: a wall ratio means little when others were running)
        "read_lake_median_s": round(statistics.median(lake_walls), 4),
        "read_pyarrow_median_s": round(statistics.median(arrow_walls), 4),
        "read_load_average": [round(load_before[0], 2), round(load_after[0], 2)],
        # each alternated pair's ratio (pyarrow's wall over ours): the spread the best hides
        "read_pair_ratios": [round(a / b, 3) for a, b in zip(arrow_walls, lake_walls, strict=True)],
    }


if __name__ == "__main__":
    main()
