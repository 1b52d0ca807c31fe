"""The PNG: seconds per step and system for each scale factor (log scale), and lake_assets' peak memory."""

from __future__ import annotations

from pathlib import Path

from bench.tpch.report import STEP_TITLES, STEPS, SYSTEM_TITLES, Step

COLORS = {"lake": "#1f77b4", "spark": "#6baed6", "pypaimon": "#9467bd", "delta": "#d62728",
          "pyarrow": "#7f7f7f", "duckdb": "#ff7f0e", "polars": "#2ca02c"}


def draw(by_sf: dict[float, dict[str, dict[str, Step]]], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sfs = sorted(by_sf)
    fig, axes = plt.subplots(1, len(sfs) + 1, figsize=(6.5 * (len(sfs) + 1), 7), squeeze=False)
    for ax, sf in zip(axes[0], sfs, strict=False):
        results = by_sf[sf]
        systems = [s for s in SYSTEM_TITLES if s in results]
        steps = [st for st in STEPS if any(st in results[s] for s in systems)]
        height = 0.8 / max(len(systems), 1)
        for i, system in enumerate(systems):
            ys = [j + i * height for j, st in enumerate(steps) if st in results[system]]
            xs = [results[system][st].seconds for st in steps if st in results[system]]
            ax.barh(ys, xs, height=height, color=COLORS[system], label=SYSTEM_TITLES[system])
        ax.set_yticks([j + 0.4 - height / 2 for j in range(len(steps))], [STEP_TITLES[st] for st in steps])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("seconds (log scale, lower is better)")
        ax.set_title(f"TPC-H lineitem, SF {sf:g}")
        ax.grid(axis="x", which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3)
    ax = axes[0][-1]
    steps = [st for st in STEPS if any(st in by_sf[sf].get("lake", {}) for sf in sfs)]
    height = 0.8 / max(len(sfs), 1)
    for i, sf in enumerate(sfs):
        lake = by_sf[sf].get("lake", {})
        ys = [j + i * height for j, st in enumerate(steps) if st in lake]
        ax.barh(ys, [lake[st].above_start_mib for st in steps if st in lake], height=height, label=f"SF {sf:g}")
    ax.set_yticks([j + 0.4 - height / 2 for j in range(len(steps))], [STEP_TITLES[st] for st in steps])
    ax.invert_yaxis()
    ax.set_xlabel("MiB above the step's starting RSS")
    ax.set_title("lake_assets peak memory per step")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
