"""The process-wide thread pool that whole-table reads (`ops.read_ahead`) run their file tasks in.

A pool created per read starts its threads on every read: on the deletion-vector benchmark
(16 files, ~27 ms per read on two idle cores) the second task began 1.5–4.8 ms after the call
(load 8.7; its thread created while the caller still submitted tasks and held the GIL), and each
read paid two threads' creation, stacks and cold allocator heaps: ~100 more minor page faults and
~1 ms more system CPU per read than with the threads kept (bench/RESULTS.md, round 7). Kept
across reads, the workers are waiting when the tasks arrive.

What a shared pool must not change:

- **Nested reads.** A task that itself reads a table through the pool (a merge function reading a
  lookup table, say) would wait for tasks queued behind it in the same pool, and with every
  worker waiting the process deadlocks. `in_reader_pool` tells a read it runs on a worker; it then
  reads its tasks on that thread.
- **Concurrent reads.** Reads from several threads share the workers, tasks in the order they were
  submitted: no read waits on another's task, so none can deadlock, and together they use the
  cores `usable_cpus` allows instead of each starting its own threads.
- **fork.** A forked child (Spark's Python workers fork from a daemon) inherits the pool object
  but not its threads: tasks submitted there would never run. The child forgets the pool and
  starts its own on first use.
- **The CPU budget.** The pool is sized by `usable_cpus` (at least 2: one file decodes while
  another is set up) when a read asks for it; a read that finds the budget changed
  (``LAKE_ASSETS_CPUS``, `pyarrow.set_cpu_count`) gets a new pool; the old one's threads exit once
  no read holds it.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from lake_assets.parallelism import usable_cpus

_state = threading.local()  # ``worker`` is set on the pool's threads
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_workers = 0


def _mark_worker() -> None:
    _state.worker = True


def in_reader_pool() -> bool:
    """Whether the calling thread is one of the reader pool's workers."""
    return bool(getattr(_state, "worker", False))


def reader_pool_workers() -> int:
    """The workers a read's pool has now: `usable_cpus`, at least 2."""
    return max(2, usable_cpus())


def reader_pool() -> ThreadPoolExecutor:
    """The shared pool (created on first use, again when `reader_pool_workers` changed)."""
    global _pool, _pool_workers
    workers = reader_pool_workers()
    with _lock:
        if _pool is None or _pool_workers != workers:
            # The old pool is let go, not shut down: a read on another thread may be submitting
            # to it right now (a shut-down pool refuses new tasks). Once no read holds it, it is
            # collected and its idle threads exit.
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lake-read",
                                       initializer=_mark_worker)
            _pool_workers = workers
        return _pool


def _forget_in_child() -> None:
    """After fork: the child has none of the parent's workers (nor a held lock), so it starts afresh."""
    global _pool, _pool_workers, _lock
    _lock = threading.Lock()
    _pool = None
    _pool_workers = 0


os.register_at_fork(after_in_child=_forget_in_child)


__all__ = ["in_reader_pool", "reader_pool", "reader_pool_workers"]
