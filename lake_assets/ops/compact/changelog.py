"""Changelog of a compaction unit (``changelog-producer`` lookup or full-compaction): the diff
of the bucket's merged states before and after the unit, written as changelog files."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.data_file import VALUE_KIND, DataFileWriter
from lake_assets.lsm.changelog import diff_states
from lake_assets.lsm.key_compare import key_view
from lake_assets.lsm.key_membership import sorted_key_mask
from lake_assets.lsm.merge import is_retract, sort_and_merge, sort_for_merge
from lake_assets.lsm.merge_engine.function import MergeFunction
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.lsm.merge_reader import merge_sorted
from lake_assets.lsm.run_partition import RunCursor, key_at, split_into_runs
from lake_assets.ops.compact.fan_in import bounded_inputs, sort_spill_threshold, spill_directory
from lake_assets.ops.lookup_unit_rules import folds_lone_records, lookup_merge_function
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split
from lake_assets.ops.streaming_read import stream_bounds
from lake_assets.spec.manifest import DataFileMeta, FileSource

if TYPE_CHECKING:
    from lake_assets.ops.compact.plan import CompactionTask
    from lake_assets.store.file_store import FileStore


def _merged_state(store: FileStore, data: pa.Table, merge_fn: MergeFunction) -> pa.Table:
    """One live row per key (retract results removed)."""
    opts = store.schema.core_options
    keys = list(store.schema.trimmed_primary_keys)
    merged = sort_and_merge(data, keys, merge_fn, opts.sequence_fields, opts.sequence_descending)
    keep = ~is_retract(merged.column(VALUE_KIND).to_numpy())
    return merged if keep.all() else merged.filter(pa.array(keep))


def produce_changelog(store: FileStore, task: CompactionTask, split: Split, reader: SplitReader,
                      spill_dir: str | None = None) -> list[DataFileMeta]:
    """Changelog files of a lookup or full-compaction unit (the diff of the bucket's states);
    its fan-in spill goes under ``spill_dir`` (a resolved `lake_assets.ops.spill.spill_root`).

    Only keys with new records can change. The new records (the unit's level 0 for ``lookup``,
    everything below the top level for ``full-compaction``) are streamed through the bounded
    k-way merge (`merge_reader.merge_sorted`) in ascending key chunks of ``read.batch-size``
    rows; each chunk's older versions come from the older files, read forward once per sorted
    run (`run_partition.RunCursor`), and the chunk's diff is written at once. Memory is a few
    batches, not the bucket nor the unit, as in Paimon's per-key changelog wrappers.
    """
    keys = list(store.schema.trimmed_primary_keys)
    values = [n for n in store.schema.field_names if n not in keys]
    if task.changelog_producer == "lookup":
        fresh_files = [f for f in task.input_files if f.level == 0]
    else:
        before_names = {f.file_name for f in task.before_files}
        fresh_files = [f for f in split.files if f.file_name not in before_names]
    if not fresh_files:
        return []
    opts = store.schema.core_options
    batch_rows, _ = stream_bounds(opts)

    def open_file(meta: DataFileMeta) -> Iterator[pa.Table]:
        return reader.iter_file(split, meta, True, None, batch_rows)

    older = [RunCursor(run, open_file) for run in split_into_runs(task.before_files, reader.key_types)]
    # Keys with new records get a -U/+U pair even when the old record wins (Java's lookup and
    # full-compaction wrappers); first-row's wrapper emits only the +I of a new key.
    unchanged_pairs = engine_of(opts).changelog_for_unchanged_keys
    before_fn = merge_fn = store.merge_function()
    if folds_lone_records(opts, task):
        # the rows the unit writes (ops/dv_old_values.py): the after images must be those rows;
        # the before image is the key's newest row above level 0 as stored (Java's highLevel)
        merge_fn = lookup_merge_function(merge_fn)

    def diff(fresh: pa.Table) -> pa.Table:
        # the chunk holds every new version of its keys (merge_sorted); older ones from the runs
        new_keys = fresh.select(keys)
        new_keys = new_keys.take(pc.sort_indices(key_view(new_keys, keys),
                                                 sort_keys=[(k, "ascending") for k in keys]))
        parts: list[pa.Table] = []

        def keep(rows: pa.Table) -> None:
            hit = sorted_key_mask(rows, new_keys, keys)
            if hit.any():
                parts.append(rows.filter(pa.array(hit)))

        lo, hi = key_at(new_keys, keys, 0), key_at(new_keys, keys, new_keys.num_rows - 1)
        for cursor in older:
            cursor.visit(lo, hi, keys, keep)
        before_rows = pa.concat_tables(parts) if parts else fresh.schema.empty_table()
        before_state = _merged_state(store, before_rows, before_fn)
        after_state = _merged_state(store, pa.concat_tables([before_rows, fresh]), merge_fn)
        return diff_states(before_state, after_state, keys, values, row_deduplicate=opts.changelog_row_deduplicate,
                           touched_keys=new_keys if unchanged_pairs else None)

    writer = DataFileWriter(store.file_io, store.bucket_dir(task.partition, task.bucket), store.schema,
                            store.data_file_config(changelog=True))
    # Java writes a compaction's changelog with the unit's output level (createRollingChangelogFileWriter
    # (outputLevel)), which also picks its format and codec; Java 0.9's batch reads of first-row tables
    # skip level-0 files, changelog too. Its file source is APPEND, as every changelog file's in Java.
    rolling = writer.rolling(level=task.output_level, file_source=FileSource.APPEND)
    spill = spill_directory(opts, spill_dir)
    try:
        # many level-0 runs are merged at most sort-spill-threshold at a time (fan_in.py), as
        # the unit's own merge: spill runs keep raw records, so `diff` sees the same chunks' rows
        inputs = bounded_inputs(split_into_runs(fresh_files, reader.key_types), open_file,
                                threshold=sort_spill_threshold(opts), spill=spill, key_names=keys,
                                sort_chunk=lambda c: sort_for_merge(c, keys, opts.sequence_fields,
                                                                    opts.sequence_descending),
                                step_rows=batch_rows, batch_rows=batch_rows)
        for changes in merge_sorted(inputs, keys, diff, min_rows=batch_rows, max_step_rows=batch_rows):
            if changes.num_rows:
                rolling.write(changes)
            del changes  # not held while the next chunk is diffed (as in rewrite)
    except BaseException:
        rolling.abort()
        raise
    finally:
        spill.cleanup()
    return rolling.close()
