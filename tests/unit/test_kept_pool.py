"""A `KeptThreadPool` (`lake_assets.ops.kept_pool`): the writer's threads kept across writers.

An upsert round after the first starts no thread; a writer never waits for another's tasks (each
has its own threads); a task's failure is its future's, as `ThreadPoolExecutor` reported it, and the
thread lives on; `shutdown` waits for the tasks submitted; idle threads are bounded and exit when
unused; a forked child and interpreter exit behave. Interleavings are forced with events.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import kept_pool, kept_threads
from lake_assets.ops.kept_pool import KeptThreadPool
from lake_assets.ops.kept_threads import IDLE_NAME, forget_idle_kept_threads, idle_kept_threads
from lake_assets.ops.write_spill import WRITER_THREAD_NAME as THREAD_NAME
from tests.unit.thread_starts import WAIT_S, counting_starts, until

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _pool(max_workers: int) -> KeptThreadPool:
    """A writer's pool, as `TableWriter._worker_pool` makes it."""
    return KeptThreadPool(max_workers=max_workers, thread_name=THREAD_NAME)


@pytest.fixture(autouse=True)
def fresh_threads() -> Iterator[None]:
    forget_idle_kept_threads()
    yield
    forget_idle_kept_threads()






@pytest.mark.parametrize("dv", [False, True], ids=["plain", "deletion-vectors"])
def test_an_upsert_round_after_the_first_starts_no_writer_thread(tmp_path: Path, dv: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round is ``write_arrow .. commit .. close`` of a new writer; its two buckets flush and
    compact on the writer's threads. A thread per writer started two in every round."""
    monkeypatch.setenv("LAKE_ASSETS_CPUS", "2")
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    options = {"bucket": "2", **({"deletion-vectors.enabled": "true"} if dv else {})}
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options=options)
    rng = np.random.default_rng(3)
    started = counting_starts(monkeypatch)
    per_round = []
    for round_ in range(6):
        before = len(started)
        keys = rng.choice(400, 60, replace=False)
        t.write_arrow(pa.table({"k": keys, "v": np.full(60, round_)}, schema=SCHEMA))
        per_round.append(sum(1 for name in started[before:] if name.startswith(THREAD_NAME)))
    assert 1 <= per_round[0] <= 2 and per_round[1:] == [0] * 5, per_round
    rows = t.to_arrow()
    assert rows.num_rows == len(set(rows.column("k").to_pylist()))


def test_a_writer_never_waits_for_another_writers_tasks() -> None:
    """Writer A's every thread waits on a task of A's queued behind them (as a flush-compact
    schedule's workers wait for flushes); writer B's tasks still run. One bounded queue shared by
    both would deadlock here."""
    a, b = _pool(max_workers=2), _pool(max_workers=2)
    release = threading.Event()
    try:
        blocked = [a.submit(release.wait, WAIT_S) for _ in range(2)]
        assert until(lambda: a.threads == 2)
        done = [b.submit(lambda i=i: i * 2) for i in range(4)]
        assert [f.result(timeout=WAIT_S) for f in done] == [0, 2, 4, 6]
        assert not any(f.done() for f in blocked)
    finally:
        release.set()
        a.shutdown()
        b.shutdown()
    assert all(f.result() is True for f in blocked)


def test_concurrent_writers_of_two_tables_in_threads(tmp_path: Path) -> None:
    """Two tables written at once from two threads, many rounds each, every round flushing and
    compacting several buckets on the writers' threads: all land, none hangs."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    tables = [cat.create_table(f"db.t{i}", SCHEMA, primary_keys=["k"], options={"bucket": "3"}) for i in range(2)]
    errors: list[BaseException] = []

    def rounds(t: Any) -> None:
        try:
            for r in range(8):
                t.write_arrow(pa.table({"k": np.arange(r * 50, r * 50 + 200), "v": np.full(200, r)}, schema=SCHEMA))
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=rounds, args=(t,)) for t in tables]
    for w in workers:
        w.start()
    for w in workers:
        w.join(WAIT_S * 4)
    assert not any(w.is_alive() for w in workers) and not errors
    for t in tables:
        got = t.to_arrow().sort_by("k")
        assert got.column("k").to_pylist() == list(range(550))
        assert got.column("v").to_pylist()[-200:] == [7] * 200


class _Stop(BaseException):
    """Not an Exception: still the task's future's, as the pool reported it."""


def test_a_failing_task_is_its_futures_and_the_thread_lives_on() -> None:
    pool = _pool(max_workers=1)
    try:
        error, stop = OSError("disk gone"), _Stop()

        def raise_(exc: BaseException) -> None:
            raise exc

        assert pool.submit(raise_, error).exception(WAIT_S) is error
        assert pool.submit(raise_, stop).exception(WAIT_S) is stop
        names = [pool.submit(lambda: threading.current_thread()).result(WAIT_S) for _ in range(2)]
        assert names[0] is names[1] and names[0].is_alive()
    finally:
        pool.shutdown()


def test_a_flush_failure_surfaces_from_prepare_commit_and_the_next_writer_works(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lake_assets.ops.level0_flush import Level0Flush

    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    real = Level0Flush.flush
    failure = OSError("No space left on device")

    def flush(self: Any, buf: Any) -> None:
        if buf.bucket == 1:
            raise failure
        real(self, buf)

    monkeypatch.setattr(Level0Flush, "flush", flush)
    w = t.new_writer("u")
    w.write_arrow(pa.table({"k": np.arange(100), "v": np.zeros(100, dtype=np.int64)}, schema=SCHEMA))
    with pytest.raises(OSError) as raised:
        w.prepare_commit()
    assert raised.value is failure
    w.abort()
    w.close()
    monkeypatch.setattr(Level0Flush, "flush", real)
    t.write_arrow(pa.table({"k": np.arange(100), "v": np.ones(100, dtype=np.int64)}, schema=SCHEMA))
    assert t.to_arrow().column("v").to_pylist() == [1] * 100


def test_shutdown_waits_for_the_tasks_submitted_then_refuses_new_ones() -> None:
    pool = _pool(max_workers=2)
    ran: list[int] = []
    gate = threading.Event()
    futures = [pool.submit(lambda i=i: (gate.wait(WAIT_S), ran.append(i))) for i in range(5)]
    threading.Timer(0.05, gate.set).start()
    pool.shutdown()
    assert sorted(ran) == list(range(5)) and all(f.done() for f in futures)
    assert pool.threads == 0 and idle_kept_threads() == 2
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(print)


def test_shutdown_can_cancel_the_tasks_not_started() -> None:
    pool = _pool(max_workers=1)
    gate = threading.Event()
    first = pool.submit(gate.wait, WAIT_S)
    assert until(lambda: first.running())
    later = [pool.submit(lambda: 1) for _ in range(3)]
    threading.Timer(0.05, gate.set).start()
    pool.shutdown(cancel_futures=True)
    assert first.result() is True and all(f.cancelled() for f in later)


def test_idle_threads_are_bounded_and_exit_when_unused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_threads, "keep_idle", lambda: 2)
    pools = [_pool(max_workers=2) for _ in range(2)]
    gate = threading.Event()
    futures = [p.submit(gate.wait, WAIT_S) for p in pools for _ in range(2)]  # four threads busy
    assert until(lambda: sum(p.threads for p in pools) == 4)
    kept = {th for th in threading.enumerate() if th.name.startswith(THREAD_NAME)}
    gate.set()
    for p in pools:
        p.shutdown()
    assert all(f.result() for f in futures)
    assert idle_kept_threads() == 2  # the other two exited
    assert until(lambda: sum(th.is_alive() for th in kept) == 2)
    monkeypatch.setattr(kept_threads, "IDLE_EXIT_S", 0.05)
    forget_idle_kept_threads()  # those two wait with the old timeout
    pool = _pool(max_workers=1)
    thread = pool.submit(threading.current_thread).result(WAIT_S)
    pool.shutdown()
    assert until(lambda: not thread.is_alive()) and idle_kept_threads() == 0


def test_a_writer_never_closed_hands_its_threads_back_once_collected() -> None:
    pools = [_pool(max_workers=2)]  # the only reference: cleared below
    gate = threading.Event()
    futures = [pools[0].submit(gate.wait, WAIT_S) for _ in range(2)]
    assert until(lambda: pools[0].threads == 2)
    gate.set()
    assert all(f.result(WAIT_S) for f in futures)
    pools.clear()
    gc.collect()
    assert until(lambda: idle_kept_threads() == 2)
    assert all(th.name.startswith(IDLE_NAME) for th in threading.enumerate()
               if th.name.startswith((THREAD_NAME, IDLE_NAME)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_starts_its_own_threads(tmp_path: Path) -> None:
    """The child inherits the idle list and a writer's executor, none of their threads: its tasks
    run on threads of its own, and a table write in the child lands."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": [0, 0, 0]}, schema=SCHEMA))  # leaves idle threads
    inherited = _pool(max_workers=2)
    assert inherited.submit(lambda: 1).result(WAIT_S) == 1
    assert idle_kept_threads() >= 1
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 1
        try:
            alarm = threading.Timer(WAIT_S, lambda: os._exit(3))
            alarm.daemon = True
            alarm.start()
            ok = idle_kept_threads() == 0 and inherited.threads == 0
            ok = ok and inherited.submit(lambda: 2).result(WAIT_S) == 2
            t.write_arrow(pa.table({"k": [1, 2, 3], "v": [9, 9, 9]}, schema=SCHEMA))
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert t.to_arrow().sort_by("k").column("v").to_pylist() == [9, 9, 9]
    assert inherited.submit(lambda: 3).result(WAIT_S) == 3  # the parent's threads are unaffected
    inherited.shutdown()


def test_exit_waits_for_the_tasks_handed_to_a_writers_threads(tmp_path: Path) -> None:
    """As `ThreadPoolExecutor`'s at exit: a task already handed over (a flush of an interrupted
    writer) ends before the process does, not cut off mid-write."""
    out = tmp_path / "done"
    script = f"""
import time, lake_assets
from lake_assets.ops.kept_pool import KeptThreadPool
print(lake_assets.__file__)
pool = KeptThreadPool(max_workers=1)
pool.submit(time.sleep, 0.2)
pool.submit(lambda: open({str(out)!r}, "w").write("written"))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT_S,
                          env={**os.environ, "PYTHONPATH": str(Path(kept_pool.__file__).parents[2])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(Path(kept_pool.__file__).parents[1] / "__init__.py")
    assert out.read_text() == "written"


def test_an_interrupted_flush_round_hands_the_threads_back_for_the_next_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while ``prepare_commit`` waits for its buckets' flushes: the running ones end, the
    interrupt is raised, `close` hands the threads back, and the next writer uses them."""
    from lake_assets.ops import flush_schedule

    monkeypatch.setenv("LAKE_ASSETS_CPUS", "2")
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "4"})
    real_wait = flush_schedule.wait
    calls = [0]

    def interrupted_wait(futures: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise KeyboardInterrupt
        return real_wait(futures, *args, **kwargs)

    monkeypatch.setattr(flush_schedule, "wait", interrupted_wait)
    w = t.new_writer("u")
    w.write_arrow(pa.table({"k": np.arange(400), "v": np.zeros(400, dtype=np.int64)}, schema=SCHEMA))
    with pytest.raises(KeyboardInterrupt):
        w.prepare_commit()
    w.abort()
    w.close()
    assert calls[0] == 2 and idle_kept_threads() == 2  # the schedule waited for its running tasks
    monkeypatch.setattr(flush_schedule, "wait", real_wait)
    started = counting_starts(monkeypatch)
    t.write_arrow(pa.table({"k": np.arange(400), "v": np.ones(400, dtype=np.int64)}, schema=SCHEMA))
    assert not [name for name in started if name.startswith(THREAD_NAME)]
    assert t.to_arrow().column("v").to_pylist() == [1] * 400


def test_a_bad_cpu_setting_made_meanwhile_does_not_keep_close_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The idle bound follows `usable_cpus`, which refuses a bad ``LAKE_ASSETS_CPUS``: the thread
    still hands itself back (and exits), so the writer's close returns."""
    pool = _pool(max_workers=1)
    thread = pool.submit(threading.current_thread).result(WAIT_S)
    monkeypatch.setenv("LAKE_ASSETS_CPUS", "many")
    done = threading.Thread(target=pool.shutdown, daemon=True)
    done.start()
    done.join(WAIT_S)
    assert not done.is_alive() and pool.threads == 0
    assert until(lambda: not thread.is_alive()) and idle_kept_threads() == 0
