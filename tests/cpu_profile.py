"""Where the test suite's CPU goes: an opt-in pytest plugin and its summary (bench/RESULTS.md,
"Test suite time (session 14)").

    PYTHONPATH=. python -m pytest -p tests.cpu_profile tests/reliability   # appends to $LAKE_TEST_CPU_LOG
    python -m tests.cpu_profile $LAKE_TEST_CPU_LOG                          # CPU s per directory and module

Per test it records the CPU of pytest and of the children it reaped during the test (an orphan's
within a poll of its exit); per module
also that of every live descendant (``/proc``: user + system of the process and of the children it
reaped), since the long-lived ones (Paimon Java's oracle, the Spark driver, fork servers) are reaped
only at the end of the session, if at all. ``/usr/bin/time`` misses a JVM nobody waits for. A
session fixture's process stopped (and not reaped) in the last module's teardown is missed here too:
end such a run with a cheap module of the same directory and count the modules before it.

Orphans (session 17): pyspark's launcher starts the driver's JVM and never waits for it, so when a
job run by ``python -m lake_assets.spark.jobs.X`` exits, its JVM used to be reparented to init and
its CPU was in nobody's rusage. The plugin makes pytest a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``): such an orphan is reparented to pytest instead, counted among
the live descendants while it runs and, once :class:`_OrphanReaper` has reaped it, in pytest's
``RUSAGE_CHILDREN``. It reaps only processes it saw with another parent before they came to pytest
(``waitpid`` on that pid alone), never a child pytest started itself, whose exit status belongs to
``subprocess`` or ``multiprocessing``. An orphan whose first sight is already as pytest's child (its
parent lived less than one poll) is left alone: a zombie until the session ends, its CPU uncounted.
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Generator
from typing import IO, Any

import pytest

_TICKS = os.sysconf("SC_CLK_TCK")
_state: dict[str, Any] = {"log": None, "module": None, "start": None, "reaper": None}
_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
# A job's launcher lives for the whole job, so its JVM is seen under it many times. A poll reads every
# /proc/N/stat (~2 ms at 100 processes): ~0.5% of a core in pytest's own CPU at 2 polls a second.
_POLL_S = float(os.environ.get("LAKE_TEST_CPU_POLL_S", "0.5"))


def _own_and_reaped() -> tuple[float, float]:
    me, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, reaped.ru_utime + reaped.ru_stime


def _processes() -> tuple[dict[int, int], dict[int, float]]:
    """Every process's parent and its user + system CPU s with that of the children it reaped."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after the command name, which may hold spaces
        parent[int(name)] = int(fields[1])
        cpu[int(name)] = sum(int(f) for f in fields[11:15]) / _TICKS  # utime stime cutime cstime
    return parent, cpu


def _descendants(parent: dict[int, int]) -> list[int]:
    me, found = os.getpid(), []
    for pid in parent:
        ancestor = parent[pid]
        while ancestor not in (me, 0, 1) and ancestor in parent:
            ancestor = parent[ancestor]
        if ancestor == me:
            found.append(pid)
    return found


def _live_descendants() -> float:
    """User + system CPU s of every live descendant and of the children each has reaped."""
    parent, cpu = _processes()
    return sum(cpu[pid] for pid in _descendants(parent))


class _OrphanReaper:
    """Adopts the orphans of pytest's descendants (pytest is their subreaper) and reaps them.

    A background thread polls ``/proc`` every ``_POLL_S``: a pid last seen under another parent that
    is now pytest's child was adopted, and only such pids are ever waited for."""

    def __init__(self) -> None:
        self._me = os.getpid()
        self._last_parent: dict[int, int] = {}  # descendant -> its parent at the last poll
        self._adopted: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.reaped = 0
        self._thread = threading.Thread(target=self._run, name="cpu-profile-orphan-reaper", daemon=True)

    def start(self) -> bool:
        """Become the subreaper and start polling; False (nothing changed) where prctl refuses."""
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return False
        self._thread.start()
        return True

    def wait_for_adopted(self, timeout: float) -> None:
        """Give the orphans still running (a JVM shutting down after its launcher) ``timeout`` s to exit."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            with self._lock:
                if not self._adopted:
                    return
            time.sleep(_POLL_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()

    def _run(self) -> None:
        while not self._stop.wait(_POLL_S):
            self.poll()

    def poll(self) -> None:
        with self._lock:
            parent, _ = _processes()
            now = {pid: parent[pid] for pid in _descendants(parent)}
            for pid, ppid in now.items():
                before = self._last_parent.get(pid)
                if ppid == self._me and before is not None and before != self._me:
                    self._adopted.add(pid)
            self._last_parent = now
            for pid in list(self._adopted):
                try:
                    done, _status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:  # gone (cannot happen unless someone else waited for it)
                    done = pid
                if done == pid:
                    self._adopted.discard(pid)
                    self._last_parent.pop(pid, None)
                    self.reaped += 1


def _totals() -> list[float]:
    reaper: _OrphanReaper | None = _state["reaper"]
    if reaper is not None:  # first, so that an orphan that exited since the last poll is in RUSAGE_CHILDREN
        reaper.poll()
    return [*_own_and_reaped(), _live_descendants()]


def _write(record: dict[str, Any]) -> None:
    log: IO[str] = _state["log"]
    log.write(json.dumps(record) + "\n")
    log.flush()


def _close_module() -> None:
    if _state["module"] is not None:
        _write({"event": "module", "module": _state["module"], "start": _state["start"], "end": _totals()})


def pytest_sessionstart(session: pytest.Session) -> None:
    _state["log"] = open(os.environ.get("LAKE_TEST_CPU_LOG", "test-cpu.jsonl"), "a")  # noqa: SIM115 - the session's
    reaper = _OrphanReaper()
    if reaper.start():
        _state["reaper"] = reaper


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    module = item.nodeid.split("::")[0]
    if module != _state["module"]:
        _close_module()
        _state["module"], _state["start"] = module, _totals()
    own, reaped = _own_and_reaped()
    wall = time.monotonic()
    yield
    own2, reaped2 = _own_and_reaped()
    _write({"event": "test", "id": item.nodeid, "own": own2 - own, "reaped": reaped2 - reaped,
            "wall": time.monotonic() - wall})


def pytest_sessionfinish(session: pytest.Session) -> None:
    reaper: _OrphanReaper | None = _state["reaper"]
    if reaper is not None:  # the last module's orphans are its cost too
        reaper.wait_for_adopted(timeout=60.0)
    _close_module()
    if reaper is not None:
        reaper.stop()
        _write({"event": "orphans", "reaped": reaper.reaped})
    _state["log"].close()


def summary(path: str) -> str:
    """CPU s per directory and the 25 costliest modules of a log."""
    by_dir: dict[str, float] = collections.defaultdict(float)
    modules = []
    with open(path) as fh:
        for line in fh:
            record = json.loads(line)
            if record["event"] == "module":
                cost = sum(record["end"]) - sum(record["start"])
                by_dir[os.path.dirname(record["module"])] += cost
                modules.append((cost, record["module"]))
    lines = [f"{cost:8.1f}  {name}" for name, cost in sorted(by_dir.items())]
    lines += ["", *(f"{cost:8.1f}  {name}" for cost, name in sorted(modules, reverse=True)[:25])]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(sys.argv[1]))
