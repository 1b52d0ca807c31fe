"""cProfile hotspots of a benchmark step: the top functions by self time, then the lake_assets ones
by cumulative time (``bench_maintenance.py --profile``)."""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable
from pathlib import Path
from typing import Any

Hotspot = tuple[str, float, float]  # file:function, % self time, % cumulative time


def profiled(fn: Callable[[], Any], prof_path: Path) -> list[Hotspot]:
    """cProfile ``fn()``: the top functions by self time, then the lake_assets ones by cumulative time."""
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    prof.dump_stats(str(prof_path))
    stats = pstats.Stats(prof)
    total = stats.total_tt  # type: ignore[attr-defined]
    by_name: dict[str, list[float]] = {}
    for (file, _line, func), (_cc, _nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        agg = by_name.setdefault(f"{_short(file)}:{func}", [0.0, 0.0])
        agg[0] += tt
        agg[1] = max(agg[1], ct)
    rows = [(name, 100 * tt / total, 100 * ct / total) for name, (tt, ct) in by_name.items()]
    top_self = sorted(rows, key=lambda r: -r[1])[:12]
    top_lake = sorted((r for r in rows if r[0].startswith("lake_assets/")), key=lambda r: -r[2])[:12]
    return top_self + [r for r in top_lake if r not in top_self]


def _short(file: str) -> str:
    """A profiled file's name from its package on (``lake_assets/...``, ``pyarrow/...``)."""
    if "/lake_assets/" in file:
        return "lake_assets/" + file.rsplit("/lake_assets/", 1)[1]
    if "/site-packages/" in file:
        return file.split("/site-packages/", 1)[1]
    return file
