"""The top hotspots of a cProfile dump: lake_assets functions by cumulative share, and self time overall."""

from __future__ import annotations

import os
import pstats
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _name(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    if filename == "~":
        return name  # a builtin, e.g. <method 'take' of 'pyarrow.lib.Table' objects>
    path = Path(filename)
    try:
        shown = str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        parts = path.parts
        shown = os.path.join(*parts[parts.index("site-packages") + 1:]) if "site-packages" in parts else path.name
    return f"{shown}:{line}:{name}"


LakeRow = tuple[str, float, float, int]  # function, cumulative %, self %, calls
SelfRow = tuple[str, float, int]  # function, self %, calls


def summarize(prof: Path, wall_s: float, top: int = 12) -> tuple[list[LakeRow], list[SelfRow]]:
    """Top lake_assets functions by cumulative time and any functions by self time, as % of ``wall_s``.

    The stats merge every thread's profile, so functions that run in pool threads in parallel can add
    up to more than 100% of the wall time, and the main thread's wait for them shows as lock acquires.
    """
    entries = pstats.Stats(str(prof)).stats  # type: ignore[attr-defined]
    lake = []
    for func, (_cc, nc, tt, ct, _callers) in entries.items():
        if f"{os.sep}lake_assets{os.sep}" in func[0]:
            lake.append((_name(func), 100 * ct / wall_s, 100 * tt / wall_s, nc))
    lake.sort(key=lambda e: -e[1])
    self_time = sorted(((_name(f), 100 * v[2] / wall_s, v[1]) for f, v in entries.items()), key=lambda e: -e[1])
    return lake[:top], self_time[:top]


def markdown(prof: Path, step: str, sf: float, seconds: float, profiled_s: float, top: int = 12) -> list[str]:
    lake, self_time = summarize(prof, profiled_s, top)
    lines = [f"Step **{step}** at SF {sf:g}: {seconds:.2f} s measured, {profiled_s:.2f} s under cProfile "
             "(all threads; % of the profiled wall time, so parallel threads can add up to more than 100%).", "",
             "| lake_assets function (file:line:function) | cumulative % | self % | calls |", "|---|---:|---:|---:|"]
    lines += [f"| `{n}` | {c:.1f} | {s:.1f} | {k:,} |" for n, c, s, k in lake]
    lines += ["", "| self time, any function | self % | calls |", "|---|---:|---:|"]
    lines += [f"| `{n}` | {s:.1f} | {k:,} |" for n, s, k in self_time]
    return lines
