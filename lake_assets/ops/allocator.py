"""Giving the writer threads' freed Arrow memory back to the system after each round of tasks.

Arrow's default allocator (mimalloc on Linux wheels; jemalloc elsewhere) keeps the pages a
thread freed in that thread's heap for reuse, and frees made by another thread (a routed slice
allocated while routing, dropped after its bucket spilled) reach the owning heap late. The
writer's per-bucket tasks (sorting a full buffer and writing it as a spill run, merging runs into
level-0 files) each allocate and drop about a bucket's share of the write buffer, so what the
heaps kept stood above Arrow's live bytes: a 16M-row load peaked at 372-382 MiB RSS with about
89 MiB of Arrow data (jemalloc: no excess), 347-348 MiB with a release per round of tasks; a
6.4M-row upsert 365-381 against 341-364 (issue 17 §2 round 4, bench/RESULTS.md). Compaction
releases once per unit on the thread that ran it (`ops.compact.rewrite`, round 5): a unit is a
bucket's worth of merge steps, and what its thread kept stayed resident after the last one.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Executor, ThreadPoolExecutor, wait

import pyarrow as pa

from lake_assets.ops.kept_pool import KeptThreadPool

# How long a release task waits for the pool's other threads to take theirs (an idle pool takes
# them at once); past it the release still happens, maybe twice on one thread and not on another.
_RELEASE_MEET_S = 5.0


def release_thread_memory() -> None:
    """Return the calling thread's freed allocator pages to the system (Arrow's
    ``MemoryPool.release_unused``: a collection of the calling thread's heap, so it belongs at
    the end of a task that freed large buffers, not in a per-batch loop)."""
    pa.default_memory_pool().release_unused()


def release_pool_threads(pool: Executor, threads: int) -> None:
    """Run `release_thread_memory` once on each of an idle ``pool``'s ``threads`` threads (a
    `KeptThreadPool` or a `ThreadPoolExecutor`): one
    task per thread, each held until all have started, so no thread takes two. Once per round of
    per-bucket tasks rather than after each task: a release gives the pages back to the system
    and the next task faults them in again, which after every spill of a load cost about 6% of
    its CPU time; a thread reuses its own freed pages between the tasks of one round. Any other
    executor (one that runs tasks on the calling thread, as `bench.cpu_breakdown`'s) releases on
    the calling thread: tasks meeting at a barrier there would wait for each other in vain."""
    if not isinstance(pool, (ThreadPoolExecutor, KeptThreadPool)):
        release_thread_memory()
        return
    meet = threading.Barrier(threads)

    def release() -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            meet.wait(_RELEASE_MEET_S)
        release_thread_memory()

    wait([pool.submit(release) for _ in range(threads)])
