"""Threads kept for the commit's ahead writer (`ops.commit_ahead`), so a commit need not start one.

`threading.Thread.start` returns only once the new thread has run its first lines: the caller
waits for the scheduler to give the new thread a core. In a deletion-vector upsert round that wait
sat on the commit's critical path, before the APPEND snapshot's files (the committer starts the
COMPACT's ahead run first): 0.2-1 ms on two busy cores, 10.5 ms in one round at load 8
(bench/RESULTS.md, "Deletion-vector upsert round, round 10"). A thread kept from an earlier commit
is already waiting: handing it a task is a queue put.

What keeping them must not change:

- **No run waits for another.** An ahead run blocks until its own committer hands the APPEND
  snapshot over; two runs queued on one thread would make the second committer wait for the
  first's commit. So a task never queues: it takes an idle thread or a new one is started.
- **A process that cannot start a thread** still commits: `run_on_helper` returns False and the
  committer writes the snapshot itself (as before).
- **fork.** A child inherits the idle list but none of its threads: it forgets them (a task
  handed to one would never run) and starts its own.
- **Bounded.** At most `KEEP_IDLE` threads wait between commits; a thread idle for
  `IDLE_EXIT_S` exits, so a process that stopped committing holds none.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

THREAD_NAME = "lake-commit-ahead"
KEEP_IDLE = 2  # concurrent commits of one process beyond this start a thread, as before
IDLE_EXIT_S = 60.0

_lock = threading.Lock()
_idle: list[_Helper] = []


class _Helper:
    """One kept thread: runs the tasks handed to it one at a time, idle in between."""

    def __init__(self) -> None:
        self.tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.taken = True  # handed a task (under ``_lock``); False while on the idle list
        self.thread = threading.Thread(target=self._loop, name=THREAD_NAME, daemon=True)

    def _loop(self) -> None:
        while True:
            try:
                task = self.tasks.get(timeout=IDLE_EXIT_S)
            except queue.Empty:
                with _lock:
                    if not self.taken:  # else it was just taken: its task is on the way
                        if self in _idle:  # not so once the list was forgotten
                            _idle.remove(self)
                        return
                continue
            try:
                task()
            except BaseException as exc:  # a task reports its own outcome; this keeps the thread
                log.warning("A commit helper task failed: %r", exc)
            del task  # holds the run (its rows and files) until the next task otherwise
            with _lock:
                if len(_idle) >= KEEP_IDLE:
                    return
                self.taken = False
                _idle.append(self)


def run_on_helper(task: Callable[[], None]) -> bool:
    """Run ``task`` on a kept helper thread (an idle one, else a new one); False, and ``task``
    not run, when the process cannot start a thread."""
    with _lock:
        helper = _idle.pop() if _idle else None
        if helper is not None:
            helper.taken = True
    if helper is None:
        helper = _Helper()
        try:
            helper.thread.start()
        except RuntimeError:  # "can't start new thread"
            return False
    helper.tasks.put(task)
    return True


def idle_helpers() -> int:
    """Helper threads waiting for a task now."""
    with _lock:
        return len(_idle)


def forget_idle_helpers() -> None:
    """Let the idle threads go (each exits after `IDLE_EXIT_S`): the next task starts a new one."""
    with _lock:
        _idle.clear()


def _forget_in_child() -> None:
    """After fork: the child has none of the parent's threads (nor a held lock)."""
    global _lock, _idle
    _lock = threading.Lock()
    _idle = []


os.register_at_fork(after_in_child=_forget_in_child)

__all__ = ["IDLE_EXIT_S", "KEEP_IDLE", "THREAD_NAME", "forget_idle_helpers", "idle_helpers", "run_on_helper"]
