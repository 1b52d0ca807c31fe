"""TPC-H ``lineitem`` benchmark: load, upserts, compaction, reads and snapshot expiry, side by side.

    .venv/bin/python bench/bench_tpch.py [--sf 0.1,1] [--out bench/out/tpch]

Data: ``tpchgen-cli`` lineitem at each scale factor, partitioned by ``ship_month`` (YYYY-MM of
l_shipdate), primary key (l_orderkey, l_linenumber), 4 fixed buckets. Steps: initial load; 5 upsert
rounds (10% of the rows get a new l_quantity and l_extendedprice, 1% are deleted); full and
selective reads (merge-on-read); full compaction; the reads again; small commits up to 100 commits;
expiry of all but the latest snapshot. Peers in the same run: lake_assets (core API, and through
Spark ``local[2]``), pypaimon, delta-rs (MERGE, optimize.compact, vacuum), plain pyarrow Parquet
(the physical reference) and DuckDB / polars reading our data files directly. Each system's steps
run in their own subprocesses (`bench/tpch/worker.py`); memory is each step's peak RSS.

Every read is checked against the reference content; a wrong result prints FAIL and exits 1.
Missed targets are reported, not failed. Writes ``tpch.md``, ``tpch.json`` and ``tpch.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # run as `python bench/bench_tpch.py` from a checkout

from bench.tpch import chart, hotspots, machine, runner  # noqa: E402
from bench.tpch.document import ScaleFactorRun, compose, targets_of  # noqa: E402
from bench.tpch.generate import GeneratorError, generate_lineitem, read_conformed, tpchgen_version  # noqa: E402
from bench.tpch.report import Target  # noqa: E402
from bench.tpch.workload import Plan, build  # noqa: E402

PHASE_ORDER = ("write", "compact", "history")
LAKE_PHASE_OF = {"load": "write", "upsert": "write", "read_full_mor": "write", "read_sel_mor": "write",
                 "compact": "compact", "read_full": "compact", "read_sel": "compact",
                 "small_commits": "history", "expire": "history"}


def sf_list(text: str) -> list[float]:
    return sorted({float(x) for x in text.split(",") if x.strip()})


def prepare(sf: float, work: Path, commits: int, bucket: int) -> tuple[Plan, Path]:
    """The inputs and the plan of ``sf``, reused from ``work`` when they match."""
    inputs = work / f"sf{sf:g}" / "inputs"
    plan_path = inputs / "plan.json"
    if plan_path.is_file():
        plan = Plan.load(plan_path)
        if plan.commits_before_expire == commits and plan.bucket == bucket and Path(plan.ref_final).is_file():
            print(f"sf {sf:g}: reusing the inputs in {inputs}", flush=True)
            return plan, plan_path
    started = time.perf_counter()
    raw, gen_s = generate_lineitem(sf, work / "cache")
    plan = build(read_conformed(raw), sf, inputs, commits=commits, bucket=bucket)
    print(f"sf {sf:g}: tpchgen-cli {gen_s:.1f} s, inputs and references {time.perf_counter() - started:.1f} s "
          f"({plan.base_rows:,} rows)", flush=True)
    return plan, plan_path


def steps_to_profile(run: ScaleFactorRun, targets: list[Target]) -> list[str]:
    """The slowest lake_assets step, and the steps behind each missed speed target at this SF."""
    lake = run.steps.get("lake", {})
    timed = [(name, st.seconds) for name, st in lake.items() if name in LAKE_PHASE_OF]
    if not timed:
        return []
    chosen = [max(timed, key=lambda c: c[1])[0]]
    for t in targets:
        if t.sf == run.plan.sf and t.met is False and t.lake_step in lake and t.lake_step not in chosen:
            chosen.append(t.lake_step)
    return ["upsert_1" if s == "upsert" else s for s in chosen]


def profile(run: ScaleFactorRun, steps: list[str], plan_path: Path, work: Path, timeout_s: float,
            lake_options: dict[str, str]) -> list[str]:
    """Re-run lake_assets in a fresh warehouse with ``steps`` under cProfile; the hotspot tables."""
    if not steps:
        return ["Not profiled: lake_assets has no measured step."]
    run_dir = work / "profile"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    config = runner.RunConfig(("lake",), timeout_s, {"lake": lake_options}, profile_steps=tuple(steps))
    last = max(PHASE_ORDER.index(LAKE_PHASE_OF[s.split("_")[0] if s.startswith("upsert") else s]) for s in steps)
    print(f"profiling lake_assets {', '.join(steps)} at SF {run.plan.sf:g} ...", flush=True)
    for phase in PHASE_ORDER[:last + 1]:
        outcome = runner.run_phase("lake", phase, plan_path, run_dir, config)
        if not outcome.ok:
            return [f"Profiling failed: {outcome.error}"]
    shutil.rmtree(run_dir / "wh-lake", ignore_errors=True)
    profiled = {s["step"]: s["seconds"] for s in runner.load_results(run_dir)["lake"]["steps"]}
    measured = run.results["lake"]["steps"]
    lines: list[str] = []
    for step in steps:
        seconds = next(s["seconds"] for s in measured if s["step"] == step)
        lines += [*hotspots.markdown(run_dir / f"{step}.prof", step, run.plan.sf, seconds, profiled[step]), ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="TPC-H lineitem benchmark: lake_assets and its peers")
    parser.add_argument("--sf", type=sf_list, default=sf_list("0.1,1"), help="scale factors, comma-separated")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "out" / "tpch", help="report directory")
    parser.add_argument("--work", type=Path, default=None, help="inputs and warehouses (default: OUT/work)")
    parser.add_argument("--systems", default=",".join(runner.ALL_SYSTEMS), help="systems to run")
    parser.add_argument("--pypaimon-sf", type=sf_list, default=sf_list("0.1"),
                        help="scale factors pypaimon runs at (default 0.1: ~15k rows/s, SF 1 would take ~30 min)")
    parser.add_argument("--spark-sf", type=sf_list, default=None, help="scale factors Spark runs at (default: all)")
    parser.add_argument("--commits", type=int, default=100, help="commits before expiry")
    parser.add_argument("--bucket", type=int, default=4, help="fixed buckets per partition")
    parser.add_argument("--write-buffer-size", default="256 mb",
                        help="lake_assets write-buffer-size (also for Spark): the memory bound of writes")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per worker phase")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile run of the slowest step")
    parser.add_argument("--keep", action="store_true", help="keep the warehouses")
    args = parser.parse_args(argv)

    out: Path = args.out
    work: Path = args.work or out / "work"
    out.mkdir(parents=True, exist_ok=True)
    systems = tuple(s for s in args.systems.split(",") if s)
    unknown = set(systems) - set(runner.ALL_SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {runner.ALL_SYSTEMS}")
    command = ".venv/bin/python bench/bench_tpch.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    try:
        gen_version = tpchgen_version()
    except GeneratorError as exc:
        print(f"FAIL: {exc}", file=sys.stderr)
        return 2

    lake_options = {"write_buffer_size": args.write_buffer_size}
    runs: list[ScaleFactorRun] = []
    plan_paths: dict[float, Path] = {}
    for sf in args.sf:
        try:
            plan, plan_path = prepare(sf, work, args.commits, args.bucket)
        except GeneratorError as exc:
            print(f"FAIL: {exc}", file=sys.stderr)
            return 2
        plan_paths[sf] = plan_path
        here, skipped = [], {}
        for s in systems:
            if s == "pypaimon" and sf not in args.pypaimon_sf:
                skipped[s] = f"pypaimon runs at SF {', '.join(f'{x:g}' for x in args.pypaimon_sf)} only (--pypaimon-sf)"
            elif s == "spark" and args.spark_sf is not None and sf not in args.spark_sf:
                skipped[s] = "not in --spark-sf"
            else:
                here.append(s)
        config = runner.RunConfig(tuple(here), args.timeout, {"lake": lake_options, "spark": lake_options},
                                  keep_warehouses=args.keep)
        started, code_before = time.perf_counter(), machine.git_state()
        outcomes = runner.run_scale_factor(plan, plan_path, work / f"sf{sf:g}" / "run", config)
        runs.append(ScaleFactorRun(plan, runner.load_results(work / f"sf{sf:g}" / "run"), outcomes, skipped,
                                   time.perf_counter() - started, code_before, machine.git_state()))

    hotspot_lines: list[str] = []
    if not args.no_profile and "lake" in systems:
        last = runs[-1]
        hotspot_lines = profile(last, steps_to_profile(last, targets_of(runs)), plan_paths[last.plan.sf],
                                work / f"sf{last.plan.sf:g}", args.timeout, lake_options)

    extra_versions = {"tpchgen-cli": gen_version}
    for run in runs:
        for r in run.results.values():
            extra_versions.update({k: v for k, v in r.get("info", {}).get("versions", {}).items()
                                   if k.startswith(("pypaimon", "pyarrow (pypaimon"))})
    text, all_ok, targets = compose(runs, command, machine.describe(), machine.versions(extra_versions),
                                    hotspot_lines, [])
    (out / "tpch.md").write_text(text)
    png = chart.draw({run.plan.sf: run.steps for run in runs}, out / "tpch.png")
    summary = {
        "command": command, "machine": machine.describe(), "versions": machine.versions(extra_versions),
        "runs": [{"plan": asdict(run.plan), "results": run.results, "outcomes": [asdict(o) for o in run.outcomes],
                  "skipped": run.skipped, "wall_s": run.wall_s} for run in runs],
        "targets": [asdict(t) | {"verdict": t.verdict} for t in targets],
    }
    (out / "tpch.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print()
    print(text)
    print(f"report: {out / 'tpch.md'}, chart: {png}")
    failed_workers = [o for run in runs for o in run.outcomes if not o.ok]
    if not all_ok:
        print("FAIL: a system returned wrong results (see Correctness above)", file=sys.stderr)
        return 1
    if failed_workers:
        print(f"FAIL: {len(failed_workers)} worker phase(s) did not finish", file=sys.stderr)
        return 1
    missed = [t for t in targets if t.met is False]
    print(f"results: correct; targets: {len(targets) - len(missed)} met or not measured, {len(missed)} missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
