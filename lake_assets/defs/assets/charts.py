"""A markdown bar chart of data-file sizes (the UI renders markdown metadata; no plotting library)."""

from __future__ import annotations

from lake_assets.table import Table

_BAR = "█"


def file_sizes(table: Table) -> list[int]:
    """Sizes of the live data files of the latest snapshot (manifests only)."""
    return [f.file_size for split in table.plan() for f in split.files]


def size_chart(before: list[int], after: list[int] | None = None, width: int = 24) -> str:
    """A markdown bar chart of data-file sizes in power-of-4 bins, before (and after) a change."""
    series = {"files": before} if after is None else {"before": before, "after": after}
    bins = sorted({_bin(s) for sizes in series.values() for s in sizes})
    if not bins:
        return "_no data files_"
    counts = {name: {b: sum(1 for s in sizes if _bin(s) == b) for b in bins} for name, sizes in series.items()}
    top = max(max(c.values()) for c in counts.values()) or 1
    head = "| file size | " + " | ".join(series) + " |\n|---|" + "---|" * len(series) + "\n"
    rows = []
    for b in bins:
        cells = [f"{_BAR * max(1 if n else 0, round(width * n / top))} {n}" for n in (counts[k][b] for k in series)]
        rows.append(f"| ≤ {_human(4 ** b)} | " + " | ".join(cells) + " |")
    return head + "\n".join(rows)


def _bin(size: int) -> int:
    """Smallest b with size ≤ 4**b (bins of ×4: ≤1 KiB, ≤4 KiB, ≤16 KiB, ...), at least 1 KiB."""
    b = 5
    while 4**b < size:
        b += 1
    return b


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n //= 1024
    return f"{n} PiB"
