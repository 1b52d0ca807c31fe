"""Reading a table's splits in a thread pool, for reads that return the whole result (`Table.to_arrow`).

The pool runs tasks: a split that needs a merge is one task (its sections share its files); a
split read file by file (`SplitReader.raw_files`: append tables, deletion-vector tables whose
files are all above level 0) gives one task per file, so a bucket's files need not wait for each
other. Tasks start largest first (by bytes), the longest-processing-time-first rule: the small
ones come last and fill in beside the large ones, so the workers finish together instead of one
core idling while the other reads the last large file. Results are yielded in plan order, so the
rows come out as a serial read gives them.

pyarrow can decode one file's columns in its own threads. When the read has enough files per
worker the files already keep every core busy, and the inner threads only add hand-offs: on the
deletion-vector benchmark's 16 files, on idle cores, 25 alternated reads took 26.6-27.1 ms (best;
median 29.4-29.5) with them off against 28.6 ms (median 32.8) with them on. A file uses them only
when it is a large share of the read (more than ``1 / (2 * workers)`` of its bytes), where nothing
else could fill the other cores; merge tasks keep the reader's setting, and so does every file on
storage where parallel reads pay off (a round trip per request).

Every task is submitted at once: the caller holds the whole result anyway, and what is in
flight beyond it (a merge's sorted copy) is bounded by the number of workers, not of tasks. The
workers are the process-wide `ops.read_pool`, kept across reads (why, and what that must not
change: its docstring); a read that stops early cancels its queued tasks and waits for its
running ones, so none of its tasks runs after it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.ops.read_pool import in_reader_pool, reader_pool, reader_pool_workers
from lake_assets.ops.scan import Split
from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.ops.read import SplitReader


@dataclass(frozen=True)
class ReadTask:
    """One unit of a pooled read: a whole split (``file`` None) or one file of a split read file by file."""

    split: Split
    file: DataFileMeta | None
    size: int  # bytes to read: how the pool orders the tasks

    def run(self, reader: SplitReader, use_threads: bool | None) -> list[pa.Table]:
        if self.file is None:
            return list(reader.read_split(self.split))
        return [reader.read_raw_file(self.split, self.file, use_threads=use_threads)]


def read_tasks(reader: SplitReader, splits: Sequence[Split]) -> list[ReadTask]:
    """The tasks of a read of ``splits``, in plan order."""
    tasks: list[ReadTask] = []
    for split in splits:
        files = reader.raw_files(split)
        if files is None:
            tasks.append(ReadTask(split, None, split.size_bytes))
        else:
            tasks.extend(ReadTask(split, meta, meta.file_size) for meta in files)
    return tasks


def read_splits_ahead(reader: SplitReader, splits: Sequence[Split]) -> Iterator[pa.Table]:
    """The rows of ``splits`` in plan order, read in a pool of threads (see the module docstring)."""
    tasks = read_tasks(reader, splits)
    if len(tasks) <= 1 or in_reader_pool():  # a read inside a task reads on its worker (`read_pool`)
        for task in tasks:
            yield from task.run(reader, None)
        return
    workers = min(len(tasks), reader_pool_workers())
    # Remote storage: pyarrow's threads fetch a file's column chunks side by side, which pays
    # more than saving their hand-offs; they stay on for every file.
    large = -1.0 if reader.store.file_io.parallel_reads_pay_off else sum(t.size for t in tasks) / (2 * workers)
    # pyarrow releases the GIL while it decodes, so threads read in parallel
    pool = reader_pool()
    futures: dict[int, Future[list[pa.Table]]] = {}
    try:
        for i in sorted(range(len(tasks)), key=lambda k: -tasks[k].size):
            task = tasks[i]
            threads = None if task.file is None else reader.file_threads and task.size > large
            futures[i] = pool.submit(task.run, reader, threads)
        for i in range(len(tasks)):
            yield from futures[i].result()
    finally:
        # a failed task, or a caller that stopped early: start nothing more of this read, and
        # let none of its tasks outlive it
        for f in futures.values():
            f.cancel()
        wait(futures.values())


__all__ = ["ReadTask", "read_splits_ahead", "read_tasks"]
