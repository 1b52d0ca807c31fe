"""The process's kept threads (`lake_assets.ops.kept_threads`), one idle list for every user.

A kept thread takes the next job without a thread start, whoever hands it (a commit's ahead run, a
`KeptThreadPool`); a job never queues behind another (an ahead run waits for its own committer); a
failing job keeps its thread; the idle ones are bounded and exit when unused; a forked child starts
its own. Interleavings are forced with events.
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
from lake_assets.ops import kept_threads
from lake_assets.ops.commit_ahead import AHEAD_THREAD_NAME
from lake_assets.ops.kept_pool import KeptThreadPool
from lake_assets.ops.kept_threads import (
    IDLE_NAME,
    forget_idle_kept_threads,
    idle_kept_threads,
    keep_idle,
    run_on_kept_thread,
)
from lake_assets.ops.write_spill import WRITER_THREAD_NAME
from lake_assets.spec.snapshot import CommitKind
from tests.unit.thread_starts import WAIT_S, counting_starts, until

JOB = "lake-test-job"


@pytest.fixture(autouse=True)
def fresh_threads() -> Iterator[None]:
    forget_idle_kept_threads()
    yield
    forget_idle_kept_threads()






def _run(task: Any) -> threading.Event:
    ran = threading.Event()

    def wrapped() -> None:
        try:
            task()
        finally:
            ran.set()

    run_on_kept_thread(wrapped, JOB)
    return ran


def test_a_kept_thread_takes_the_next_task_without_a_start(monkeypatch: pytest.MonkeyPatch) -> None:
    started = counting_starts(monkeypatch)
    threads: list[threading.Thread] = []
    names: list[str] = []

    def job() -> None:
        threads.append(threading.current_thread())
        names.append(threading.current_thread().name)

    assert _run(job).wait(WAIT_S)
    assert until(lambda: idle_kept_threads() == 1)
    assert _run(job).wait(WAIT_S)
    assert len(started) == 1 and started[0].startswith(JOB)  # one start for both jobs
    assert threads[0] is threads[1] and threads[0].daemon
    assert names[0] == names[1] == started[0]  # named for what it does: the job, then idle
    assert until(lambda: threads[0].name.startswith(IDLE_NAME))


def test_one_idle_list_serves_pools_and_ahead_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread a `KeptThreadPool` handed back runs the next ahead-style job, and the other way
    round: one cache, no start for either."""
    pool = KeptThreadPool(max_workers=1, thread_name=WRITER_THREAD_NAME)
    first = pool.submit(threading.current_thread).result(WAIT_S)
    pool.shutdown()
    assert first.name.startswith(IDLE_NAME) and idle_kept_threads() == 1
    started = counting_starts(monkeypatch)
    threads: list[threading.Thread] = []
    assert _run(lambda: threads.append(threading.current_thread())).wait(WAIT_S)
    assert until(lambda: idle_kept_threads() == 1)
    pool = KeptThreadPool(max_workers=1, thread_name=WRITER_THREAD_NAME)
    again = pool.submit(lambda: threading.current_thread().name).result(WAIT_S)
    pool.shutdown()
    number = first.name.rsplit("-", 1)[1]
    assert started == [] and threads == [first] and again == f"{WRITER_THREAD_NAME}-{number}"


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
    assert until(lambda: idle_kept_threads() == 1)
    assert _run(lambda: threads.append(threading.current_thread())).wait(WAIT_S)
    assert threads[0] is threads[1]


def test_at_most_keep_idle_threads_wait_between_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    assert keep_idle() >= 2 + 2  # two writers' worth and two ahead runs
    monkeypatch.setattr(kept_threads, "keep_idle", lambda: 2)
    release = threading.Event()
    busy = [_run(lambda: release.wait(WAIT_S)) for _ in range(4)]
    release.set()
    assert all(ran.wait(WAIT_S) for ran in busy)
    assert until(lambda: idle_kept_threads() == 2)
    time.sleep(0.05)  # the others have ended instead of joining the idle list
    assert idle_kept_threads() == 2


def test_an_idle_thread_exits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_threads, "IDLE_EXIT_S", 0.05)
    threads: list[threading.Thread] = []
    assert _run(lambda: threads.append(threading.current_thread())).wait(WAIT_S)
    threads[0].join(WAIT_S)
    assert not threads[0].is_alive() and idle_kept_threads() == 0
    assert _run(lambda: threads.append(threading.current_thread())).wait(WAIT_S)  # a new one then
    assert threads[1] is not threads[0]


def test_a_forked_child_starts_its_own_thread() -> None:
    assert _run(lambda: None).wait(WAIT_S)
    assert until(lambda: idle_kept_threads() == 1)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's idle thread does not exist here
        code = 1
        try:
            if idle_kept_threads() == 0 and _run(lambda: None).wait(5):
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
    assert idle_kept_threads() == 1  # the parent's is still kept


def test_consecutive_commits_reuse_the_ahead_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each upsert of a DV table commits APPEND then COMPACT, the COMPACT's files written ahead:
    only the first round starts threads (its writer's and its ahead run's; each did before)."""
    monkeypatch.setenv("LAKE_ASSETS_CPUS", "2")  # the ahead writer runs only with a second CPU
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema, primary_keys=["k"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    started = counting_starts(monkeypatch)
    per_round = []
    for round_ in range(4):
        before = len(started)
        keys = range(round_ * 50, round_ * 50 + 100)
        t.write_arrow(pa.table({"k": list(keys), "v": [f"r{round_}"] * 100}, schema=schema))
        kept = (AHEAD_THREAD_NAME, WRITER_THREAD_NAME)
        per_round.append([name for name in started[before:] if name.startswith(kept)])
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == [CommitKind.APPEND, CommitKind.COMPACT] * 4  # every round compacted inline
    assert sum(name.startswith(AHEAD_THREAD_NAME) for name in per_round[0]) == 1
    assert per_round[1:] == [[]] * 3, per_round
    rows = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert rows == {k: f"r{min(3, k // 50)}" for k in range(250)}
