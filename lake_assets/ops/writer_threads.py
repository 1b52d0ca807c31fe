"""The table writer's threads, kept across writers: a writer borrows them, `close` hands them back.

A `TableWriter` runs big batches' routing and its per-bucket spills, flushes and compactions on
threads of its own (`TableWriter._worker_pool`). Started per writer, they were started on every
round of ``write_arrow .. commit .. close``: two thread starts in each ~30 ms deletion-vector
upsert round, each 0.2-108 ms at load 12-16 while the caller waits for the new thread to be
scheduled (bench/RESULTS.md, "Deletion-vector upsert round, round 10 (session 17)"). Here the
threads outlive the writer: `WriterThreads` is the writer's executor, and the threads it runs on
come from an idle list that the previous writer's `shutdown` put them back on.

What keeping them must not change:

- **Memory.** Arrow's allocator (mimalloc) keeps a thread's freed pages in that thread's heap;
  threads that ended per writer left theirs behind, and RSS grew with the number of batches
  (issue 17 §2). Kept threads reuse their own pages, writer after writer; at most `keep_idle`
  wait between writers, and one idle for `IDLE_EXIT_S` exits.
- **No writer waits for another.** A writer's tasks wait for each other (`FlushCompactSchedule`'s
  workers for the flushes that hand them compactions; `release_pool_threads`' tasks meet at a
  barrier), so writers must not share a bounded queue: two writers' tasks queued on one set of
  threads could each wait for a task queued behind the other's. Each writer has its own queue
  and up to ``max_workers`` threads of its own, as a `ThreadPoolExecutor` per writer had; a
  borrowed thread serves that writer alone until the writer's `shutdown`. A writer that finds no
  idle thread starts one, as before.
- **Failures.** A task's exception, `BaseException` included, is its future's, exactly as
  `ThreadPoolExecutor` reports it; the thread lives on.
- **fork.** A child has none of the parent's threads: it forgets the idle list, and an executor it
  inherited forgets the threads it had borrowed (its next task borrows or starts one in the child).
- **Interpreter exit.** As `ThreadPoolExecutor` does, exit waits for the tasks already handed to
  a writer's threads (an interrupted writer's running flush ends before the process does); idle
  threads are daemons and do not hold exit up.
- **A writer never closed.** Once it is collected, its threads go back to the idle list.
"""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from lake_assets.parallelism import usable_cpus

THREAD_NAME = "lake-writer"  # a thread serving a writer; while idle it is named `IDLE_NAME`
IDLE_NAME = "lake-idle-writer"
IDLE_EXIT_S = 60.0

_lock = threading.Lock()
_idle: list[_KeptThread] = []
_names = itertools.count()
_sets: weakref.WeakSet[_ThreadSet] = weakref.WeakSet()  # every writer's set, for exit and fork


def keep_idle() -> int:
    """Threads kept idle between writers: two writers' worth (two tables written at once)."""
    return 2 * max(1, usable_cpus())


class _WorkItem:
    """One submitted call and its future (as `ThreadPoolExecutor`'s)."""

    def __init__(self, future: Future[Any], fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        self.future = future
        self.fn = fn
        self.args = args
        self.kwargs = kwargs

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            result = self.fn(*self.args, **self.kwargs)
        except BaseException as exc:  # the caller's, through the future, as the pool reported it
            self.future.set_exception(exc)
            self = None  # type: ignore[assignment]  # no cycle through the traceback
        else:
            self.future.set_result(result)


_STOP = object()  # on a set's queue: the thread that takes it goes back to the idle list


class _ThreadSet:
    """A writer's queue and the threads serving it; no reference to the executor, so a writer
    never closed is collected (and its threads handed back by `WriterThreads`' finalizer)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.idle = threading.Semaphore(0)  # tasks ended: a thread may be free (as the pool's)
        self.threads = 0  # serving this set now (stops not yet taken included)
        self.released = threading.Condition(self.lock)
        self.stopped = False

    def stop(self) -> None:
        """Each serving thread, once the tasks queued before this are done, goes back."""
        with self.lock:
            if self.stopped:
                return
            self.stopped = True
            for _ in range(self.threads):
                self.tasks.put(_STOP)

    def release_one(self) -> None:
        """A thread serving this set went back (on the idle list if kept: the writer's close
        returns only then, so the next writer finds it there)."""
        with self.lock:
            self.threads -= 1
            self.released.notify_all()

    def wait_released(self) -> None:
        """Until every thread serving this set went back (its queued tasks done)."""
        with self.lock:
            while self.threads:
                self.released.wait()

    def serve(self) -> None:
        """Run this set's tasks on the calling (kept) thread until it takes a stop (then the
        thread goes back to the idle list, and calls `release_one`)."""
        while True:
            item = self.tasks.get()
            if item is _STOP:
                return
            item.run()
            del item  # holds the task's data (a bucket's rows) until the next task otherwise
            self.idle.release()


class _KeptThread:
    """One kept thread: serves one writer's set at a time, idle in between."""

    def __init__(self) -> None:
        self.sets: queue.SimpleQueue[_ThreadSet] = queue.SimpleQueue()
        self.taken = True  # handed a set (under ``_lock``); False while on the idle list
        self.number = next(_names)
        self.thread = threading.Thread(target=self._loop, name=f"{THREAD_NAME}-{self.number}", daemon=True)

    def _loop(self) -> None:
        while True:
            try:
                served = self.sets.get(timeout=IDLE_EXIT_S)
            except queue.Empty:
                with _lock:
                    if not self.taken:  # else it was just taken: its set is on the way
                        if self in _idle:  # not so once the list was forgotten
                            _idle.remove(self)
                        return
                continue
            self.thread.name = f"{THREAD_NAME}-{self.number}"
            served.serve()
            try:
                keep = keep_idle()
            except Exception:  # a bad LAKE_ASSETS_CPUS set since: the writer's next call says so,
                keep = 0       # and this thread must still hand itself back (its writer waits)
            with _lock:
                kept = len(_idle) < keep
                if kept:
                    self.thread.name = f"{IDLE_NAME}-{self.number}"
                    self.taken = False
                    _idle.append(self)
            served.release_one()
            del served
            if not kept:
                return


def _borrow(served: _ThreadSet) -> None:
    """Have a kept thread (an idle one, else a new one) serve ``served``; raises the
    ``RuntimeError`` of a process that cannot start a thread."""
    with _lock:
        kept = _idle.pop() if _idle else None
        if kept is not None:
            kept.taken = True
    if kept is None:
        kept = _KeptThread()
        kept.thread.start()
    kept.sets.put(served)


class WriterThreads(Executor):
    """A writer's executor: up to ``max_workers`` threads borrowed from the kept ones as its tasks
    need them (a new one started only when none is idle), handed back by `shutdown`. Tasks run in
    the order submitted, on this writer's threads only."""

    def __init__(self, max_workers: int) -> None:
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self._max_workers = max_workers
        self._set = _ThreadSet()
        with _lock:
            _sets.add(self._set)
        self._finalizer = weakref.finalize(self, _ThreadSet.stop, self._set)

    @property
    def threads(self) -> int:
        """Threads serving this writer now."""
        return self._set.threads

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        served = self._set
        with served.lock:
            if served.stopped:
                raise RuntimeError("cannot schedule new futures after shutdown")
            # as `ThreadPoolExecutor._adjust_thread_count`: a thread that ended a task may take this
            borrow = not served.idle.acquire(blocking=False) and served.threads < self._max_workers
            if borrow:
                served.threads += 1
        if borrow:
            try:
                _borrow(served)
            except RuntimeError:  # "can't start new thread": the threads it has run it
                with served.lock:
                    served.threads -= 1
                    alone = served.threads == 0
                if alone:
                    raise
        future: Future[Any] = Future()
        served.tasks.put(_WorkItem(future, fn, args, kwargs))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Hand the threads back once the tasks submitted are done (``wait``: return then);
        ``cancel_futures`` cancels those not started."""
        if cancel_futures:
            pending: list[Any] = []
            while True:
                try:
                    pending.append(self._set.tasks.get_nowait())
                except queue.Empty:
                    break
            for item in pending:
                if isinstance(item, _WorkItem):
                    item.future.cancel()
                else:
                    self._set.tasks.put(item)
        self._finalizer()  # `_ThreadSet.stop`, once
        if wait:
            self._set.wait_released()


def idle_writer_threads() -> int:
    """Kept threads waiting for a writer now."""
    with _lock:
        return len(_idle)


def forget_idle_writer_threads() -> None:
    """Let the idle threads go (each exits after `IDLE_EXIT_S`): the next writer starts new ones."""
    with _lock:
        _idle.clear()


def _finish_at_exit() -> None:
    """At exit, as `ThreadPoolExecutor`'s: the tasks handed to writers' threads run to their end."""
    with _lock:
        sets = list(_sets)
    for served in sets:
        served.stop()
    for served in sets:
        served.wait_released()


def _forget_in_child() -> None:
    """After fork: the child has none of the parent's threads (nor a held lock)."""
    global _lock, _idle
    _lock = threading.Lock()
    _idle = []
    for served in list(_sets):
        # its tasks queued in the parent never run here; the set's next task borrows afresh
        served.lock = threading.Lock()
        served.released = threading.Condition(served.lock)
        served.tasks = queue.SimpleQueue()
        served.idle = threading.Semaphore(0)
        served.threads = 0


atexit.register(_finish_at_exit)
os.register_at_fork(after_in_child=_forget_in_child)

__all__ = [
    "IDLE_EXIT_S", "IDLE_NAME", "THREAD_NAME", "WriterThreads", "forget_idle_writer_threads",
    "idle_writer_threads", "keep_idle",
]
