"""Core benchmark: PK write, PK update and merge-on-read, side by side with pypaimon and Parquet.

    .venv/bin/python bench/bench_core.py [--rows 1000000] [--repeat 3] [--out bench/out]

Steps on a primary-key table (``bucket = 2``, not partitioned), each in a fresh warehouse per run:

1. write ``--rows`` new keys (write + commit);
2. write ``--rows / 2`` updates of existing keys (a second sorted run in every bucket);
3. merge-on-read of the whole table, checked against the expected final state.

lake_assets runs in this process; pypaimon runs the same steps on the same rows in
``pypaimon_worker.py`` under ``.venv-paimon`` (timed inside the worker, so its import is excluded);
``--pypaimon-rows N`` gives it a smaller data set instead (rows/s are compared). Plain
``pyarrow.parquet`` (zstd) writing and reading the same rows is the physical reference.
Best of ``--repeat`` runs. A wrong merged result exits with status 1; a missed target does not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # run as `python bench/bench_core.py` from a checkout

from bench.core_data import KEY, SEED, expected_state, make_data, read_ipc, same_rows, write_ipc  # noqa: E402
from bench.tpch.machine import git_state, host  # noqa: E402
from lake_assets import Catalog  # noqa: E402

WORKER = BENCH_DIR / "pypaimon_worker.py"
PAIMON_PYTHON = REPO_ROOT / ".venv-paimon" / "bin" / "python"
TABLE = "bench.core"
BUCKET = 2
WORKER_TIMEOUT_S = 3600

# Targets: lake_assets rows/s over the peer's rows/s.
PYPAIMON_WRITE_TARGET = 20.0
PYPAIMON_READ_TARGET = 10.0
PYARROW_TARGET = 0.5
STEPS = ("write", "update", "read")
STEP_TITLES = {
    "write": "PK write (new keys)",
    "update": "PK write (updates)",
    "read": "merge-on-read (2 runs/bucket)",
}


# ------------------------------------------------------------------------------------ timings
@dataclass
class System:
    """Best-of timings of one system; ``rows`` is the input volume of each step."""

    name: str
    rows: dict[str, int]
    seconds: dict[str, list[float]] = field(default_factory=dict)
    peak_rss_mib: float | None = None
    note: str = ""

    def add(self, step: str, seconds: float) -> None:
        self.seconds.setdefault(step, []).append(seconds)

    def best(self, step: str) -> float | None:
        runs = self.seconds.get(step)
        return min(runs) if runs else None

    def rate(self, step: str) -> float | None:
        best = self.best(step)
        return self.rows[step] / best if best else None


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result, elapsed seconds) of ``fn()``."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def peak_rss_mib() -> float:
    """This process's peak resident set size so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_lake_assets(initial: pa.Table, updates: pa.Table, expected: pa.Table, repeat: int,
                    workdir: Path) -> tuple[System, list[str]]:
    """The three steps in this process; returns the timings and any wrong-result messages."""
    system = System("lake_assets", {"write": initial.num_rows, "update": updates.num_rows,
                                    "read": initial.num_rows + updates.num_rows})
    errors = []
    for i in range(repeat):
        with tempfile.TemporaryDirectory(prefix="lake-wh-", dir=workdir) as warehouse:
            catalog = Catalog(warehouse)
            catalog.create_database("bench")
            catalog.create_table(TABLE, initial.schema, primary_keys=[KEY], options={"bucket": str(BUCKET)})
            # A fresh table handle per step (outside the timings), as a new job would get.
            system.add("write", timed(partial(catalog.get_table(TABLE).write_arrow, initial))[1])
            system.add("update", timed(partial(catalog.get_table(TABLE).write_arrow, updates))[1])
            result, seconds = timed(catalog.get_table(TABLE).to_arrow)
            system.add("read", seconds)
            if (err := same_rows(result, expected)) is not None:
                errors.append(f"lake_assets run {i + 1}: {err}")
            del result
    system.peak_rss_mib = peak_rss_mib()
    return system, errors


def run_pypaimon(initial: pa.Table, updates: pa.Table, expected: pa.Table, repeat: int,
                 workdir: Path, note: str) -> tuple[System | None, list[str], dict[str, str]]:
    """The three steps in ``pypaimon_worker.py`` under ``.venv-paimon``; None if that venv is missing."""
    if not PAIMON_PYTHON.is_file():
        print(f"pypaimon skipped: {PAIMON_PYTHON} not found (make venv-paimon)", file=sys.stderr)
        return None, [], {}
    initial_path, updates_path = workdir / "pypaimon-initial.arrow", workdir / "pypaimon-updates.arrow"
    write_ipc(initial, initial_path)
    write_ipc(updates, updates_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    cmd = [str(PAIMON_PYTHON), "-I", str(WORKER), "--initial", str(initial_path), "--updates",
           str(updates_path), "--repeat", str(repeat), "--bucket", str(BUCKET), "--workdir", str(workdir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=WORKER_TIMEOUT_S)
    if proc.returncode != 0:
        raise SystemExit(f"pypaimon worker failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])  # the last line; pypaimon may log above it
    system = System("pypaimon", {"write": initial.num_rows, "update": updates.num_rows,
                                 "read": initial.num_rows + updates.num_rows}, note=note)
    errors = []
    for i, run in enumerate(report["runs"]):
        system.add("write", run["write_s"])
        system.add("update", run["update_s"])
        system.add("read", run["read_s"])
        if (err := same_rows(read_ipc(run["result"]), expected)) is not None:
            errors.append(f"pypaimon run {i + 1}: {err}")
    system.peak_rss_mib = report["peak_rss_kib"] / 1024
    return system, errors, report["versions"]


def run_pyarrow(initial: pa.Table, updates: pa.Table, repeat: int, workdir: Path) -> System:
    """Plain Parquet (zstd): write each batch as one file; read one file, then both."""
    system = System("pyarrow parquet", {"write": initial.num_rows, "update": updates.num_rows,
                                        "read_new": initial.num_rows,
                                        "read": initial.num_rows + updates.num_rows})
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="parquet-", dir=workdir) as tmp:
            first, second = os.path.join(tmp, "initial.parquet"), os.path.join(tmp, "updates.parquet")
            system.add("write", timed(partial(pq.write_table, initial, first, compression="zstd"))[1])
            system.add("update", timed(partial(pq.write_table, updates, second, compression="zstd"))[1])
            system.add("read_new", timed(partial(pq.read_table, first))[1])
            system.add("read", timed(partial(read_parquet_files, [first, second]))[1])
    return system


def read_parquet_files(paths: list[str]) -> pa.Table:
    """Read Parquet files into one table."""
    return pa.concat_tables([pq.read_table(p) for p in paths])


# ------------------------------------------------------------------------------------- report
def fmt_rate(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:,.0f}"


def fmt_ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{a / b:.2f}x"


def targets(lake: System, paimon: System | None, arrow: System) -> list[tuple[str, float | None, float, bool]]:
    """(description, ratio, target, met) per target."""
    out = []
    for step in STEPS:
        goal = PYPAIMON_READ_TARGET if step == "read" else PYPAIMON_WRITE_TARGET
        ratio = None
        if paimon is not None and (r := paimon.rate(step)) and (la := lake.rate(step)):
            ratio = la / r
        out.append((f"{STEP_TITLES[step]}: lake_assets/pypaimon ≥ {goal:g}x", ratio, goal,
                    ratio is not None and ratio >= goal))
    for step in STEPS:
        ratio = (lake.rate(step) or 0.0) / (arrow.rate(step) or float("inf"))
        out.append((f"{STEP_TITLES[step]}: lake_assets/pyarrow ≥ {PYARROW_TARGET:g}x", ratio, PYARROW_TARGET,
                    ratio >= PYARROW_TARGET))
    return out


def markdown(lake: System, paimon: System | None, arrow: System, args: argparse.Namespace,
             baseline_rss_mib: float, versions: dict[str, str], host: dict[str, str]) -> str:
    """The results table, the targets and notes, as markdown."""
    pk = paimon
    lines = [
        "| step | rows | lake_assets rows/s | pypaimon rows/s | pyarrow rows/s | lake/pypaimon | lake/pyarrow |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for step in STEPS:
        p_rows = f" (pypaimon {pk.rows[step]:,})" if pk is not None and pk.rows[step] != lake.rows[step] else ""
        lines.append(
            f"| {STEP_TITLES[step]} | {lake.rows[step]:,}{p_rows} | {fmt_rate(lake.rate(step))} | "
            f"{fmt_rate(pk.rate(step) if pk else None)} | {fmt_rate(arrow.rate(step))} | "
            f"{fmt_ratio(lake.rate(step), pk.rate(step) if pk else None)} | "
            f"{fmt_ratio(lake.rate(step), arrow.rate(step))} |"
        )
    lines.append(
        f"| (reference) Parquet read of the {lake.rows['write']:,} new rows only | {lake.rows['write']:,} | — | — | "
        f"{fmt_rate(arrow.rate('read_new'))} | — | — |"
    )
    lines += ["", "| system | best seconds: write / update / read | peak RSS (MiB) |", "|---|---|---:|"]
    for s in (lake, pk, arrow):
        if s is None:
            continue
        secs = " / ".join(f"{s.best(step):.3f}" for step in STEPS)
        rss = f"{s.peak_rss_mib:,.0f}" if s.peak_rss_mib is not None else "—"
        lines.append(f"| {s.name} | {secs} | {rss} |")
    lines += ["", "| target | ratio | result |", "|---|---:|---|"]
    for desc, ratio, _goal, met in targets(lake, pk, arrow):
        lines.append(f"| {desc} | {'—' if ratio is None else f'{ratio:.2f}x'} | {'PASS' if met else 'MISS'} |")
    lines += [
        "",
        f"Best of {args.repeat} runs, each in a fresh temporary warehouse. Merge-on-read rows/s count the rows "
        "scanned (new keys + updates, two sorted runs per bucket); the pyarrow read reference reads both "
        "Parquet files. pyarrow writes with `pq.write_table(compression='zstd')`, one file per batch.",
        f"lake_assets peak RSS is this process's (it includes ~{baseline_rss_mib:,.0f} MiB of generated input "
        "held before any step ran); pypaimon's is its worker's; the pyarrow reference runs in the same "
        "process afterwards, so it has no separate figure.",
        "",
        f"Machine: {host['nproc']} CPUs ({host['cpu']}), {host['ram']} RAM, {host['os']}.",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".",
    ]
    if pk is not None and pk.note:
        lines.append(pk.note)
    return "\n".join(lines) + "\n"


def to_json(lake: System, paimon: System | None, arrow: System, versions: dict[str, str],
            args: argparse.Namespace) -> dict[str, Any]:
    """A machine-readable form of the report."""
    def system(s: System) -> dict[str, Any]:
        return {"rows": s.rows, "seconds": s.seconds, "best_seconds": {k: min(v) for k, v in s.seconds.items()},
                "rows_per_s": {k: s.rate(k) for k in s.seconds}, "peak_rss_mib": s.peak_rss_mib}

    return {
        "args": {"rows": args.rows, "updates": args.rows // 2, "repeat": args.repeat,
                 "pypaimon_rows": paimon.rows["write"] if paimon else None, "bucket": BUCKET, "seed": SEED},
        "versions": versions,
        "systems": {s.name: system(s) for s in (lake, paimon, arrow) if s is not None},
        "targets": [{"target": d, "ratio": r, "goal": g, "met": m} for d, r, g, m in targets(lake, paimon, arrow)],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit status 1 only when a merged read returns wrong rows."""
    parser = argparse.ArgumentParser(description="lake_assets core benchmark (PK write/update/merge-on-read)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="new keys written in step 1")
    parser.add_argument("--repeat", type=int, default=3, help="runs per system; the best is reported")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "out", help="directory for core.md and core.json")
    parser.add_argument("--pypaimon-rows", type=int, default=0,
                        help="new keys for pypaimon (updates: half); 0 = same as --rows (default), -1 = skip it")
    parser.add_argument("--pypaimon-repeat", type=int, default=None, help="pypaimon runs (default: --repeat)")
    args = parser.parse_args(argv)

    initial, updates = make_data(args.rows, args.rows // 2)
    expected = expected_state(initial, updates)
    baseline_rss = peak_rss_mib()
    versions = {"python": platform.python_version(), "lake_assets": lake_assets_version(),
                "pyarrow": pa.__version__, "numpy": np.__version__}
    print(f"data: {args.rows:,} new keys + {args.rows // 2:,} updates, bucket={BUCKET}, seed={SEED}", flush=True)

    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-core-") as tmp:
        workdir = Path(tmp)
        lake, errs = run_lake_assets(initial, updates, expected, args.repeat, workdir)
        errors += errs
        print(f"lake_assets done: {' / '.join(f'{lake.best(s):.3f}s' for s in STEPS)}", flush=True)

        paimon = None
        if args.pypaimon_rows >= 0:
            p_rows = args.pypaimon_rows or args.rows
            note = ""
            if p_rows != args.rows:
                p_initial, p_updates = make_data(p_rows, p_rows // 2)
                p_expected = expected_state(p_initial, p_updates)
                note = (f"pypaimon ran on a smaller data set (--pypaimon-rows: {p_rows:,} new keys + "
                        f"{p_rows // 2:,} updates, same generator); rows/s are compared.")
            else:
                p_initial, p_updates, p_expected = initial, updates, expected
            paimon, errs, p_versions = run_pypaimon(p_initial, p_updates, p_expected,
                                                    args.pypaimon_repeat or args.repeat, workdir, note)
            errors += errs
            versions.update({f"{k} (pypaimon venv)": v for k, v in p_versions.items()})
            if paimon is not None:
                print(f"pypaimon done: {' / '.join(f'{paimon.best(s):.3f}s' for s in STEPS)}", flush=True)

        arrow = run_pyarrow(initial, updates, args.repeat, workdir)

    host = machine()
    report = markdown(lake, paimon, arrow, args, baseline_rss, versions, host)
    print()
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "core.md").write_text(report)
    summary = {"machine": host, **to_json(lake, paimon, arrow, versions, args)}
    (args.out / "core.json").write_text(json.dumps(summary, indent=2) + "\n")
    if errors:
        print("WRONG RESULTS:\n  " + "\n  ".join(errors), file=sys.stderr)
        return 1
    print("results: correct (merged reads equal the expected final state)")
    return 0


def lake_assets_version() -> str:
    """pyproject version, git commit and whether the working tree has uncommitted changes."""
    import tomllib

    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    state = git_state()
    return version if state == "?" else f"{version} ({state})"


def machine() -> dict[str, str]:
    """CPU count, RAM and CPU model (Linux /proc), and the kernel."""
    return host()


if __name__ == "__main__":
    sys.exit(main())
