"""Tables, targets and notes (markdown) from the workers' JSON results of each scale factor."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any

SYSTEM_TITLES = {
    "lake": "lake_assets", "spark": "lake_assets + Spark", "pypaimon": "pypaimon", "delta": "delta-rs",
    "pyarrow": "pyarrow Parquet", "duckdb": "DuckDB on our files", "polars": "polars on our files",
}
STEP_TITLES = {
    "load": "initial load",
    "upsert": "upsert round (mean of 5)",
    "read_full_mor": "full read after upserts (merge-on-read)",
    "read_sel_mor": "selective read after upserts",
    "compact": "full compaction",
    "read_full": "full read after compaction",
    "read_sel": "selective read after compaction",
    "small_commits": "small commits (all)",
    "expire": "expire snapshots / vacuum",
}
STEPS = tuple(STEP_TITLES)
# Steps whose peak memory must not grow with the table (full reads return the whole table).
BOUNDED_STEPS = ("load", "upsert", "read_sel_mor", "compact", "read_sel", "small_commits", "expire")
UPSERT_TARGET = 3.0  # delta-rs MERGE seconds / lake_assets upsert seconds
READ_TARGET = 2.0  # lake_assets merge-on-read full read seconds / pyarrow single-file read seconds
COMPACT_TARGET = 2.0  # lake_assets compaction seconds / pyarrow read+sort+write seconds
MEMORY_GROWTH_LIMIT = 2.0  # peak-above-start at the largest SF / at the smallest, for 10x the rows


@dataclass(frozen=True)
class Step:
    """One step of one system at one scale factor (upsert rounds folded into their mean)."""

    seconds: float
    rows: int
    peak_mib: float
    above_start_mib: float
    extra: dict[str, Any]

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def steps_of(result: dict[str, Any]) -> dict[str, Step]:
    """step name → `Step`, with ``upsert`` the mean of the rounds (peak: the highest round)."""
    out: dict[str, Step] = {}
    rounds = []
    for s in result.get("steps", []):
        if s["extra"].get("profiled"):
            continue
        step = Step(s["seconds"], s["rows"], s["peak_rss_mib"], max(0.0, s["peak_rss_mib"] - s["start_rss_mib"]),
                    s["extra"])
        if s["step"].startswith("upsert_"):
            rounds.append(step)
        out[s["step"]] = step
    if rounds:
        out["upsert"] = Step(mean(r.seconds for r in rounds), round(mean(r.rows for r in rounds)),
                             max(r.peak_mib for r in rounds), max(r.above_start_mib for r in rounds), {})
    return out


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.2f}" if seconds >= 0.1 else f"{seconds:.3f}"


def fmt_rate(rate: float) -> str:
    if rate >= 1e6:
        return f"{rate / 1e6:.2f}M/s"
    if rate >= 1e3:
        return f"{rate / 1e3:.0f}k/s"
    return f"{rate:.0f}/s"


def seconds_table(results: dict[str, dict[str, Step]], systems: Sequence[str]) -> list[str]:
    lines = ["| step | rows | " + " | ".join(SYSTEM_TITLES[s] for s in systems) + " |",
             "|---|---:|" + "---:|" * len(systems)]
    for step in STEPS:
        cells, rows = [], None
        for s in systems:
            st = results.get(s, {}).get(step)
            if st is None:
                cells.append("—")
                continue
            rows = rows or st.rows
            note = " (nothing to do)" if st.extra.get("noop") else ""
            cells.append(f"{fmt_s(st.seconds)} s · {fmt_rate(st.rate)}{note}")
        if all(c == "—" for c in cells):
            continue
        lines.append(f"| {STEP_TITLES[step]} | {rows:,} | " + " | ".join(cells) + " |")
    return lines


def ratio_table(results: dict[str, dict[str, Step]], base: str, peers: Sequence[str]) -> list[str]:
    """peer seconds / ``base`` seconds per step: above 1 means ``base`` is faster."""
    peers = [p for p in peers if p != base and p in results]
    lines = [f"| step | {' | '.join(f'{SYSTEM_TITLES[p]} ÷ {SYSTEM_TITLES[base]}' for p in peers)} |",
             "|---|" + "---:|" * len(peers)]
    for step in STEPS:
        mine = results.get(base, {}).get(step)
        cells = []
        for p in peers:
            other = results[p].get(step)
            cells.append("—" if mine is None or other is None or mine.seconds <= 0 else
                         f"{other.seconds / mine.seconds:.2f}x")
        if mine is not None and any(c != "—" for c in cells):
            lines.append(f"| {STEP_TITLES[step]} | " + " | ".join(cells) + " |")
    return lines


def memory_table(results: dict[str, dict[str, Step]], systems: Sequence[str]) -> list[str]:
    lines = ["| step | " + " | ".join(SYSTEM_TITLES[s] for s in systems) + " |", "|---|" + "---:|" * len(systems)]
    for step in STEPS:
        cells = []
        for s in systems:
            st = results.get(s, {}).get(step)
            cells.append("—" if st is None else f"{st.peak_mib:,.0f} (+{st.above_start_mib:,.0f})")
        if any(c != "—" for c in cells):
            lines.append(f"| {STEP_TITLES[step]} | " + " | ".join(cells) + " |")
    return lines


@dataclass(frozen=True)
class Target:
    name: str
    sf: float | None
    value: str
    met: bool | None  # None: not measurable
    lake_step: str | None = None  # the lake_assets (core) step it judges, to profile when missed

    @property
    def verdict(self) -> str:
        return "not measured" if self.met is None else ("PASS" if self.met else "MISS")


def speed_targets(sf: float, results: dict[str, dict[str, Step]]) -> list[Target]:
    lake, delta, arrow = results.get("lake", {}), results.get("delta", {}), results.get("pyarrow", {})
    out = []

    def ratio(name: str, num: Step | None, den: Step | None, goal: float, higher_is_better: bool,
              lake_step: str | None) -> None:
        if num is None or den is None:
            out.append(Target(name, sf, "—", None, lake_step))
            return
        r = num.seconds / den.seconds
        out.append(Target(name, sf, f"{r:.2f}x", r >= goal if higher_is_better else r <= goal, lake_step))

    ratio(f"upsert round: delta-rs MERGE seconds ÷ lake_assets seconds ≥ {UPSERT_TARGET:g}",
          delta.get("upsert"), lake.get("upsert"), UPSERT_TARGET, True, "upsert")
    ratio(f"upsert round via Spark: delta-rs MERGE ÷ lake_assets + Spark ≥ {UPSERT_TARGET:g}",
          delta.get("upsert"), results.get("spark", {}).get("upsert"), UPSERT_TARGET, True, None)
    ratio(f"full read of the upserted table (merge-on-read) ÷ pyarrow read of one compacted file ≤ {READ_TARGET:g}",
          lake.get("read_full_mor"), arrow.get("read_full"), READ_TARGET, False, "read_full_mor")
    ratio(f"full compaction ÷ pyarrow read+sort+dedupe+write ≤ {COMPACT_TARGET:g}",
          lake.get("compact"), arrow.get("compact"), COMPACT_TARGET, False, "compact")
    return out


def memory_targets(by_sf: dict[float, dict[str, dict[str, Step]]]) -> tuple[list[Target], list[str]]:
    """Peak above start per bounded lake_assets step: largest SF ÷ smallest SF ≤ the growth limit."""
    sfs = sorted(by_sf)
    if len(sfs) < 2:
        return [Target("peak memory bounded by configuration (needs two scale factors)", None, "—", None)], []
    lo, hi = sfs[0], sfs[-1]
    growth = hi / lo
    lines = [f"| lake_assets step | peak above start, SF {lo:g} (MiB) | SF {hi:g} (MiB) | growth "
             f"(rows grew {growth:g}x) |", "|---|---:|---:|---:|"]
    targets = []
    for step in (*BOUNDED_STEPS, "read_full_mor", "read_full"):
        a, b = by_sf[lo].get("lake", {}).get(step), by_sf[hi].get("lake", {}).get(step)
        if a is None or b is None:
            continue
        g = b.above_start_mib / max(a.above_start_mib, 1.0)
        result_note = ""
        if "result_mib" in b.extra:
            result_note = f" (result {b.extra['result_mib']:,.0f} MiB)"
        lines.append(f"| {STEP_TITLES[step]} | {a.above_start_mib:,.0f} | {b.above_start_mib:,.0f}{result_note} | "
                     f"{g:.2f}x |")
        if step in BOUNDED_STEPS:
            targets.append(Target(f"peak memory of {STEP_TITLES[step]}: SF {hi:g} ÷ SF {lo:g} ≤ "
                                  f"{MEMORY_GROWTH_LIMIT:g}", None, f"{g:.2f}x", g <= MEMORY_GROWTH_LIMIT))
    return targets, lines


def checks_table(checks: dict[float, dict[str, list[dict[str, Any]]]]) -> tuple[list[str], bool]:
    """One line per system and SF: which checks ran and any that failed; and whether all passed."""
    lines = ["| SF | system | checks | result |", "|---:|---|---:|---|"]
    all_ok = True
    for sf, by_system in sorted(checks.items()):
        for system, items in by_system.items():
            bad = [c for c in items if not c["ok"]]
            all_ok = all_ok and not bad
            verdict = "PASS" if not bad else "FAIL: " + "; ".join(f"{c['name']}: {c['detail']}" for c in bad)
            lines.append(f"| {sf:g} | {SYSTEM_TITLES[system]} | {len(items)} | {verdict} |")
    return lines, all_ok
