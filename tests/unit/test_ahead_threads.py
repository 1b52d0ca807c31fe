"""The helper threads kept for the commit's ahead writer (`lake_assets.ops.ahead_threads`).

A kept thread takes the next task without a thread start; a task never queues behind another (an
ahead run waits for its own committer); a failing task keeps its thread; the idle ones are bounded
and exit when unused; a forked child starts its own. Interleavings are forced with events.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import ahead_threads
from lake_assets.ops.ahead_threads import KEEP_IDLE, THREAD_NAME, forget_idle_helpers, idle_helpers, run_on_helper
from lake_assets.spec.snapshot import CommitKind

WAIT_S = 30  # a bound on every wait: a hang fails the test instead of blocking it


@pytest.fixture(autouse=True)
def fresh_helpers() -> Iterator[None]:
    forget_idle_helpers()
    yield
    forget_idle_helpers()


def _until(check: Any) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def _counting_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    started: list[str] = []
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    return started


def _run(task: Any) -> threading.Event:
    ran = threading.Event()

    def wrapped() -> None:
        try:
            task()
        finally:
            ran.set()

    assert run_on_helper(wrapped)
    return ran


def test_a_kept_thread_takes_the_next_task_without_a_start(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _counting_starts(monkeypatch)
    threads: list[threading.Thread] = []
    assert _run(lambda: threads.append(threading.current_thread())).wait(WAIT_S)
    assert _until(lambda: idle_helpers() == 1)
    assert _run(lambda: threads.append(threading.current_thread())).wait(WAIT_S)
    assert started == [THREAD_NAME]  # one start for both tasks
    assert threads[0] is threads[1] and threads[0].name == THREAD_NAME and threads[0].daemon


def test_a_task_never_waits_for_a_running_one() -> None:
    release = threading.Event()
    first = _run(lambda: release.wait(WAIT_S))
    assert _run(lambda: None).wait(WAIT_S)  # ran while the first still blocks its thread
    assert not first.is_set()
    release.set()
    assert first.wait(WAIT_S)


def test_a_failing_task_keeps_its_thread() -> None:
    threads: list[threading.Thread] = []

    def fail() -> None:
        threads.append(threading.current_thread())
        raise OSError("the task's storage failed")

    assert _run(fail).wait(WAIT_S)
    assert _until(lambda: idle_helpers() == 1)
    assert _run(lambda: threads.append(threading.current_thread())).wait(WAIT_S)
    assert threads[0] is threads[1]


def test_at_most_keep_idle_threads_wait_between_tasks() -> None:
    release = threading.Event()
    busy = [_run(lambda: release.wait(WAIT_S)) for _ in range(KEEP_IDLE + 2)]
    release.set()
    assert all(ran.wait(WAIT_S) for ran in busy)
    assert _until(lambda: idle_helpers() == KEEP_IDLE)
    time.sleep(0.05)  # the others have ended instead of joining the idle list
    assert idle_helpers() == KEEP_IDLE


def test_an_idle_thread_exits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ahead_threads, "IDLE_EXIT_S", 0.05)
    threads: list[threading.Thread] = []
    assert _run(lambda: threads.append(threading.current_thread())).wait(WAIT_S)
    threads[0].join(WAIT_S)
    assert not threads[0].is_alive() and idle_helpers() == 0
    assert _run(lambda: threads.append(threading.current_thread())).wait(WAIT_S)  # a new one then
    assert threads[1] is not threads[0]


def test_a_forked_child_starts_its_own_thread() -> None:
    assert _run(lambda: None).wait(WAIT_S)
    assert _until(lambda: idle_helpers() == 1)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's idle thread does not exist here
        code = 1
        try:
            if idle_helpers() == 0 and _run(lambda: None).wait(5):
                code = 0
        finally:
            os.write(write_end, bytes([code]))
            os._exit(code)
    os.close(write_end)
    try:
        got = os.read(read_end, 1)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    assert got == b"\x00"
    assert idle_helpers() == 1  # the parent's is still kept


def test_consecutive_commits_reuse_the_ahead_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each upsert of a DV table commits APPEND then COMPACT, the COMPACT's files written ahead:
    only the first commit starts a thread (each did before)."""
    monkeypatch.setenv("LAKE_ASSETS_CPUS", "2")  # the ahead writer runs only with a second CPU
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema, primary_keys=["k"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    started = _counting_starts(monkeypatch)
    for round_ in range(4):
        keys = range(round_ * 50, round_ * 50 + 100)
        t.write_arrow(pa.table({"k": list(keys), "v": [f"r{round_}"] * 100}, schema=schema))
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == [CommitKind.APPEND, CommitKind.COMPACT] * 4  # every round compacted inline
    assert started.count(THREAD_NAME) == 1
    rows = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert rows == {k: f"r{min(3, k // 50)}" for k in range(250)}
