"""The order of a writer's flushes and inline compactions (`ops.flush_schedule`, issue 14): a
compaction runs beside another thread's flush, not beside another compaction, while flushes are
left; each after its own flush; a failure stops the schedule and the first one in bucket order is
raised."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from lake_assets.ops.flush_schedule import FlushCompactSchedule, compaction_slots

WAIT_S = 10  # a bound on waiting for another thread, never a timing the test measures


class Log:
    """Task starts and ends in the order they happened (a counter under a lock, not a clock)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()

    def add(self, what: str, kind: str, bucket: int) -> None:
        with self._lock:
            self.events.append((what, kind, bucket))

    def count(self, what: str, kind: str) -> int:
        with self._lock:
            return sum(1 for w, k, _ in self.events if (w, k) == (what, kind))


@pytest.fixture
def pool():
    with ThreadPoolExecutor(max_workers=4) as executor:
        yield executor


def test_a_flushed_bucket_waits_for_the_running_compaction_and_its_thread_flushes_on(pool) -> None:
    log = Log()
    first_compaction = threading.Event()
    third_flush = threading.Event()

    def flush(bucket: int) -> str:
        log.add("start", "flush", bucket)
        if log.count("start", "flush") == 3:
            third_flush.set()
        if bucket == 1:  # ends once bucket 0 compacts: bucket 1 is then ready while a compaction runs
            assert first_compaction.wait(WAIT_S)
        log.add("end", "flush", bucket)
        return f"msg{bucket}"

    def compact(bucket: int, msg: str) -> None:
        assert msg == f"msg{bucket}"
        log.add("start", "compact", bucket)
        if not first_compaction.is_set():
            first_compaction.set()
            # the other thread flushed bucket 1 meanwhile: it must flush bucket 2 now, not compact 1
            assert third_flush.wait(WAIT_S), "the free thread waited or compacted instead of flushing"
        log.add("end", "compact", bucket)

    FlushCompactSchedule([0, 1, 2, 3], flush, compact, workers=2).run(pool)
    events = log.events
    # bucket 2's flush started while bucket 0 compacted, and before bucket 1 (flushed) compacted
    assert (events.index(("start", "compact", 0)) < events.index(("start", "flush", 2))
            < min(events.index(("end", "compact", 0)), events.index(("start", "compact", 1))))
    assert sorted(b for what, kind, b in events if (what, kind) == ("start", "compact")) == [0, 1, 2, 3]
    # while a flush was left, no two compactions ran at once
    running: set[int] = set()
    flushes_started = 0
    for what, kind, bucket in log.events:
        if kind == "flush" and what == "start":
            flushes_started += 1
        elif kind == "compact" and what == "start":
            assert not running or flushes_started == 4, log.events
            running.add(bucket)
        elif kind == "compact":
            running.discard(bucket)


def test_with_nothing_left_to_flush_ready_compactions_run_side_by_side(pool) -> None:
    both = threading.Barrier(2, timeout=WAIT_S)

    def compact(bucket: int, msg: str) -> None:
        both.wait()  # breaks (BrokenBarrierError) unless the two compactions run at once

    FlushCompactSchedule([0, 1], lambda b: "m", compact, workers=2).run(pool)


def _random_schedule(rng: random.Random, pool: ThreadPoolExecutor) -> None:
    buckets = list(range(rng.randint(1, 9)))
    quiet = {b for b in buckets if rng.random() < 0.3}  # their flush hands nothing over
    log = Log()
    pause = threading.Event()  # never set: a wait on it is a short pause

    def flush(bucket: int) -> str | None:
        log.add("start", "flush", bucket)
        pause.wait(rng.random() / 1000)
        log.add("end", "flush", bucket)
        return None if bucket in quiet else f"m{bucket}"

    def compact(bucket: int, msg: str) -> None:
        assert msg == f"m{bucket}"
        log.add("start", "compact", bucket)
        pause.wait(rng.random() / 1000)
        log.add("end", "compact", bucket)

    schedule = FlushCompactSchedule(buckets, flush, compact, workers=rng.randint(1, 4))
    schedule.run(pool)
    assert schedule.ended
    events = log.events
    assert sorted(b for w, k, b in events if (w, k) == ("start", "flush")) == buckets
    assert sorted(b for w, k, b in events if (w, k) == ("start", "compact")) == [b for b in buckets if b not in quiet]
    for b in buckets:
        if b not in quiet:
            assert events.index(("end", "flush", b)) < events.index(("start", "compact", b))


def test_each_compaction_follows_its_flush_and_a_bucket_without_a_message_is_not_compacted(pool) -> None:
    rng = random.Random(14)
    for _ in range(30):
        _random_schedule(rng, pool)


def test_a_failure_stops_new_tasks_and_the_first_in_bucket_order_is_raised(pool) -> None:
    second_failed = threading.Event()
    ran: list[tuple[str, int]] = []

    def flush(bucket: int) -> str:
        ran.append(("flush", bucket))
        if bucket == 1:
            second_failed.set()
            raise ValueError("bucket 1")
        if bucket == 0:
            assert second_failed.wait(WAIT_S)
            raise OSError("bucket 0")
        return "m"

    def compact(bucket: int, msg: str) -> None:
        ran.append(("compact", bucket))

    schedule = FlushCompactSchedule([0, 1, 2, 3], flush, compact, workers=2)
    with pytest.raises(OSError, match="bucket 0"):
        schedule.run(pool)
    assert sorted(ran) == [("flush", 0), ("flush", 1)]  # nothing started after the failures
    assert schedule.ended


def test_on_the_calling_thread_a_failed_compaction_ends_the_schedule() -> None:
    ran: list[tuple[str, int]] = []

    def compact(bucket: int, msg: str) -> None:
        ran.append(("compact", bucket))
        raise RuntimeError(f"compaction {bucket}")

    with pytest.raises(RuntimeError, match="compaction 0"):
        FlushCompactSchedule([0, 1, 2], lambda b: ran.append(("flush", b)) or "m", compact, workers=2).run(None)
    assert ran == [("flush", 0), ("compact", 0)]


def test_compaction_slots() -> None:
    assert [compaction_slots(n) for n in (1, 2, 3, 4, 8)] == [1, 1, 1, 2, 4]


def test_an_interrupted_wait_lets_running_tasks_end_and_starts_no_new_one(pool, monkeypatch) -> None:
    """Ctrl-C while the calling thread waits: no new task starts and the running ones have ended
    when `run` raises, so the caller's clean-up sees everything that was written."""
    from lake_assets.ops import flush_schedule

    started = threading.Barrier(3, timeout=WAIT_S)  # both flushes and the calling thread
    interrupted = threading.Event()
    ran: list[tuple[str, int]] = []
    real_wait = flush_schedule.wait

    def wait_interrupted(futures):  # type: ignore[no-untyped-def]
        if not interrupted.is_set():
            started.wait()
            interrupted.set()
            raise KeyboardInterrupt
        return real_wait(futures)

    def flush(bucket: int) -> str:
        ran.append(("flush", bucket))
        if bucket < 2:
            started.wait()
            assert interrupted.wait(WAIT_S)
        return "m"

    monkeypatch.setattr(flush_schedule, "wait", wait_interrupted)
    schedule = FlushCompactSchedule([0, 1, 2, 3], flush, lambda b, m: ran.append(("compact", b)), workers=2)
    with pytest.raises(KeyboardInterrupt):
        schedule.run(pool)
    assert schedule.ended
    assert sorted(ran) == [("flush", 0), ("flush", 1)]
