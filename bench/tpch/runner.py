"""Runs the workers of one scale factor in order, each phase in its own subprocess.

The order lets the peers that read lake_assets' own data files (the pyarrow compaction limit,
DuckDB, polars) run between the lake phases, while those files are live:

    lake write → pyarrow load/read/compact_limit → duckdb mor → lake compact → duckdb, polars
    compacted → lake history → delta → pypaimon → spark
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.tpch.workload import Plan

BENCH_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = BENCH_DIR.parent
WORKER = BENCH_DIR / "tpch" / "worker.py"
MAIN_PYTHON = Path(sys.executable)
PAIMON_PYTHON = REPO_ROOT / ".venv-paimon" / "bin" / "python"
ALL_SYSTEMS = ("lake", "spark", "pypaimon", "delta", "pyarrow", "duckdb", "polars")

# (system, phase, systems it needs to have run first)
SEQUENCE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("lake", "write", ()),
    ("pyarrow", "load", ()),
    ("pyarrow", "read", ()),
    ("pyarrow", "compact_limit", ("lake",)),
    ("duckdb", "mor", ("lake",)),
    ("lake", "compact", ()),
    ("duckdb", "compacted", ("lake",)),
    ("polars", "compacted", ("lake",)),
    ("lake", "history", ()),
    ("delta", "all", ()),
    ("pypaimon", "write", ()),
    ("spark", "all", ()),
)


@dataclass
class RunConfig:
    """Which systems run at this scale factor, and their limits."""

    systems: tuple[str, ...]
    timeout_s: float
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    profile_steps: tuple[str, ...] = ()
    keep_warehouses: bool = False


@dataclass
class PhaseOutcome:
    system: str
    phase: str
    ok: bool
    wall_s: float
    error: str = ""
    load_avg_1m: float = 0.0  # at the end of the phase: other work on the machine skews timings


def worker_command(system: str) -> tuple[list[str], dict[str, str]]:
    """The interpreter (pypaimon: its own venv, isolated) and the environment for a worker."""
    env = dict(os.environ)
    if system == "pypaimon":
        env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
        return [str(PAIMON_PYTHON), "-I", str(WORKER)], env
    return [str(MAIN_PYTHON), str(WORKER)], env


def run_phase(system: str, phase: str, plan_path: Path, run_dir: Path, config: RunConfig) -> PhaseOutcome:
    """One worker subprocess; its measurements land in ``run_dir/<system>.json``."""
    prefix, env = worker_command(system)
    result = run_dir / f"{system}.json"
    options = dict(config.options.get(system, {}))
    options.setdefault("lake_result", str(run_dir / "lake.json"))
    cmd = [*prefix, "--system", system, "--phase", phase, "--plan", str(plan_path),
           "--warehouse", str(run_dir / f"wh-{system}"), "--result", str(result), "--options", json.dumps(options)]
    if config.profile_steps and system == "lake":
        cmd += ["--profile-steps", ",".join(config.profile_steps)]
    log = run_dir / f"{system}-{phase}.log"
    started = time.perf_counter()
    with log.open("w") as out:
        try:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT,
                                  timeout=config.timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return PhaseOutcome(system, phase, False, time.perf_counter() - started,
                                f"timed out after {config.timeout_s:.0f} s (log: {log})")
    wall = time.perf_counter() - started
    load = os.getloadavg()[0]
    if proc.returncode != 0:
        tail = log.read_text().strip().splitlines()[-3:]
        return PhaseOutcome(system, phase, False, wall, f"exit {proc.returncode}: {' | '.join(tail)} (log: {log})",
                            load)
    return PhaseOutcome(system, phase, True, wall, load_avg_1m=load)


def available(system: str) -> str | None:
    """None when the system can run here, else why not."""
    if system == "pypaimon" and not PAIMON_PYTHON.is_file():
        return f"{PAIMON_PYTHON} not found (make venv-paimon)"
    if system == "spark" and not (REPO_ROOT / "lake_assets" / "spark" / "datasource.py").is_file():
        return "lake_assets/spark/datasource.py does not exist yet"
    modules = {"delta": "deltalake", "duckdb": "duckdb", "polars": "polars", "spark": "pyspark"}
    if system in modules:
        import importlib.util

        if importlib.util.find_spec(modules[system]) is None:
            return f"{modules[system]} is not installed in {MAIN_PYTHON.parent.parent}"
    return None


def run_scale_factor(plan: Plan, plan_path: Path, run_dir: Path, config: RunConfig) -> list[PhaseOutcome]:
    """Every phase of the sequence for the configured systems; the outcome of each."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    outcomes: list[PhaseOutcome] = []
    failed: set[str] = set()
    for system, phase, needs in SEQUENCE:
        if system not in config.systems or system in failed:
            continue
        if missing := [n for n in needs if n not in config.systems or n in failed]:
            outcomes.append(PhaseOutcome(system, phase, False, 0.0, f"skipped: needs {', '.join(missing)}"))
            continue
        if reason := available(system):
            outcomes.append(PhaseOutcome(system, phase, False, 0.0, f"not available: {reason}"))
            failed.add(system)
            continue
        print(f"  sf {plan.sf:g}: {system} {phase} ...", end="", flush=True)
        outcome = run_phase(system, phase, plan_path, run_dir, config)
        print(f" {'ok' if outcome.ok else 'FAILED'} ({outcome.wall_s:.1f} s wall, load average "
              f"{outcome.load_avg_1m:.1f})", flush=True)
        if not outcome.ok:
            print(f"    {outcome.error}", flush=True)
            failed.add(system)
        outcomes.append(outcome)
    if not config.keep_warehouses:
        for wh in run_dir.glob("wh-*"):
            shutil.rmtree(wh, ignore_errors=True)
    return outcomes


def load_results(run_dir: Path) -> dict[str, dict[str, Any]]:
    """system → the worker's JSON (steps, checks, info)."""
    out = {}
    for system in ALL_SYSTEMS:
        path = run_dir / f"{system}.json"
        if path.is_file():
            out[system] = json.loads(path.read_text())
    return out
