"""Read-ahead workers (`ops.streaming_read.read_ahead_of`) are the process's kept threads: a read
starts none once some are idle, and a read closed, dropped (collected, in a reference cycle
too) or failing to start its threads leaves no worker behind - none blocked on a full queue, none
holding interpreter exit."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pytest

from lake_assets.ops.kept_threads import forget_idle_kept_threads, keep_idle
from lake_assets.ops.streaming_read import READ_AHEAD_THREAD_NAME, read_ahead_of
from tests.unit.thread_starts import WAIT_S, counting_starts, until


@pytest.fixture(autouse=True)
def fresh_threads() -> Iterator[None]:
    forget_idle_kept_threads()
    yield
    forget_idle_kept_threads()


def _endless(item: int) -> Iterator[int]:
    """More results than a queue holds: a worker not stopped blocks on its full queue."""
    n = 0
    while True:
        yield item * 1_000_000 + n
        n += 1


def _producing() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(READ_AHEAD_THREAD_NAME + "-")]


def test_a_thousand_dropped_reads_leave_no_worker_and_start_threads_once(monkeypatch) -> None:
    before = threading.active_count()
    starts = counting_starts(monkeypatch)
    for i in range(1000):
        it = read_ahead_of([1, 2, 3], _endless, workers=2, depth=1)
        assert next(it) == 1_000_000
        if i % 2:
            del it  # dropped: collected at once, which closes it
        else:
            it.close()
    assert _producing() == []  # every worker back on the idle list (the close waits for that)
    assert len(starts) <= 2  # threads kept from the first read served the other 999 (was 2 per read)
    assert threading.active_count() <= before + keep_idle()


def test_a_read_dropped_in_a_reference_cycle_releases_its_workers_when_collected() -> None:
    it = read_ahead_of([1, 2, 3], _endless, workers=3, depth=1)
    next(it)
    assert until(lambda: len(_producing()) == 3)  # blocked on full queues
    cycle: list[object] = [it]
    cycle.append(cycle)
    del it, cycle
    gc.collect()
    assert until(lambda: _producing() == [])


def test_a_worker_that_cannot_start_is_an_error_and_stops_the_others(monkeypatch) -> None:
    real_start = threading.Thread.start
    calls = []

    def start(self: threading.Thread) -> None:
        calls.append(self.name)
        if len(calls) == 2:
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    it = read_ahead_of([1, 2, 3], _endless, workers=2, depth=1)
    with pytest.raises(RuntimeError, match=r"Cannot start read-ahead worker 2 of 2 .*can't start new thread"):
        next(it)
    assert len(calls) == 2
    assert until(lambda: _producing() == [])  # the first worker stopped (it polled forever before)


def test_interpreter_exit_is_not_held_by_read_ahead_workers() -> None:
    """A read left open at exit (held by a module global, one worker blocked on its full queue, one
    inside a ``produce`` that does not return) is not waited for: the process ends."""
    script = textwrap.dedent("""
        import threading, time
        from lake_assets.ops.streaming_read import read_ahead_of

        stuck = threading.Event()

        def produce(item):
            if item == 1:
                stuck.set()
                time.sleep(3600)  # a worker that never gets to its next result
            while True:
                yield item

        held = read_ahead_of([0, 1, 2, 3], produce, workers=2, depth=1)
        assert next(held) == 0
        assert stuck.wait(30)
        print("exiting", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "exiting\n"
