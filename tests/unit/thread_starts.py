"""Helpers of the kept-thread tests (`lake_assets.ops.kept_threads`, `ops.kept_pool`): the names of
the threads started meanwhile, and a bounded wait for a condition."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

WAIT_S = 30  # a bound on every wait: a hang fails the test instead of blocking it


def counting_starts(monkeypatch: pytest.MonkeyPatch, ignore: tuple[str, ...] = ()) -> list[str]:
    """The names of the threads started from now on (in order), but those starting with ``ignore``."""
    started: list[str] = []
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if not self.name.startswith(ignore):  # startswith(()) is False
            started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    return started


def until(check: Callable[[], object]) -> bool:
    """Whether ``check`` came true within `WAIT_S` (polled every millisecond)."""
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True
