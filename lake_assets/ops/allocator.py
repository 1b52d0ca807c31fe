"""Giving a worker thread's freed Arrow memory back to the system before the thread ends.

Arrow's default allocator (mimalloc on Linux wheels; jemalloc elsewhere) keeps the pages a
thread freed in that thread's heap for reuse. The writer runs its heavy per-bucket work (sorting
a full buffer, writing a spill run, merging runs into level-0 files) on short-lived pool threads;
a finished thread's pages were never reused by the next pool's threads, so the resident memory
above Arrow's live bytes grew with the number of those tasks (the issue 17 §2 benchmark: about
95 MiB over the Arrow peak for a 6.4M-row upsert with mimalloc, against none with jemalloc).
Releasing at the end of each such task bounds that excess to what one task leaves behind.
"""

from __future__ import annotations

import pyarrow as pa


def release_thread_memory() -> None:
    """Return the calling thread's freed allocator pages to the system (Arrow's
    ``MemoryPool.release_unused``: a collection of the calling thread's heap, so it belongs at
    the end of a task that freed large buffers, not in a per-batch loop)."""
    pa.default_memory_pool().release_unused()
