"""`KeptThreadPool`: an executor whose threads are the process's kept threads (`ops.kept_threads`),
borrowed as its tasks need them and handed back at `shutdown`.

A `ThreadPoolExecutor` made per call starts its threads on every call: a `TableWriter` did on every
round of ``write_arrow .. commit .. close`` (two thread starts in each ~30 ms deletion-vector upsert
round, each 0.2-108 ms at load 12-16 while the caller waits for the new thread to be scheduled;
bench/RESULTS.md, "Deletion-vector upsert round, round 10 (session 17)"), a compaction, a big
postpone batch and a multi-manifest read did on every call. A `KeptThreadPool` made per call
borrows threads an earlier one handed back.

What borrowing must not change:

- **No pool waits for another.** A pool's tasks may wait for each other (`FlushCompactSchedule`'s
  workers for the flushes that hand them compactions; `release_pool_threads`' tasks meet at a
  barrier), so pools must not share a bounded queue: two pools' tasks queued on one set of threads
  could each wait for a task queued behind the other's. Each pool has its own queue and up to
  ``max_workers`` threads of its own, as a `ThreadPoolExecutor` had; a borrowed thread serves that
  pool alone until its `shutdown`. A pool that finds no idle thread starts one.
- **Failures.** A task's exception, `BaseException` included, is its future's, exactly as
  `ThreadPoolExecutor` reports it; the thread lives on.
- **fork.** A child has none of the parent's threads: a pool it inherited forgets the threads it
  had borrowed (its next task borrows or starts one in the child); `ops.kept_threads` forgets the
  idle ones.
- **Interpreter exit.** As `ThreadPoolExecutor` does, exit waits for the tasks already handed to a
  pool's threads (an interrupted writer's running flush ends before the process does).
- **A pool never shut down.** Once it is collected, its threads go back to the idle list.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from lake_assets.ops.kept_threads import run_on_kept_thread

_sets_lock = threading.Lock()
_sets: weakref.WeakSet[_ThreadSet] = weakref.WeakSet()  # every pool's set, for exit and fork


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
    """A pool's queue and the threads serving it; no reference to the pool, so a pool never shut
    down is collected (and its threads handed back by `KeptThreadPool`'s finalizer)."""

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
        """A thread serving this set went back (on the idle list if kept: the pool's shutdown
        returns only then, so the next pool finds it there)."""
        with self.lock:
            self.threads -= 1
            self.released.notify_all()

    def wait_released(self) -> None:
        """Until every thread serving this set went back (its queued tasks done)."""
        with self.lock:
            while self.threads:
                self.released.wait()

    def serve(self) -> None:
        """Run this set's tasks on the calling (kept) thread until it takes a stop."""
        while True:
            item = self.tasks.get()
            if item is _STOP:
                return
            item.run()
            del item  # holds the task's data (a bucket's rows) until the next task otherwise
            self.idle.release()


class KeptThreadPool(Executor):
    """An executor on up to ``max_workers`` kept threads, borrowed as its tasks need them (a new one
    started only when none is idle; named ``thread_name``-<n> while they serve it) and handed back
    by `shutdown`. Tasks run in the order submitted, on this pool's threads only."""

    def __init__(self, max_workers: int, thread_name: str = "lake-pool") -> None:
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self._max_workers = max_workers
        self._thread_name = thread_name
        self._set = _ThreadSet()
        with _sets_lock:
            _sets.add(self._set)
        self._finalizer = weakref.finalize(self, _ThreadSet.stop, self._set)

    @property
    def threads(self) -> int:
        """Threads serving this pool now."""
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
                run_on_kept_thread(served.serve, self._thread_name, served.release_one)
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


def _finish_at_exit() -> None:
    """At exit, as `ThreadPoolExecutor`'s: the tasks handed to pools' threads run to their end."""
    with _sets_lock:
        sets = list(_sets)
    for served in sets:
        served.stop()
    for served in sets:
        served.wait_released()


def _forget_in_child() -> None:
    """After fork: the child has none of the parent's threads (nor a held lock)."""
    global _sets_lock
    _sets_lock = threading.Lock()
    for served in list(_sets):
        # its tasks queued in the parent never run here; the set's next task borrows afresh
        served.lock = threading.Lock()
        served.released = threading.Condition(served.lock)
        served.tasks = queue.SimpleQueue()
        served.idle = threading.Semaphore(0)
        served.threads = 0


atexit.register(_finish_at_exit)
os.register_at_fork(after_in_child=_forget_in_child)

__all__ = ["KeptThreadPool"]
