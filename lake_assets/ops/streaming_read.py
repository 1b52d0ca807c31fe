"""Streaming reads: a split's merged rows in bounded batches, and bounded read-ahead of splits.

Memory of a streaming read is set by two numbers, never by the table: ``batch_rows`` (rows per
file batch and per merge step) and ``read_ahead`` (batches a worker may queue). A split's files
are grouped into sections of overlapping keys and each section into sorted runs
(`lsm.run_partition.split_into_runs`); runs are read batch by batch and merged by the bounded
k-way merge (`lsm.merge_reader.merge_sorted`), which hands the merge engine key ranges holding
every version of their keys. So a read holds, per split being read, one batch per sorted run of
the current section plus about two batches of merge input - with overlapping runs too, where the
whole-section read (`SplitReader.read_split`) holds the section.
"""

from __future__ import annotations

import functools
import queue
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar, cast

import pyarrow as pa

from lake_assets.formats.data_file import VALUE_KIND
from lake_assets.lsm.merge import is_retract, sort_and_merge
from lake_assets.lsm.merge_reader import merge_sorted
from lake_assets.lsm.run_partition import chained, sections, split_into_runs
from lake_assets.ops.data_evolution_read import iter_raw
from lake_assets.ops.kept_threads import run_on_kept_thread
from lake_assets.ops.scan import Split
from lake_assets.parallelism import usable_cpus
from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.ops.read import SplitReader
    from lake_assets.options import CoreOptions

__all__ = ["DEFAULT_BATCH_ROWS", "DEFAULT_READ_AHEAD", "READ_AHEAD_THREAD_NAME", "read_ahead_of", "stream_bounds",
           "stream_split", "stream_splits"]

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - an item to produce from

DEFAULT_BATCH_ROWS = 64 * 1024
DEFAULT_READ_AHEAD = 2


def stream_bounds(
    options: CoreOptions, batch_size: int | None = None, read_ahead: int | None = None
) -> tuple[int, int]:
    """(batch rows, read-ahead) of a streaming read: the arguments, else the table's options
    ``read.batch-size`` and ``read.read-ahead``, else `DEFAULT_BATCH_ROWS` and `DEFAULT_READ_AHEAD`.

    Paimon's own default batch (1024 rows) is not taken when the option is unset: it suits a JVM's
    row-at-a-time readers, while here each batch pays a fixed Python cost per merge step."""
    rows = batch_size if batch_size is not None else options.read_batch_size
    ahead = read_ahead if read_ahead is not None else options.read_ahead
    return (DEFAULT_BATCH_ROWS if rows is None else rows, DEFAULT_READ_AHEAD if ahead is None else ahead)


def stream_split(reader: SplitReader, split: Split, batch_rows: int, *, with_kind: bool = False) -> Iterator[pa.Table]:
    """The merged, filtered and projected rows of ``split`` (its visible files) in batches of at
    most about ``2 * batch_rows`` rows; ``with_kind`` (primary-key tables) adds the
    ``_VALUE_KIND`` of each row: a merged key's result kind, an unmerged row's stored kind."""
    columns = reader.split_columns
    with_kind = with_kind and reader.is_pk
    raw = reader.raw_files(split)
    if raw is not None:
        # the files a batch read returns file by file, with no merge (`SplitReader.raw_files`, the
        # one definition both readers use): append tables, deletion-vector buckets above level 0
        for meta in raw:  # with a data-evolution table's merge, and the system columns asked for
            yield from iter_raw(reader, split, meta, with_kind, batch_rows)
        return
    files = reader.visible_files(split)
    key_names = reader.key_names
    merged_columns = [*columns, VALUE_KIND] if with_kind else columns

    def merge(chunk: pa.Table) -> pa.Table:
        merged = sort_and_merge(chunk, key_names, reader.merge_function, reader.sequence_fields,
                                reader.sequence_descending)
        retract = is_retract(merged.column(VALUE_KIND).to_numpy())
        if retract.any():  # retractions only cancel older rows; readers never see them
            merged = merged.filter(pa.array(~retract))
        return merged.select(merged_columns)

    def open_file(meta: DataFileMeta) -> Iterator[pa.Table]:
        return reader.iter_file(split, meta, True, columns, batch_rows)

    for section in sections(files, reader.key_types):
        if len(section) == 1 and section[0].delete_row_count == 0:
            # one file, no retractions: its rows are the result, batch by batch
            for part in reader.iter_file(split, section[0], with_kind, columns, batch_rows):
                yield reader.output_rows(part, split, with_kind)
            continue
        inputs = [chained(run, open_file) for run in split_into_runs(section, reader.key_types)]
        for merged in merge_sorted(inputs, key_names, merge, min_rows=batch_rows, max_step_rows=batch_rows):
            if merged.num_rows:
                yield reader.output_rows(merged, split, with_kind)
            del merged  # emitted: not held while the next step is gathered and merged


READ_AHEAD_THREAD_NAME = "read-ahead"  # a kept thread producing for a read is read-ahead-<n>


class _Ahead:
    """What a read-ahead's workers share: never the consumer's generator, so that a consumer
    dropped without closing it is collected, and its close stops them."""

    def __init__(self, workers: int, depth: int) -> None:
        self.stop = threading.Event()
        self.queues: list[queue.Queue[tuple[str, object]]] = [queue.Queue(maxsize=depth) for _ in range(workers)]
        self.lock = threading.Lock()
        self.running = 0  # workers handed a job and not back yet
        self.back = threading.Condition(self.lock)
        self.worker_idents: set[int] = set()

    def put(self, q: queue.Queue[tuple[str, object]], message: tuple[str, object]) -> bool:
        """Queue ``message`` unless the read stopped. A put that blocks on a full queue is woken by
        `end`, which empties the queues after setting `stop`: it then puts and sees `stop`."""
        if self.stop.is_set():
            return False
        q.put(message)
        return not self.stop.is_set()

    def worker_back(self) -> None:
        with self.lock:
            self.running -= 1
            self.back.notify_all()

    def end(self) -> None:
        """Stop the workers and wait until each is back on the kept threads' idle list (not at
        interpreter exit: a daemon thread woken then is ended before it reports back)."""
        self.stop.set()
        for q in self.queues:  # wakes a put blocked on a full queue
            while True:
                try:
                    q.get_nowait()
                except queue.Empty:
                    break
        if sys.is_finalizing() or threading.get_ident() in self.worker_idents:
            return  # (a consumer in a reference cycle may be collected on one of its own workers)
        with self.lock:
            while self.running:
                self.back.wait()


def read_ahead_of(
    items: Sequence[I], produce: Callable[[I], Iterator[T]], *, workers: int, depth: int
) -> Iterator[T]:
    """Everything ``produce`` yields for each item, in item order, produced by ``workers`` threads.

    Worker ``w`` produces items ``w, w + workers, ...`` in turn into its own queue of at most
    ``depth`` results, so at most ``workers * (depth + 1)`` results are in memory beyond the one
    the caller holds, however many items there are. An exception in a worker is raised here, at
    the item it belongs to.

    The workers are the process's kept threads (`ops.kept_threads`: no thread start per read once
    some are idle), named `READ_AHEAD_THREAD_NAME`-<n> while they produce. Closing the iterator,
    dropping it (its collection closes it) or a failure stops them: each leaves ``produce`` at its
    next result, a put blocked on a full queue included, and is back on the idle list before the
    close returns. They are daemon threads and not waited for at interpreter exit. A thread that
    cannot be started raises ``RuntimeError`` here, the workers already started stopped.
    """
    if workers < 1 or depth < 1:
        raise ValueError(f"workers and depth must be at least 1, got {workers} and {depth}")
    workers = min(workers, len(items))
    if workers <= 1:
        for item in items:
            yield from produce(item)
        return
    ahead = _Ahead(workers, depth)

    def work(w: int) -> None:
        q = ahead.queues[w]
        ahead.worker_idents.add(threading.get_ident())
        try:
            for index in range(w, len(items), workers):
                for result in produce(items[index]):
                    if not ahead.put(q, ("item", result)):
                        return
                    del result  # not held while the next is produced
                if not ahead.put(q, ("end", None)):
                    return
        except BaseException as exc:  # handed to the consumer, raised at its item
            ahead.put(q, ("error", exc))

    try:
        for w in range(workers):
            with ahead.lock:
                ahead.running += 1
            try:
                run_on_kept_thread(functools.partial(work, w), READ_AHEAD_THREAD_NAME, ahead.worker_back)
            except RuntimeError as exc:
                ahead.worker_back()
                raise RuntimeError(f"Cannot start read-ahead worker {w + 1} of {workers} (read_ahead's threads): "
                                   f"{exc}; the read stopped (fewer workers, or more threads allowed)") from exc
        for index in range(len(items)):
            q = ahead.queues[index % workers]
            while True:
                kind, value = q.get()
                if kind == "end":
                    break
                if kind == "error":
                    assert isinstance(value, BaseException)
                    raise value
                yield cast(T, value)  # "item" messages carry what `produce` yielded
                del value
    finally:
        ahead.end()


def stream_splits(
    reader: SplitReader, splits: Sequence[Split], *, batch_rows: int, read_ahead: int, workers: int | None = None
) -> Iterator[pa.Table]:
    """The rows of ``splits`` in plan order, each split streamed (`stream_split` via
    `SplitReader.stream_split`) by one of ``workers`` threads (default: the CPU count, at least
    2) that each queue at most ``read_ahead`` batches: in memory at once are at most
    ``workers * (read_ahead + 1)`` batches plus one merge per worker, whatever the table."""
    count = workers if workers is not None else max(2, usable_cpus())
    return read_ahead_of(splits, lambda split: reader.stream_split(split, batch_rows), workers=count, depth=read_ahead)
