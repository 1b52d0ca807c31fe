"""Compaction rewrite: run planned units - merge and rewrite their files, relabel upgrades.

Each unit is independent: `run_compaction_task` turns one into a commit message (a distributed
job runs it on executors); `run_compaction_tasks` runs many in a bounded thread pool (pyarrow
releases the GIL while it decodes, sorts and encodes) and returns their messages in plan order.
An append table's unit is `append_rewrite.rewrite_append_groups`; how a unit reads its inputs
(batches, whole intervals) is `unit_inputs`; running many units at once is `unit_pool`'s.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_assets.formats.data_file import FILE_SOURCE_COMPACT, DataFileWriter
from lake_assets.lsm.lookup_merge import drop_level, with_level
from lake_assets.lsm.merge import is_retract, sort_and_merge, sort_for_merge
from lake_assets.lsm.merge_engine.first_row import KnownKeys
from lake_assets.lsm.merge_reader import merge_sorted
from lake_assets.lsm.run_partition import split_into_runs
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact.append_rewrite import rewrite_append_groups
from lake_assets.ops.compact.changelog import produce_changelog
from lake_assets.ops.compact.data_evolution_compact import data_reader
from lake_assets.ops.compact.fan_in import bounded_inputs, sort_spill_threshold, spill_directory
from lake_assets.ops.compact.memory import DEFAULT_MERGE_ROWS, merge_rows, read_batch_rows, run_batch_rows
from lake_assets.ops.compact.plan import CompactionTask
from lake_assets.ops.compact.row_tracking_rewrite import (
    tracked_reader,
    tracked_writer,
)
from lake_assets.ops.compact.splice_rewrite import spliced_rewrite
from lake_assets.ops.compact.unit_inputs import file_batches, merge_whole
from lake_assets.ops.compact.unit_pool import (  # moved there; imported from here as before (__all__)
    compaction_parallelism,
    discard_outputs,
    run_compaction_tasks,
)
from lake_assets.ops.deletion_vectors import VectorLoader
from lake_assets.ops.dv_compact import VectorUpdate
from lake_assets.ops.dv_key_lookup import remember_written_keys
from lake_assets.ops.dv_old_values import AboveLookup, OldValues
from lake_assets.ops.dv_row_cache import LookedUpRows, RowsKey, flushed_key, remember_written_rows, take_flushed
from lake_assets.ops.file_rows import checked_row_count
from lake_assets.ops.lookup_unit_rules import (
    folds_lone_records,
    lookup_merge_function,
    needs_old_values,
    relabel_candidate,
    same_rows,
)
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split
from lake_assets.ops.spill import SpillDirectory, spill_root
from lake_assets.spec.manifest import DataFileMeta, IndexManifestEntry

if TYPE_CHECKING:
    from lake_assets.formats.rolling_writer import RollingFileWriter
    from lake_assets.store.file_store import FileStore


# ``compaction.merge-rows`` when unset (`ops.compact.memory`): rows per merge step of a unit (a
# merge call holds at most about twice this; an interval of up to this many rows is read whole),
# also the first-row lookup's key chunk per run.
COMPACTION_CHUNK_ROWS = DEFAULT_MERGE_ROWS


class UnitFiles:
    """A unit's reader and writer, each built on first use: a unit that only relabels files
    (upgrades: no row read or written) builds neither. Their set-up (the schema's read plan, merge
    function, file format and options) was most of such a unit's cost (bench/RESULTS.md, session 12)."""

    def __init__(self, store: FileStore, task: CompactionTask) -> None:
        self.store = store
        self.task = task

    @functools.cached_property
    def vectors(self) -> VectorLoader:
        return VectorLoader(self.store)

    @functools.cached_property
    def reader(self) -> SplitReader:
        reader = SplitReader(self.store, self.store.schema)
        reader.vectors = self.vectors  # one loader per unit: an index file is checked once
        return reader

    @functools.cached_property
    def writer(self) -> DataFileWriter:
        return _writer(self.store, self.task)

    def file_rows(self, split: Split, meta: DataFileMeta) -> pa.Table:
        """``meta`` read whole with system columns (its deletion vector applied): a level-0 file
        the writer's flush just wrote from the rows it held (`dv_row_cache.take_flushed`), else
        from storage."""
        if meta.level == 0 and self.reader.key_filter is None:
            path = self.store.data_file_path(split.partition, split.bucket, meta)
            flushed = take_flushed(flushed_key(path, meta, self.reader.schema.id))
            if flushed is not None and not (split.dv_entries and meta.file_name in self.vectors.vectors(
                    split.dv_entries)):
                rows = self.reader.as_read(flushed, meta)
                if rows is not None:
                    return rows
        return self.reader.read_file(split, meta, with_system=True)

    def looked_up_rows(self, split: Split) -> LookedUpRows:
        """The rows of files above the unit, kept decoded between rounds (`ops.dv_row_cache`)."""

        def key(meta: DataFileMeta) -> RowsKey:
            path = self.store.data_file_path(split.partition, split.bucket, meta)
            return (path, meta.file_size, meta.level, self.reader.schema.id)

        # a reader that filters keys gives a file's rows in part: nothing of it may be kept
        options = self.store.schema.core_options
        budget = 0 if self.reader.key_filter is not None else options.lookup_cache_max_memory_size
        return LookedUpRows(partial(_selected_rows, self, split, rows=None), partial(_rows_at, self, split),
                            key, budget, self.store.paths.root)

    @functools.cached_property
    def data_reader(self) -> SplitReader:
        return data_reader(self.store)

    @functools.cached_property
    def tracked_reader(self) -> SplitReader:
        return tracked_reader(self.store, self.vectors)

    @functools.cached_property
    def tracked_writer(self) -> DataFileWriter:
        return tracked_writer(self.store, self.store.bucket_dir(self.task.partition, self.task.bucket))


def _writer(store: FileStore, task: CompactionTask) -> DataFileWriter:
    return DataFileWriter(store.file_io, store.bucket_dir(task.partition, task.bucket), store.schema,
                          store.data_file_config())


def run_compaction_task(
    store: FileStore,
    task: CompactionTask,
    *,
    chunk_rows: int | None = None,
    whole_read_rows: int | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
) -> CommitMessage:
    """Run one unit: merge and rewrite its sections, relabel upgrades; returns its commit message.

    Memory is bounded by ``chunk_rows`` (default: option ``compaction.merge-rows``) and the read
    batches of the sorted runs merged (`ops.compact.memory`), not by the bucket size. An interval
    of at most ``whole_read_rows`` input rows (default ``chunk_rows``, so the bound holds either
    way) is read file by file whole and merged once (`unit_inputs.merge_whole`); larger ones go through the
    streaming k-way merge. Both give the same rows in the same write calls. Runs that do not fit
    one merge spill under ``spill_dir`` (`lake_assets.ops.spill.spill_root`: else
    ``LAKE_ASSETS_SPILL_DIR``, Spark's local dirs, the system temp), checked before anything is written.
    """
    root = spill_root(spill_dir)
    opts = store.schema.core_options
    chunk_rows = merge_rows(opts) if chunk_rows is None else chunk_rows
    whole_rows = chunk_rows if whole_read_rows is None else whole_read_rows
    split = Split(task.partition, task.partition_values, task.bucket, task.total_buckets, list(task.input_files),
                  task.dv_entries)
    unit = UnitFiles(store, task)
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    rollings: list[RollingFileWriter] = []
    vectors = (VectorUpdate(store, split, lambda: unit.reader, task.dv_lookup_files, task.dv_rewrite_files,
                            unit.vectors) if task.deletion_vectors and not task.append_groups else None)
    # partial-update, aggregation, sequence.field: each key's live row above is merged in (dv_old_values.py)
    old_values = (OldValues(vectors, unit.looked_up_rows(split).source, store.schema.trimmed_primary_keys,
                            opts.sequence_fields) if vectors is not None and needs_old_values(opts) else None)
    if task.lookup_above_files:  # lookup compaction without vectors: the same merge, nothing marked
        above = AboveLookup(store, split, lambda: unit.reader, task.lookup_above_files, (), unit.vectors)
        old_values = OldValues(above, unit.looked_up_rows(split).source, store.schema.trimmed_primary_keys,
                               opts.sequence_fields)
    index_paths: list[str] = []
    # made for a streaming merge only (its directory at a first spill): a unit that relabels
    # files or merges them whole (every deletion-vector round of a small bucket) never spills
    spill: SpillDirectory | None = None
    try:
        if task.append_groups:
            return rewrite_append_groups(store, task, unit, split, chunk_rows, before, after, rollings,
                                         index_paths)
        key_names = list(store.schema.trimmed_primary_keys)
        merge_fn = store.merge_function()
        if old_values is not None or folds_lone_records(opts, task):
            merge_fn = lookup_merge_function(merge_fn)
        fan_in = sort_spill_threshold(opts)

        def sort_chunk(chunk: pa.Table) -> pa.Table:
            return sort_for_merge(chunk, key_names, opts.sequence_fields, opts.sequence_descending)
        known = None
        if task.lookup_files:  # streamed in key chunks along the output (memory: a chunk per run)
            known = KnownKeys(task.lookup_files, key_names, unit.reader.key_types,
                              lambda f: unit.reader.iter_file(split, f, False, key_names, chunk_rows))
        for section in task.sections:
            if section.kind == "keep":
                continue
            if section.kind == "upgrade":
                f = section.files[0]
                if vectors is not None and f.level == 0:
                    vectors.note_relabelled(f)
                before.append(f)
                after.append(f.upgrade(section.output_level))
                continue

            def merge_step(table: pa.Table, presorted: bool) -> pa.Table:
                return sort_and_merge(table, key_names, merge_fn, opts.sequence_fields, opts.sequence_descending,
                                      presorted=presorted)

            def merge(chunk: pa.Table, drop: bool = section.drop_delete) -> pa.Table:
                # with old values: merged with each key's row from above, whose position it marks
                merged = (merge_step(chunk, False) if old_values is None
                          else old_values.merge(chunk, merge_fn, merge_step))
                if vectors is not None and old_values is None:
                    vectors.note(merged)
                if known is not None:
                    merged = known.drop(merged)
                if drop:
                    keep = ~is_retract(merged.column("_VALUE_KIND").to_numpy())
                    if not keep.all():
                        merged = merged.filter(pa.array(keep))
                return merged

            # a lookup unit's one level-0 file whose merge changes none of its rows is relabelled,
            # not written again (`dv_old_values.relabel_candidate`)
            merged_first = None
            relabel = (relabel_candidate(opts, store.schema.id, section, whole_rows)
                       if old_values is not None else None)
            if relabel is not None:
                rows = unit.file_rows(split, relabel)
                merged_first = merge(rows)
                if same_rows(merged_first, rows):
                    before.append(relabel)
                    after.append(relabel.upgrade(section.output_level))
                    _remember_output(unit, split, section.output_level, after[-1:], [merged_first])
                    continue
                # every row kept, some value columns changed: the unchanged columns' chunks are
                # copied, only the changed ones encoded (`splice_rewrite`)
                spliced = spliced_rewrite(store, split, unit.writer, relabel, rows, merged_first,
                                          section.output_level, rollings)
                if spliced is not None:
                    before.append(relabel)
                    after += spliced
                    _remember_output(unit, split, section.output_level, spliced, [merged_first])
                    continue
                del rows
            # Intervals are key-disjoint and in key order, so their merged rows concatenate into
            # sorted output: one rolling writer fills target-sized files across all of them.
            rolling = unit.writer.rolling(level=section.output_level, file_source=FILE_SOURCE_COMPACT)
            rollings.append(rolling)
            # a lookup unit's output rows, read whole, are looked up by the next round: kept for
            # it while they add up to at most one merge step (`_remember_output`)
            outputs: list[pa.Table] | None = [] if old_values is not None else None
            for interval in section.intervals:
                if sum(f.row_count for f in interval) <= whole_rows:
                    # The streaming merge would gather all of these rows into one `merge` call
                    # anyway; reading whole files skips its per-row-group frontier bookkeeping.
                    merged_whole = (merge_whole(partial(unit.file_rows, split), interval, merge)
                                    if merged_first is None else merged_first)
                    merged_first = None
                    rolling.write(merged_whole)
                    if outputs is not None:
                        outputs.append(merged_whole)
                        if sum(t.num_rows for t in outputs) > whole_rows:
                            outputs = None
                    del merged_whole
                else:
                    outputs = None
                    # one input per sorted run (files of a level chain), at most
                    # sort-spill-threshold of them (the excess first merged into local spill
                    # runs, ops/compact/fan_in.py), each read in batches that together stay
                    # within the merge's bound: never a whole row group, and on this thread, not
                    # Arrow's pool (ops/compact/memory.py)
                    runs = split_into_runs(interval, unit.reader.key_types)
                    if spill is None:
                        spill = spill_directory(opts, root)
                    batch = run_batch_rows(chunk_rows, read_batch_rows(opts), min(len(runs), fan_in))
                    inputs = bounded_inputs(runs, partial(file_batches, unit.reader, split, batch), threshold=fan_in,
                                            spill=spill, key_names=key_names, sort_chunk=sort_chunk,
                                            step_rows=chunk_rows, batch_rows=batch)
                    for merged in merge_sorted(inputs, key_names, merge, min_rows=chunk_rows):
                        rolling.write(merged)
                        # written: not held while the next step gathers and merges (the loop
                        # variable would keep a whole step's output alive until next() returns)
                        del merged
                    del inputs
                    spill.cleanup()  # this interval's spill runs are merged
                before += interval
            written = rolling.close()
            after += written
            if outputs:
                _remember_output(unit, split, section.output_level, written, outputs)
            del outputs
        for f in task.dv_rewrite_files:
            # after the sections: rows their output supersedes must not come back in the rewrite
            assert vectors is not None
            rolling = unit.writer.rolling(level=f.level, file_source=FILE_SOURCE_COMPACT)
            rollings.append(rolling)
            rolling.write(vectors.without_superseded(f, unit.reader.read_file(split, f, with_system=True)))
            before.append(f)
            after += rolling.close()
        changelog = produce_changelog(store, task, split, unit.reader, root) if task.changelog_producer else []
        index_before: tuple[IndexManifestEntry, ...] = ()
        index_after: tuple[IndexManifestEntry, ...] = ()
        if vectors is not None:
            gone = {f.file_name for f in before} - {f.file_name for f in after}
            index_before, index_after, index_paths = vectors.finish(gone)
    except BaseException:
        for rolling in rollings:
            rolling.abort()
        bucket_dir = store.bucket_dir(task.partition, task.bucket)
        store.file_io.delete_many(bucket_dir + "/" + name for f in after
                                  if f.file_name not in {b.file_name for b in before}
                                  for name in (f.file_name, *f.extra_files))
        store.file_io.delete_many(index_paths)
        raise
    finally:
        if spill is not None:
            spill.cleanup()
    return CommitMessage(task.partition, task.bucket, task.total_buckets,
                         compact_before=tuple(before), compact_after=tuple(after),
                         compact_changelog=tuple(changelog), index_before=index_before, index_after=index_after)


def _remember_output(unit: UnitFiles, split: Split, level: int, files: Sequence[DataFileMeta],
                     outputs: Sequence[pa.Table]) -> None:
    """Keep the keys and rows of ``files``, a lookup unit's output written from ``outputs``, for
    the next round's lookups (`dv_key_lookup.remember_written_keys`, `dv_row_cache`): the rows as
    the unit's reader would give them back, with the level column."""
    looked_up = unit.looked_up_rows(split)
    if looked_up.budget <= 0:
        return
    rows = drop_level(pa.concat_tables(outputs))
    remember_written_keys(unit.store, split.partition, split.bucket, files, rows)
    if unit.reader.lookup_levels:
        rows = with_level(rows, level)
    remember_written_rows(files, rows, looked_up.key, looked_up.budget, looked_up.owner)


def _rows_at(unit: UnitFiles, split: Split, meta: DataFileMeta, positions: np.ndarray) -> pa.Table:
    """The rows of ``meta`` at ``positions`` (`_selected_rows`), their mask sized by the file's own
    row count once it is the manifest's (`ops.file_rows`)."""
    path = unit.store.data_file_path(split.partition, split.bucket, meta)
    mask = np.zeros(checked_row_count(unit.store, path, meta, read_follows=True), dtype=bool)
    mask[positions] = True
    return _selected_rows(unit, split, meta, mask)


def _selected_rows(unit: UnitFiles, split: Split, meta: DataFileMeta, rows: np.ndarray | None) -> pa.Table:
    """The ``rows`` (a bool per row; None: every row) of ``meta``, with system columns, no
    deletion vector applied."""
    whole = Split(split.partition, split.partition_values, split.bucket, split.total_buckets, [meta])
    return unit.reader.read_file(whole, meta, True, rows=rows)


__all__ = ["COMPACTION_CHUNK_ROWS", "UnitFiles", "compaction_parallelism", "discard_outputs", "run_compaction_task",
           "run_compaction_tasks"]
