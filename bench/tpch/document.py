"""The markdown report of a whole run: per scale factor tables, targets, checks, hotspots and notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.tpch import report
from bench.tpch.report import SYSTEM_TITLES, Step
from bench.tpch.runner import PhaseOutcome
from bench.tpch.workload import Plan


@dataclass
class ScaleFactorRun:
    """Everything one scale factor produced."""

    plan: Plan
    results: dict[str, dict[str, Any]]
    outcomes: list[PhaseOutcome]
    skipped: dict[str, str] = field(default_factory=dict)  # system → why it did not run at this SF
    wall_s: float = 0.0
    code_before: str = ""  # lake_assets' git state when this scale factor started, and when it ended
    code_after: str = ""

    @property
    def steps(self) -> dict[str, dict[str, Step]]:
        return {system: report.steps_of(r) for system, r in self.results.items()}


METHOD_NOTES = (
    "Paimon requires the partition keys in the primary key, so the key is (l_orderkey, l_linenumber, "
    "ship_month); ship_month is a function of l_shipdate, which no upsert changes, so (l_orderkey, "
    "l_linenumber) still identifies a row, and it stays the bucket key. delta-rs MERGE joins on the same "
    "three columns (ship_month lets it prune partitions).",
    "Every system streams the same Parquet inputs in 131,072-row batches, so input decoding is inside "
    "every write step. Each step runs once; nothing is a best-of.",
    "Peak memory: single processes reset the kernel's high-water mark before each step and read VmHWM "
    "after it; Spark sums the RSS of the driver, the JVM and the Python workers, sampled every 50 ms.",
    "lake_assets + Spark times the full read as a `noop` write (every row converted, nothing collected); "
    "the other full reads materialize one Arrow table (result size shown in the memory section).",
    "delta-rs MERGE rewrites whole files (copy-on-write), so its reads after the upserts read one file per "
    "partition and its `optimize.compact` finds nothing to do; `vacuum(retention_hours=0)` stands in for "
    "expiring all but the latest snapshot.",
    "The pyarrow compaction limit reads lake_assets' own data files after the upserts, sorts by key and "
    "sequence number, keeps the last row per key (dropping deletes) and writes one zstd file; DuckDB merges "
    "the same files with a window query; DuckDB and polars read the compacted files as they are.",
)


def workload_lines(plan: Plan) -> list[str]:
    return [
        f"SF {plan.sf:g}: {plan.base_rows:,} base rows; 5 rounds of {plan.round_rows[0]:,} rows "
        f"(10% upserts + 1% deletes); {plan.upserted_rows:,} rows after the rounds; "
        f"{plan.small_commits} small commits of {plan.small_rows:,} new rows "
        f"({plan.commits_before_expire} commits before expiry); selective read "
        f"`ship_month = '{plan.select_month}' AND {plan.select_lo:,} ≤ l_orderkey < {plan.select_hi:,}` "
        f"→ {plan.select_rows_upserted:,} rows."
    ]


def targets_of(runs: list[ScaleFactorRun]) -> list[report.Target]:
    """Every target of the run: speed per scale factor, then memory across scale factors."""
    targets = [t for run in runs for t in report.speed_targets(run.plan.sf, run.steps)]
    return targets + report.memory_targets({run.plan.sf: run.steps for run in runs})[0]


def compose(runs: list[ScaleFactorRun], command: str, machine: str, versions: dict[str, str],
            hotspot_lines: list[str], notes: list[str]) -> tuple[str, bool, list[report.Target]]:
    """(markdown, whether every correctness check passed, all targets)."""
    lines = [f"Machine: {machine}.", "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".", "",
             "Command:", "", "```", command, "```", ""]
    for run in runs:
        lines += workload_lines(run.plan)
    lines.append("")
    checks: dict[float, dict[str, list[dict[str, Any]]]] = {}
    for run in runs:
        steps = run.steps
        systems = [s for s in SYSTEM_TITLES if s in steps]
        loads = [o.load_avg_1m for o in run.outcomes if o.wall_s > 0]
        busy = f"; 1-minute load average after each phase {min(loads):.1f}–{max(loads):.1f}" if loads else ""
        code = (f"lake_assets at {run.code_before}" if run.code_before == run.code_after else
                f"**lake_assets changed during this scale factor: {run.code_before} → {run.code_after}**")
        lines += [f"### SF {run.plan.sf:g} ({run.wall_s / 60:.1f} min wall clock for all systems{busy}; {code})", "",
                  "Seconds and rows/s per step (best is not taken: each step runs once, in its own process "
                  "per system):", ""]
        lines += report.seconds_table(steps, systems)
        lines += ["", "Ratios: the peer's seconds ÷ lake_assets' seconds (above 1: lake_assets is faster):", ""]
        lines += report.ratio_table(steps, "lake", systems)
        if "spark" in steps:
            lines += ["", "lake_assets + Spark against the same peers:", ""]
            lines += report.ratio_table(steps, "spark", [s for s in systems if s != "lake"])
        lines += ["", "Peak memory per step, MiB: peak RSS (+ above the RSS at the step's start; upsert: the "
                  "highest round):", ""]
        lines += report.memory_table(steps, systems)
        lines.append("")
        if run.skipped:
            lines += [f"Not run at SF {run.plan.sf:g}: " + "; ".join(
                f"{SYSTEM_TITLES[s]}: {why}" for s, why in run.skipped.items()) + ".", ""]
        failures = [o for o in run.outcomes if not o.ok]
        if failures:
            lines += ["Worker failures: " + "; ".join(f"{o.system} {o.phase}: {o.error}" for o in failures) + ".", ""]
        checks[run.plan.sf] = {s: r.get("checks", []) for s, r in run.results.items()}
    targets = targets_of(runs)
    mem_lines = report.memory_targets({run.plan.sf: run.steps for run in runs})[1]
    lines += ["### Targets", "", "| target | SF | value | result |", "|---|---:|---:|---|"]
    lines += [f"| {t.name} | {'—' if t.sf is None else f'{t.sf:g}'} | {t.value} | {t.verdict} |" for t in targets]
    if mem_lines:
        lines += ["", "lake_assets peak memory above the step's starting RSS, by scale factor:", "", *mem_lines]
    check_lines, all_ok = report.checks_table(checks)
    lines += ["", "### Correctness", "",
              "Every read is compared (untimed) with the reference computed by pyarrow/numpy: same rows, same "
              "values, any order. A wrong answer prints FAIL and the command exits non-zero.", "", *check_lines]
    if hotspot_lines:
        lines += ["", "### Profiles: the slowest lake_assets step and the steps behind missed speed targets", "",
                  *hotspot_lines]
    lines += ["", "### Notes", "", *[f"- {n}" for n in (*METHOD_NOTES, *notes)]]
    return "\n".join(lines) + "\n", all_ok, targets
