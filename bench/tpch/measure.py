"""Per-step wall time and peak memory inside a worker process (stdlib only; psutil for process trees).

Peak memory of a single process is exact: the kernel's high-water mark (``VmHWM``) is reset to the
current RSS before each step (``/proc/self/clear_refs`` ← ``5``) and read after it. A Spark step
spans a tree (driver, JVM, Python workers), so `Meter(tree=True)` samples the summed RSS of the
tree every ``TREE_SAMPLE_S`` instead. Results are appended to a JSON file after every step, so a
worker that dies or times out still leaves what it measured.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MiB = 1024 * 1024
TREE_SAMPLE_S = 0.05
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


@dataclass
class StepRecord:
    """One timed step: ``rows`` is the input (writes) or output (reads) row count."""

    step: str
    seconds: float
    rows: int
    start_rss_mib: float
    peak_rss_mib: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def peak_above_start_mib(self) -> float:
        return max(0.0, self.peak_rss_mib - self.start_rss_mib)


@dataclass
class Check:
    """One correctness check: ``detail`` says what differs when ``ok`` is false."""

    name: str
    ok: bool
    detail: str = ""


def _status_kib(key: str) -> int:
    match = re.search(rf"^{key}:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    return int(match.group(1)) if match else 0


def _reset_peak() -> bool:
    """Reset this process's high-water mark to its current RSS; False when the kernel refuses."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def _release_unused() -> None:
    """Collect garbage and let Arrow's allocator return freed pages, so a step starts from live memory."""
    gc.collect()
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


class _TreeSampler:
    """Samples the summed RSS of this process and all its descendants in a background thread."""

    def __init__(self) -> None:
        import psutil

        self._root = psutil.Process(os.getpid())
        self._stop = threading.Event()
        self.peak = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        import psutil

        total = 0
        for proc in [self._root, *self._root.children(recursive=True)]:
            try:
                total += proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            self._stop.wait(TREE_SAMPLE_S)

    def __enter__(self) -> _TreeSampler:
        self.peak = self.rss()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.rss())


class Meter:
    """Times steps and records their peak memory; writes ``{system, steps, checks, ...}`` to ``out``."""

    def __init__(self, system: str, out: Path, *, tree: bool = False) -> None:
        self.system = system
        self.out = out
        self.tree = tree
        self.steps: list[StepRecord] = []
        self.checks: list[Check] = []
        self.info: dict[str, Any] = {}
        if out.exists():  # a later phase of the same system appends to the earlier one's file
            prior = json.loads(out.read_text())
            self.steps = [StepRecord(**s) for s in prior.get("steps", [])]
            self.checks = [Check(**c) for c in prior.get("checks", [])]
            self.info = prior.get("info", {})

    @contextmanager
    def step(self, name: str, rows: int = 0) -> Iterator[dict[str, Any]]:
        """Time the body; the yielded dict may set ``rows`` and any extra fields to record."""
        _release_unused()
        extra: dict[str, Any] = {"rows": rows}
        if self.tree:
            with _TreeSampler() as sampler:
                start_rss = sampler.peak
                started = time.perf_counter()
                yield extra
                seconds = time.perf_counter() - started
            peak = sampler.peak
        else:
            exact = _reset_peak()
            start_rss = _status_kib("VmRSS") * 1024
            started = time.perf_counter()
            yield extra
            seconds = time.perf_counter() - started
            peak = _status_kib("VmHWM") * 1024 if exact else _status_kib("VmRSS") * 1024
        rows = int(extra.pop("rows"))
        self.steps.append(StepRecord(name, seconds, rows, start_rss / MiB, peak / MiB, extra))
        self.save()

    def check(self, name: str, problem: str | None) -> bool:
        """Record a correctness check (``problem`` None means it passed); returns whether it passed."""
        self.checks.append(Check(name, problem is None, problem or ""))
        self.save()
        return problem is None

    def save(self) -> None:
        data = {"system": self.system, "steps": [asdict(s) for s in self.steps],
                "checks": [asdict(c) for c in self.checks], "info": self.info}
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.out)

