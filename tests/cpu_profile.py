"""Where the test suite's CPU goes: an opt-in pytest plugin and its summary (bench/RESULTS.md,
"Test suite time (session 14)").

    PYTHONPATH=. python -m pytest -p tests.cpu_profile tests/reliability   # appends to $LAKE_TEST_CPU_LOG
    python -m tests.cpu_profile $LAKE_TEST_CPU_LOG                          # CPU s per directory and module

Per test it records the CPU of pytest and of the children it reaped during the test; per module
also that of every live descendant (``/proc``: user + system of the process and of the children it
reaped), since the long-lived ones (Paimon Java's oracle, the Spark driver, fork servers) are reaped
only at the end of the session, if at all. ``/usr/bin/time`` misses a JVM nobody waits for. A
session fixture's process stopped (and not reaped) in the last module's teardown is missed here too:
end such a run with a cheap module of the same directory and count the modules before it.
"""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time
from collections.abc import Generator
from typing import IO, Any

import pytest

_TICKS = os.sysconf("SC_CLK_TCK")
_state: dict[str, Any] = {"log": None, "module": None, "start": None}


def _own_and_reaped() -> tuple[float, float]:
    me, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, reaped.ru_utime + reaped.ru_stime


def _live_descendants() -> float:
    """User + system CPU s of every live descendant and of the children each has reaped."""
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
    me, total = os.getpid(), 0.0
    for pid in parent:
        ancestor = parent[pid]
        while ancestor not in (me, 0, 1) and ancestor in parent:
            ancestor = parent[ancestor]
        if ancestor == me:
            total += cpu[pid]
    return total


def _totals() -> list[float]:
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
    _close_module()
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
