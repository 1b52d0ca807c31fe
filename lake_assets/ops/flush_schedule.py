"""The order in which a writer's threads flush buckets and compact them inline (issue 14).

At `TableWriter.prepare_commit` every bucket is flushed into level-0 files and then, if universal
compaction says so, compacted (`writer_state.compact_inline`). A bucket's compaction can start
once its own flush is done; nothing else orders the two kinds of work.

The two kinds use the interpreter differently. Most of a flush's time is the Parquet encode, which
pyarrow runs with the GIL released; a deletion-vector compaction of a bucket that received a few
thousand rows is mostly Python and small numpy calls (the key lookups and vector updates of
`ops.dv_compact`), which hold it. When each thread ran flush then compaction per bucket, the two
threads flushed at the same time, finished at the same time and then compacted at the same time:
two GIL-bound compactions on two threads take as long as one after the other, while the GIL-free
encodes only overlapped each other. `FlushCompactSchedule` keeps at most ``compaction_slots``
compactions running while flushes are left, so a thread whose bucket is flushed starts the next
flush when another thread is compacting, and the compaction runs beside an encode instead of beside
another compaction. With nothing left to flush, ready compactions run on any free thread.

A failure stops the schedule: no new task starts, the running ones end, and the first failure (in
bucket order) is raised by `run` after every worker has returned.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, wait
from typing import Generic, TypeVar

B = TypeVar("B")  # a bucket's buffer
M = TypeVar("M")  # what its flush hands to its compaction


def compaction_slots(workers: int) -> int:
    """Compactions that may run at once while flushes are left: half the workers, at least one.
    Two threads (the usual writer on two cores) then never compact side by side while one could
    encode instead; a small compaction is GIL-bound, so more of them at once would only queue."""
    return max(1, workers // 2)


class FlushCompactSchedule(Generic[B, M]):
    """Runs ``flush`` over ``buffers`` and ``compact`` after each flush that returned something,
    on ``workers`` threads of an executor (`run`), in the order the module docstring gives."""

    def __init__(
        self,
        buffers: Sequence[B],
        flush: Callable[[B], M | None],
        compact: Callable[[B, M], None],
        *,
        workers: int,
    ) -> None:
        self._order = {id(buf): i for i, buf in enumerate(buffers)}
        self._flushes: deque[B] = deque(buffers)
        self._ready: deque[tuple[B, M]] = deque()  # flushed, compaction not started
        self._flush = flush
        self._compact = compact
        self.workers = max(1, min(workers, len(buffers)))
        self._slots = compaction_slots(self.workers)
        self._flushing = 0
        self._compacting = 0
        self._failures: list[tuple[int, BaseException]] = []
        self._stopped = False
        self._cond = threading.Condition()
        # (thread name, "flush" | "compact", buffer) as each task starts: for tests and profiles
        self.started: list[tuple[str, str, B]] = []
        self.ended = False  # every worker has returned (not so when `run` was interrupted)

    def run(self, pool: Executor | None) -> None:
        """Run every task, ``workers`` at a time on ``pool`` (None: on the calling thread); raise
        the first failure in bucket order once every worker has returned."""
        if pool is None:
            self._work()
        else:
            futures = [pool.submit(self._work) for _ in range(self.workers)]
            try:
                wait(futures)
            except BaseException:  # interrupted while waiting: no new task starts, and the
                self.stop()        # running ones end before the caller cleans up what they wrote
                wait(futures)
                self.ended = True
                raise
            for f in futures:
                f.result()  # the loop catches its tasks' failures: only a bug of its own lands here
        self.ended = True
        if self._failures:
            raise min(self._failures, key=lambda failure: failure[0])[1]

    def stop(self) -> None:
        """Start no new task (running ones end as they would)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _next(self) -> tuple[str, B, M | None] | None:
        """The next task for a free worker, waiting while only running flushes can make one."""
        with self._cond:
            while not self._stopped:
                if self._ready and (self._compacting < self._slots or not self._flushes):
                    buf, handed = self._ready.popleft()
                    self._compacting += 1
                    return "compact", buf, handed
                if self._flushes:
                    self._flushing += 1
                    return "flush", self._flushes.popleft(), None
                if not self._flushing:
                    return None  # nothing left, and no running flush will hand a compaction over
                self._cond.wait()
            return None

    def _work(self) -> None:
        name = threading.current_thread().name
        while (task := self._next()) is not None:
            kind, buf, handed = task
            self.started.append((name, kind, buf))
            try:
                if kind == "flush":
                    made = self._flush(buf)
                else:
                    assert handed is not None  # only a flush that returned something compacts
                    self._compact(buf, handed)
                    made = None
            except BaseException as exc:  # ends the schedule; raised by `run`
                with self._cond:
                    self._failures.append((self._order[id(buf)], exc))
                    self._stopped = True
                    self._end(kind)
                return
            with self._cond:
                if made is not None:
                    self._ready.append((buf, made))
                self._end(kind)

    def _end(self, kind: str) -> None:
        """A task of ``kind`` ended (the lock held): its slot is free for whoever waits."""
        if kind == "flush":
            self._flushing -= 1
        else:
            self._compacting -= 1
        self._cond.notify_all()


__all__ = ["FlushCompactSchedule", "compaction_slots"]
