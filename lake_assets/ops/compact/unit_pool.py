"""Many compaction units at once: `run_compaction_tasks` runs them on up to ``parallelism`` kept
threads (`ops.kept_pool`; pyarrow releases the GIL while it decodes, sorts and encodes) and
returns their messages in plan order; when one fails, what the others wrote is deleted
(`discard_outputs`). One unit is `rewrite.run_compaction_task`, which re-exports these names.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, wait
from typing import TYPE_CHECKING

from lake_assets.errors import NullInNotNullColumnError
from lake_assets.ops.allocator import release_thread_memory
from lake_assets.ops.kept_pool import KeptThreadPool
from lake_assets.ops.not_null_history import rewrite_error
from lake_assets.ops.spill import spill_root
from lake_assets.parallelism import usable_cpus

if TYPE_CHECKING:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.ops.compact.plan import CompactionTask
    from lake_assets.store.file_store import FileStore

COMPACT_THREAD_NAME = "lake-compact"  # a kept thread running compaction units


def compaction_parallelism(store: FileStore, requested: int | None = None) -> int:
    """How many units run at once: ``requested``, else ``compaction.parallelism``, else as many as
    the table reads with (at least 2, at most the CPU count)."""
    if requested is not None:
        if requested < 1:
            raise ValueError(f"parallelism must be at least 1, got {requested}")
        return requested
    configured = store.schema.core_options.compaction_parallelism
    return configured if configured is not None else max(2, usable_cpus())


def run_compaction_tasks(
    store: FileStore, tasks: Sequence[CompactionTask], *, parallelism: int | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
) -> list[CommitMessage]:
    """Run ``tasks`` with at most ``parallelism`` in flight; their messages, in the order of ``tasks``.

    Memory is that of one unit (see `run_compaction_task`) times the number in flight. If any unit
    fails, no new unit starts, the running ones finish, and the files of every unit that completed
    are deleted before the first failure (in task order) is raised: nothing is left for a commit
    that will never happen. A failing unit removes its own partial files itself.
    """
    root = spill_root(spill_dir)  # checked before any unit writes (see `run_compaction_task`)
    workers = min(len(tasks), compaction_parallelism(store, parallelism))
    if workers <= 1:
        done: list[CommitMessage] = []
        try:
            for task in tasks:
                done.append(_run_and_release(store, task, root))
        except BaseException:
            discard_outputs(store, done)
            raise
        return done
    pool = KeptThreadPool(max_workers=workers, thread_name=COMPACT_THREAD_NAME)
    futures: list[Future[CommitMessage]] = []
    try:
        futures = [pool.submit(_run_and_release, store, t, root) for t in tasks]
        wait(futures, return_when=FIRST_EXCEPTION)
    except BaseException:  # interrupted while waiting: treat like a failed unit
        _stop_and_discard(store, futures)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if any(f.done() and f.exception() is not None for f in futures):
        errors = _stop_and_discard(store, futures)
        raise errors[0]
    # plan order, whatever order the units finished in: the commit and its summary are deterministic
    return [f.result() for f in futures]


def _run_and_release(store: FileStore, task: CompactionTask, spill_dir: str | None) -> CommitMessage:
    """`run_compaction_task`, then the thread's freed allocator pages go back to the system.

    A unit allocates and drops hundreds of merge steps' buffers; the allocator keeps the freed
    pages in the thread's heap (mimalloc), where they stayed after the last unit, and after the
    pool's threads ended (issue 17 §2 round 5: 165 of a 16M-row full compaction's 246 MiB peak
    were still resident at its end, 21 with this). Once per unit: a unit is a bucket's worth of
    work, so the pages faulted in again by the next one cost nothing measurable."""
    from lake_assets.ops.compact.rewrite import run_compaction_task  # it re-exports this module's names

    try:
        return run_compaction_task(store, task, spill_dir=spill_dir)
    except NullInNotNullColumnError as exc:  # a null in a column made NOT NULL after its file was written
        raise rewrite_error(store, task.input_files, exc) from exc
    finally:
        release_thread_memory()


def _stop_and_discard(store: FileStore, futures: Sequence[Future[CommitMessage]]) -> list[BaseException]:
    """Cancel units not started, wait for running ones, delete what the finished ones wrote;
    the failures, in task order."""
    for f in futures:
        f.cancel()
    # only the running ones: a future cancelled before it ran (here, or by the pool's
    # shutdown(cancel_futures=True)) stays CANCELLED, which `wait` never counts as done
    wait([f for f in futures if not f.cancelled()])
    ok = [f for f in futures if not f.cancelled() and f.exception() is None]
    discard_outputs(store, [f.result() for f in ok])
    return [e for f in futures if not f.cancelled() and (e := f.exception()) is not None]


def discard_outputs(store: FileStore, messages: Sequence[CommitMessage]) -> None:
    """Delete the files units wrote for a commit that will not happen (upgrades are not new files)."""
    store.file_io.delete_many(
        p for m in messages for f in m.all_written_files() for p in store.written_file_paths(m.partition, m.bucket, f)
    )
    store.file_io.delete_many(store.paths.index_file(e.file_name) for m in messages for e in m.index_after)
