"""Compaction's fan-in bounded: Paimon's ``sort-spill-threshold`` (issue 17 §2, round 6).

A streamed merge holds one read batch and one open file per sorted run, so a unit merging
hundreds of overlapping level-0 runs (a postpone or write-only table fed by many small commits,
a full compaction after many rounds) held hundreds of them. With more runs than the threshold,
the excess is first merged into local spill runs (`ops.spill`, the writer's spill files) at most
``threshold`` runs at a time, each time the consecutive runs with the smallest total size, until
at most ``threshold`` inputs are left; those are merged as before. So no merge ever has more
than ``threshold`` inputs open.

Paimon's `MergeSorter` spills the ``runs - threshold`` smallest runs each to its own local file
and then merges all of them at once: its spilled readers are cheap (one compressed 64 KiB block)
while a Parquet reader is not. Here every input holds a batch whatever it reads, so the number of
inputs is what has to shrink: the spill merges runs first, as the write path's external sort
folds its runs at ``local-sort.max-num-file-handles`` (`ops.write_spill`).

Spill runs keep raw records, sorted as the merge sorts them and never merged (merge engines are
not associative: partial-update with ``remove-record-on-delete`` forgets a -D merged with a later
insert), so the final merge sees each key's every record at once and its output - rows, sequence
numbers, row kinds, the deletion vectors and first-row lookups fed from it - is what it was
without spilling. Folding *consecutive* inputs (in the merge's input order) keeps records with
equal key and sequence in the order the unspilled merge concatenates them, so even such ties
resolve the same way.

Local disk: a unit's spill runs live in one private directory (`SpillDirectory`) removed after
each interval, on failure and on interrupt. ``write-buffer-spill.max-disk-size`` bounds it: a
run that would exceed it is dropped and the remaining inputs are merged at once (the disk budget
wins over the fan-in, as the writer flushes to level 0 when its spill disk is full); so does a
run the local disk has no room for (ENOSPC): spilling saves memory, it never fails a compaction
that would succeed without it.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.lsm.merge_reader import merge_sorted
from lake_assets.lsm.run_partition import chained
from lake_assets.ops.spill import SpillDirectory, SpillDiskFull, SpillRun
from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.options import CoreOptions

# a full local disk or quota while a fold is written: the fold is dropped, not the compaction
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)

__all__ = ["bounded_inputs", "fold_window", "sort_spill_threshold", "spill_directory"]


def sort_spill_threshold(options: CoreOptions) -> int:
    """``sort-spill-threshold``: the most sorted runs a compaction merge reads at once.

    Unset, Paimon's `CoreOptions.sortSpillThreshold` takes ``num-sorted-run.stop-trigger`` + 1
    (9 with default options), and its writers always have the local disk to spill to; so does
    this default (a unit at or below it merges exactly as before)."""
    configured = options.sort_spill_threshold
    return options.num_sorted_run_stop_trigger + 1 if configured is None else configured


def spill_directory(options: CoreOptions, spill_dir: str | None = None) -> SpillDirectory:
    """A compaction unit's private spill directory, with the table's spill codec and disk budget,
    made under ``spill_dir`` (a resolved `lake_assets.ops.spill.spill_root`; None: system temp)."""
    return SpillDirectory(compression=options.spill_compression, zstd_level=options.spill_zstd_level,
                          max_disk_bytes=options.write_buffer_spill_max_disk_size, parent=spill_dir)


@dataclass
class _Input:
    """One input of a merge: a sorted run of data files or a spill run, with its size in bytes."""

    size: int
    files: Sequence[DataFileMeta] = ()
    run: SpillRun | None = None

    def open(self, open_file: Callable[[DataFileMeta], Iterator[pa.Table]]) -> Iterator[pa.Table]:
        return self.run.batches() if self.run is not None else chained(self.files, open_file)


def fold_window(sizes: Sequence[int], width: int) -> int:
    """Where the ``width`` consecutive inputs with the smallest total size start (the first such)."""
    total = sum(sizes[:width])
    best, at = total, 0
    for start in range(1, len(sizes) - width + 1):
        total += sizes[start + width - 1] - sizes[start - 1]
        if total < best:
            best, at = total, start
    return at


def bounded_inputs(
    runs: Sequence[Sequence[DataFileMeta]],
    open_file: Callable[[DataFileMeta], Iterator[pa.Table]],
    *,
    threshold: int,
    spill: SpillDirectory,
    key_names: Sequence[str],
    sort_chunk: Callable[[pa.Table], pa.Table],
    step_rows: int,
    batch_rows: int,
) -> list[Iterator[pa.Table]]:
    """One input per sorted run of ``runs`` (in their order), at most ``threshold`` of them.

    While there are more, the consecutive ``min(threshold, inputs - threshold + 1)`` inputs with
    the smallest total size are merged (``sort_chunk``: sorted, not merged) into one spill run of
    ``spill`` in their place, in merge steps of ``step_rows`` rows and batches of about
    ``batch_rows`` rows; a fold's inputs are deleted once it is written. The caller merges the
    inputs returned and removes ``spill``'s directory afterwards (or on failure).
    """
    if threshold < 2:
        raise ValueError(f"threshold must be at least 2, got {threshold}")
    items = [_Input(sum(f.file_size for f in run), files=run) for run in runs]
    while len(items) > threshold:
        width = min(threshold, len(items) - threshold + 1)
        start = fold_window([item.size for item in items], width)
        window = items[start:start + width]
        try:
            run = _fold(window, open_file, spill, key_names, sort_chunk, step_rows, batch_rows)
        except SpillDiskFull:
            break  # the budget is reached: what is left is merged at once
        except OSError as exc:
            if exc.errno not in _DISK_FULL:
                raise
            break  # the local disk is full (the partial run is removed): likewise
        spill.delete(item.run for item in window if item.run is not None)
        items[start:start + width] = [] if run is None else [_Input(run.file_bytes, run=run)]
    return [item.open(open_file) for item in items]


def _fold(
    window: Sequence[_Input],
    open_file: Callable[[DataFileMeta], Iterator[pa.Table]],
    spill: SpillDirectory,
    key_names: Sequence[str],
    sort_chunk: Callable[[pa.Table], pa.Table],
    step_rows: int,
    batch_rows: int,
) -> SpillRun | None:
    """The records of ``window``'s inputs as one spill run (None: they hold no rows)."""
    spill.count_merge(len(window))
    chunks = merge_sorted([item.open(open_file) for item in window], key_names, sort_chunk, min_rows=step_rows)
    first = next(chunks, None)
    if first is None:
        return None
    schema = first.schema
    steps = _prepended(first, chunks)
    # a local (or ``chain([first], ...)``, whose argument tuple lives as long as the chain) would
    # hold the first step - up to twice compaction.merge-rows rows - until the whole fold is written
    del first
    return spill.write_run(steps, schema, key_names, rows_per_batch=batch_rows, within_budget=True)


def _prepended(first: pa.Table, rest: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """``first`` then ``rest``, holding ``first`` only until the consumer asks for the next."""
    holder = [first]
    del first
    yield holder.pop()
    yield from rest
