"""Maintenance benchmark: PK compaction throughput and snapshot-expiration scaling.

    .venv/bin/python bench/bench_maintenance.py [--rows 200000] [--runs 5] [--snapshots 1000]
        [--files 20000] [--expire 1000] [--repeat 5] [--expire-repeat 2] [--out bench/out] [--profile]

1. **Compaction.** A primary-key table (``bucket = 1``, ``write-only``) gets ``--runs`` level-0 runs of
   ``--rows`` rows each; every run writes distinct keys drawn at random from a key space of
   ``2.5 * --rows`` keys, so later runs update earlier keys. ``t.compact(full=True)`` (and, on a
   fresh copy of the same setup, ``t.compact()``, universal) is timed against the physical limit run
   side by side in this process: plain pyarrow reading the table's own data files, sorting by key and
   ``_SEQUENCE_NUMBER``, keeping the last row per key and writing one zstd Parquet file. The merged
   table must equal the last value per key computed independently (exit status 1 otherwise).
2. **Expiration.** Tables of ``--snapshots + 1`` snapshots, each adding ``--files / --snapshots`` data
   files (one per bucket, from a ``write-only`` two-phase writer) with a full compaction every
   ``--compact-every`` commits, so expired snapshots reference files to delete. The oldest
   ``--expire`` snapshots are expired: in the base table, in the base table with twice the history
   (built by copying it before expiring and committing as many snapshots again: the expired window
   is the same) and in a table with twice the files per snapshot. After each expiry the latest
   snapshot must read the expected rows and every file of every retained snapshot must exist. Each
   timed expiry runs on a fresh copy of its table (synced to disk first), best of ``--expire-repeat``.

Ratios are against peers measured in the same run. A wrong result exits with status 1; a missed target
does not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # run as `python bench/bench_maintenance.py` from a checkout

from bench.maintenance_common import KEY, SEED, random_strings, timed  # noqa: E402
from bench.maintenance_expiration import bench_expiration  # noqa: E402
from bench.profile_hotspots import Hotspot, profiled  # noqa: E402
from bench.tpch.machine import git_state, host  # noqa: E402
from lake_assets import Catalog  # noqa: E402
from lake_assets.table import Table  # noqa: E402

FILE_KEY = "_KEY_id"
SEQUENCE = "_SEQUENCE_NUMBER"
ZSTD_LEVEL = 1  # the table default (`file.compression.zstd-level`), used by the reference too

COMPACTION_TARGET = 0.6  # lake_assets rows/s over the pyarrow reference's
HISTORY_TARGET = 1.25  # expiry seconds with 2x the history over the base: "about the same"
FILES_BOUND = 2.5  # expiry seconds with 2x the files per snapshot over the base: at most linear


# ---------------------------------------------------------------------------------------- data
def make_runs(rows: int, runs: int, seed: int = SEED) -> list[pa.Table]:
    """``runs`` tables of ``rows`` distinct keys each, drawn from a space of ``2.5 * rows`` keys."""
    rng = np.random.default_rng(seed)
    key_space = int(rows * 2.5)
    out = []
    for r in range(runs):
        ids = rng.choice(key_space, size=rows, replace=False).astype(np.int64) * 7 + 1_000_003
        out.append(pa.table({
            KEY: pa.array(ids, pa.int64()),
            "version": pa.array(np.full(rows, r, dtype=np.int64) * 1_000_000 + rng.integers(0, 1_000_000, rows)),
            "score": pa.array(rng.standard_normal(rows)),
            "name": random_strings(rng, rows),
            "event_time": pa.array(1_700_000_000_000_000 + rng.integers(0, 86_400_000_000 * 365, rows),
                                   pa.timestamp("us")),
        }))
    return out


def last_per_key(runs: list[pa.Table]) -> pa.Table:
    """The state after writing ``runs`` in order (last write wins), sorted by key; numpy only."""
    data = pa.concat_tables(runs).combine_chunks()
    ids = data.column(KEY).to_numpy()
    rev = ids[::-1]
    _, first_in_rev = np.unique(rev, return_index=True)  # sorted by key
    return data.take(pa.array(len(ids) - 1 - first_in_rev))


def update_share(runs: list[pa.Table]) -> float:
    """Share of the rows of runs 2.. that rewrite a key an earlier run wrote."""
    seen = runs[0].column(KEY).to_numpy()
    updates = total = 0
    for run in runs[1:]:
        ids = run.column(KEY).to_numpy()
        updates += int(np.isin(ids, seen).sum())
        total += len(ids)
        seen = np.union1d(seen, ids)
    return updates / total if total else 0.0


def same_rows(result: pa.Table, expected: pa.Table) -> str | None:
    """None when ``result`` holds exactly ``expected`` (sorted by key), else what differs."""
    if result.num_rows != expected.num_rows:
        return f"{result.num_rows} rows, expected {expected.num_rows}"
    got = result.select(expected.column_names).cast(expected.schema).sort_by(KEY)
    for name in expected.column_names:
        if not got.column(name).equals(expected.column(name)):
            diff = pc.not_equal(got.column(name), expected.column(name)).to_numpy(zero_copy_only=False)
            return f"column {name!r} differs in {int(np.count_nonzero(diff))} rows"
    return None


# ---------------------------------------------------------------------------------- compaction
def build_runs_table(warehouse: str, runs: list[pa.Table]) -> tuple[Table, list[str]]:
    """A PK table holding ``runs`` as level-0 files, and the paths of those files."""
    catalog = Catalog(warehouse)
    catalog.create_database("bench")
    table = catalog.create_table("bench.compact", runs[0].schema, primary_keys=[KEY],
                                 options={"bucket": "1", "write-only": "true"})
    for run in runs:
        table.write_arrow(run)
    paths = [table.store.data_file_path(sp.partition, sp.bucket, f) for sp in table.plan() for f in sp.files]
    if len(paths) != len(runs):
        raise SystemExit(f"expected {len(runs)} level-0 files, the table has {len(paths)}")
    return catalog.get_table("bench.compact"), paths


def reference_compact(paths: list[str], out_path: str) -> pa.Table:
    """Plain pyarrow: read, concatenate, sort by key + sequence, keep the last row per key, write zstd."""
    data = pa.concat_tables([pq.read_table(p) for p in paths])
    order = pc.sort_indices(data, sort_keys=[(FILE_KEY, "ascending"), (SEQUENCE, "ascending")]).to_numpy()
    keys = data.column(FILE_KEY).to_numpy()[order]
    last = np.empty(len(keys), dtype=bool)
    last[-1] = True
    np.not_equal(keys[1:], keys[:-1], out=last[:-1])
    merged = data.take(pa.array(order[last]))
    pq.write_table(merged, out_path, compression="zstd", compression_level=ZSTD_LEVEL)
    return merged


@dataclass
class CompactionRun:
    """One timed compaction and its side-by-side reference."""

    mode: str
    lake_s: float
    reference_s: float
    rows_in: int
    rows_out: int
    files_in: int
    files_out: int
    bytes_in: int
    bytes_out: int
    reference_bytes_out: int
    output_levels: list[int]


def compaction_once(mode: str, runs: list[pa.Table], expected: pa.Table, workdir: Path, lake_first: bool,
                    errors: list[str]) -> CompactionRun:
    """Build the runs table, time the reference and ``t.compact`` on it (order per ``lake_first``)."""
    with tempfile.TemporaryDirectory(prefix="maint-compact-", dir=workdir) as wh:
        table, paths = build_runs_table(wh, runs)
        ref_path = f"{wh}/reference.parquet"

        def lake() -> Any:
            return table.compact(full=(mode == "full"))

        def ref() -> pa.Table:
            return reference_compact(paths, ref_path)

        if lake_first:
            result, lake_s = timed(lake)
            ref_out, ref_s = timed(ref)
        else:
            ref_out, ref_s = timed(ref)
            result, lake_s = timed(lake)
        if (err := same_rows(table.to_arrow(), expected)) is not None:
            errors.append(f"lake_assets {mode} compaction: {err}")
        ref_values = ref_out.select(expected.column_names)
        if (err := same_rows(ref_values, expected)) is not None:
            errors.append(f"reference compaction: {err}")
        levels = sorted({f.level for sp in table.plan() for f in sp.files})
        return CompactionRun(mode, lake_s, ref_s, result.rows_in, result.rows_out, result.files_in,
                             result.files_out, result.bytes_in, result.bytes_out, os.path.getsize(ref_path), levels)


def bench_compaction(args: argparse.Namespace, workdir: Path, errors: list[str]) -> dict[str, Any]:
    """Best-of-``--repeat`` full and universal compaction against the pyarrow reference."""
    runs = make_runs(args.rows, args.runs)
    expected = last_per_key(runs)
    results: dict[str, list[CompactionRun]] = {"full": [], "universal": []}
    for i in range(args.repeat):
        for mode in results:
            run = compaction_once(mode, runs, expected, workdir, lake_first=i % 2 == 1, errors=errors)
            results[mode].append(run)
            print(f"  compaction {mode} #{i + 1}: lake {run.lake_s:.3f} s, reference {run.reference_s:.3f} s",
                  flush=True)
    input_rows = args.rows * args.runs
    out: dict[str, Any] = {"input_rows": input_rows, "runs": args.runs, "rows_per_run": args.rows,
                           "key_space": int(args.rows * 2.5), "expected_rows": expected.num_rows,
                           "update_share": round(update_share(runs), 3), "modes": {}}
    for mode, rs in results.items():
        lake_best = min(r.lake_s for r in rs)
        ref_best = min(r.reference_s for r in rs)
        lake_rate = rs[0].rows_in / lake_best
        ref_rate = input_rows / ref_best
        out["modes"][mode] = {
            "lake_best_s": round(lake_best, 3), "reference_best_s": round(ref_best, 3),
            "lake_rows_per_s": round(lake_rate), "reference_rows_per_s": round(ref_rate),
            "ratio": round(lake_rate / ref_rate, 3),
            "lake_s": [round(r.lake_s, 3) for r in rs], "reference_s": [round(r.reference_s, 3) for r in rs],
            "last": asdict(rs[-1]),
        }
    return out


def profile_compaction(args: argparse.Namespace, workdir: Path, out_dir: Path) -> list[Hotspot]:
    """Hotspots of one full compaction of the benchmark's runs."""
    with tempfile.TemporaryDirectory(prefix="maint-prof-", dir=workdir) as wh:
        table, _ = build_runs_table(wh, make_runs(args.rows, args.runs))
        return profiled(lambda: table.compact(full=True), out_dir / "maintenance_compact.prof")


# ------------------------------------------------------------------------------------- report
def machine() -> dict[str, str]:
    """CPU count, RAM, CPU model, kernel and versions."""
    return {**host(), "python": platform.python_version(), "pyarrow": pa.__version__, "numpy": np.__version__,
            "lake_assets": f"{metadata.version('lake_assets')} at {git_state()}"}


def targets(comp: dict[str, Any], exp: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target with its measured value and PASS/MISS."""
    full = comp["modes"]["full"]["ratio"]
    by = {r["scenario"]: r for r in exp}

    def vs_base(scenario: str, key: str) -> float:
        return by[scenario][key] / by["base"][key]

    hist = vs_base("2x history", "best_expire_s")
    hist_plan = vs_base("2x history", "best_dry_run_s")
    wide = vs_base("2x files per snapshot", "best_expire_s")
    return [
        {"target": f"full compaction: lake_assets/pyarrow ≥ {COMPACTION_TARGET}x", "value": f"{full:.2f}x",
         "pass": full >= COMPACTION_TARGET},
        {"target": f"expire with 2x history / base ≤ {HISTORY_TARGET}x (same expired window)",
         "value": f"{hist:.2f}x", "pass": hist <= HISTORY_TARGET},
        {"target": f"the same, plan only (dry run, no deletes) ≤ {HISTORY_TARGET}x",
         "value": f"{hist_plan:.2f}x", "pass": hist_plan <= HISTORY_TARGET},
        {"target": f"expire with 2x files / base ≤ {FILES_BOUND}x (grows with what is expired, at most linearly)",
         "value": f"{wide:.2f}x", "pass": wide <= FILES_BOUND},
    ]


def render(info: dict[str, str], command: str, comp: dict[str, Any], exp: list[dict[str, Any]],
           checks: list[dict[str, Any]], errors: list[str]) -> str:
    """The markdown report."""
    lines = [
        f"Machine: {info['nproc']} CPUs, {info['cpu']}, {info['ram']} RAM, {info['os']}; Python {info['python']}, "
        f"pyarrow {info['pyarrow']}, numpy {info['numpy']}; lake_assets {info['lake_assets']}. "
        f"Load average at start / end: {info['load_average_start']} / {info['load_average_end']}.",
        "",
        f"Command: `{command}`",
        "",
        f"Compaction input: {comp['runs']} level-0 runs x {comp['rows_per_run']:,} rows (distinct keys per run from "
        f"a {comp['key_space']:,}-key space; {comp['update_share']:.0%} of the rows of runs 2+ update an earlier "
        f"key) → {comp['expected_rows']:,} rows after the merge. Best of the repeats; rows/s count input rows.",
        "",
        "| compaction | input rows | files in → out | lake_assets s | lake_assets rows/s | pyarrow ref s "
        "| pyarrow rows/s | lake/pyarrow |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for mode, m in comp["modes"].items():
        last = m["last"]
        lines.append(
            f"| {mode} | {last['rows_in']:,} | {last['files_in']} → {last['files_out']} (level "
            f"{','.join(map(str, last['output_levels']))}) | {m['lake_best_s']:.3f} | {m['lake_rows_per_s']:,} "
            f"| {m['reference_best_s']:.3f} | {m['reference_rows_per_s']:,} | {m['ratio']:.2f}x |"
        )
    lines += [
        "",
        f"Expiration: the oldest {exp[0]['expired_snapshots']:,} snapshots (`limit`, `retain_min=1`, `older_than` "
        "tomorrow); every snapshot adds one file per bucket, a full compaction every few commits deletes them. "
        "Best of the repeats, each on a fresh copy of the table; the dry run is the plan without deletes.",
        "",
        "| expiration scenario | buckets | snapshots before → after | data files written | build s "
        "| expired | data files deleted | manifests deleted | dry run s | expire s | vs base |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base_s = exp[0]["best_expire_s"]
    for r in exp:
        lines.append(
            f"| {r['scenario']} | {r['buckets']} | {r['snapshots_before']:,} → {r['snapshots_after']:,} "
            f"| {r['data_files_written']:,} | {r['build_s']:.1f} | {r['expired_snapshots']:,} "
            f"| {r['deleted_data_files']:,} | {r['deleted_manifests']:,} | {r['best_dry_run_s']:.3f} "
            f"| {r['best_expire_s']:.3f} | {r['best_expire_s'] / base_s:.2f}x |"
        )
    lines += ["", "| target | measured | result |", "|---|---:|---|"]
    lines += [f"| {c['target']} | {c['value']} | {'PASS' if c['pass'] else 'MISS'} |" for c in checks]
    lines += ["", "Correctness: " + ("all checks passed." if not errors else "; ".join(errors))]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows per level-0 run")
    parser.add_argument("--runs", type=int, default=5, help="level-0 runs to compact")
    parser.add_argument("--repeat", type=int, default=5, help="compaction repeats (best of)")
    parser.add_argument("--snapshots", type=int, default=1000, help="snapshots of the base expiration table")
    parser.add_argument("--files", type=int, default=20_000, help="data files the base table's snapshots add")
    parser.add_argument("--expire", type=int, default=1000, help="snapshots to expire (the limit)")
    parser.add_argument("--expire-repeat", type=int, default=2, help="expiry repeats on fresh copies (best of)")
    parser.add_argument("--compact-every", type=int, default=10, help="commits between full compactions")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "out")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--profile", action="store_true", help="cProfile a compaction and an expiry")
    parser.add_argument("--skip-expire", action="store_true", help="compaction only")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    command = ".venv/bin/python bench/bench_maintenance.py " + " ".join(sys.argv[1:] if argv is None else argv)
    errors: list[str] = []
    started = time.perf_counter()
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="bench-maint-", dir=args.workdir) as tmp:
        workdir = Path(tmp)
        print("compaction:", flush=True)
        comp = bench_compaction(args, workdir, errors)
        hotspots = {"compaction": profile_compaction(args, workdir, args.out)} if args.profile else {}
        exp: list[dict[str, Any]] = []
        if not args.skip_expire:
            print("expiration:", flush=True)
            exp, hotspots["expiration"] = bench_expiration(args, workdir, errors)
    info = machine()
    info["load_average_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    info["load_average_start"] = load_start
    report: dict[str, Any] = {"machine": info, "command": command.strip(), "compaction": comp, "expiration": exp,
                              "errors": errors, "wall_s": round(time.perf_counter() - started, 1)}
    report["hotspots"] = {what: [{"function": f, "self_pct": round(s, 1), "cum_pct": round(c, 1)}
                                 for f, s, c in spots] for what, spots in hotspots.items() if spots}
    md = ""
    if exp:
        checks = targets(comp, exp)
        report["targets"] = checks
        md = render(info, command.strip(), comp, exp, checks, errors)
        (args.out / "maintenance.md").write_text(md)
        print("\n" + md)
    (args.out / "maintenance.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    if not exp:
        print(json.dumps(comp["modes"], indent=2, default=str))
    for what, spots in hotspots.items():
        if spots:
            print(f"{what} hotspots (cProfile, % of the profiled call):")
            for f, s, c in spots:
                print(f"  {s:5.1f}% self {c:5.1f}% cum  {f}")
    print(f"wall clock {report['wall_s']} s")
    for e in errors:
        print(f"WRONG RESULT: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
