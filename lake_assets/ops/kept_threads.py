"""The process's kept threads: started once, handed one job after another, idle in between.

`threading.Thread.start` returns only once the new thread has run its first lines: the caller
waits for the scheduler to give the new thread a core, 0.2-108 ms at load 8-16 on two cores
(bench/RESULTS.md, "Deletion-vector upsert round, round 10" and "A writer's threads kept across
writers", session 17). A thread kept from an earlier job is already waiting: handing it the next is
a queue put. Arrow's allocator (mimalloc) keeps a thread's freed pages in that thread's heap, so
threads that ended after each job also left their pages behind (issue 17 §2); a kept thread reuses
its own.

One idle list serves every user: a commit's ahead writer (`ops.commit_ahead`) and the pools built
on it (`ops.kept_pool.KeptThreadPool`: a writer's threads, compaction units, manifest reads). A job
is what a thread runs between two idle spells: an ahead run, or a pool's queue served until the
pool hands the thread back.

What keeping them must not change:

- **No job waits for another.** A job takes an idle thread or a new one is started; a thread runs
  one job at a time and is idle (on the list) only between jobs, so jobs never queue behind each
  other here.
- **A process that cannot start a thread.** `run_on_kept_thread` raises the ``RuntimeError`` of
  ``Thread.start``, the job not run: the caller runs the work itself or reports it.
- **Failures.** A job that raises (it should report its own outcome) is logged; the thread lives on.
- **Bounded.** At most `keep_idle` threads wait between jobs; a thread idle for `IDLE_EXIT_S` exits,
  so a process that stopped writing holds none. Threads at work are bounded by their users (one per
  ahead run, a pool's ``max_workers``).
- **fork.** A child inherits the idle list but none of its threads: it forgets them (a job handed
  to one would never run) and starts its own.
- **Interpreter exit.** Idle threads are daemons and do not hold exit up; a pool that must finish
  its queued tasks first waits for them itself (`ops.kept_pool`).
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
from collections.abc import Callable

from lake_assets.parallelism import usable_cpus

log = logging.getLogger(__name__)

IDLE_NAME = "lake-idle"  # a kept thread between jobs is `IDLE_NAME`-<n>; at work, <job's name>-<n>
IDLE_EXIT_S = 60.0

# (name, work, then): what a kept thread runs next (`run_on_kept_thread`)
_Job = tuple[str, Callable[[], object], Callable[[], None] | None]

_lock = threading.Lock()
_idle: list[_KeptThread] = []
_numbers = itertools.count()


def keep_idle() -> int:
    """Threads kept idle between jobs: two writers' worth (two tables written at once, each with up
    to `usable_cpus` threads) and two commits' ahead runs."""
    return 2 * max(1, usable_cpus()) + 2


class _KeptThread:
    """One kept thread: runs the jobs handed to it one at a time, idle in between."""

    def __init__(self, name: str) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.taken = True  # handed a job (under ``_lock``); False while on the idle list
        self.number = next(_numbers)
        self.thread = threading.Thread(target=self._loop, name=f"{name}-{self.number}", daemon=True)

    def _loop(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=IDLE_EXIT_S)
            except queue.Empty:
                with _lock:
                    if not self.taken:  # else it was just taken: its job is on the way
                        if self in _idle:  # not so once the list was forgotten
                            _idle.remove(self)
                        return
                continue
            name, work, then = job
            del job
            self.thread.name = f"{name}-{self.number}"
            try:
                work()
            except BaseException as exc:  # a job reports its own outcome; this keeps the thread
                log.warning("A job on kept thread %s failed: %r", self.thread.name, exc)
            del work  # holds the job's data (a run's rows and files) until the next job otherwise
            kept = self._go_back()
            if then is not None:  # after the thread is back: its user finds it on the idle list
                then()
            del then
            if not kept:
                return

    def _go_back(self) -> bool:
        """Join the idle list unless `keep_idle` threads wait there already (then the thread ends)."""
        try:
            keep = keep_idle()
        except Exception:  # a bad LAKE_ASSETS_CPUS set since: the user's next call says so,
            keep = 0       # and this thread must still go back (its user may wait for that)
        with _lock:
            if len(_idle) >= keep:
                return False
            self.thread.name = f"{IDLE_NAME}-{self.number}"
            self.taken = False
            _idle.append(self)
            return True


def run_on_kept_thread(work: Callable[[], object], name: str, then: Callable[[], None] | None = None) -> None:
    """Run ``work`` on a kept thread (an idle one, else a new one), named ``name``-<n> meanwhile;
    ``then``, if given, runs on that thread once it is back on the idle list (or about to end).

    Raises the ``RuntimeError`` of a process that cannot start a thread (nothing run)."""
    with _lock:
        kept = _idle.pop() if _idle else None
        if kept is not None:
            kept.taken = True
    if kept is None:
        kept = _KeptThread(name)
        kept.thread.start()
    kept.jobs.put((name, work, then))


def idle_kept_threads() -> int:
    """Kept threads waiting for a job now."""
    with _lock:
        return len(_idle)


def forget_idle_kept_threads() -> None:
    """Let the idle threads go (each exits after `IDLE_EXIT_S`): the next job starts a new one."""
    with _lock:
        _idle.clear()


def _forget_in_child() -> None:
    """After fork: the child has none of the parent's threads (nor a held lock)."""
    global _lock, _idle
    _lock = threading.Lock()
    _idle = []


os.register_at_fork(after_in_child=_forget_in_child)

__all__ = [
    "IDLE_EXIT_S", "IDLE_NAME", "forget_idle_kept_threads", "idle_kept_threads", "keep_idle", "run_on_kept_thread",
]
