"""Changelog of a compaction unit (``changelog-producer`` lookup or full-compaction): the diff
of the bucket's merged states before and after the unit, written as changelog files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.data_file import FILE_SOURCE_COMPACT, SEQUENCE_NUMBER, VALUE_KIND, DataFileWriter
from lake_assets.lsm.changelog import diff_states
from lake_assets.lsm.key_compare import key_view
from lake_assets.lsm.merge import is_retract, sort_and_merge
from lake_assets.lsm.merge_engine.first_row import sorted_key_mask
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split
from lake_assets.ops.streaming_read import stream_bounds
from lake_assets.spec.arrow_types import to_arrow_field
from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.ops.compact.plan import CompactionTask
    from lake_assets.store.file_store import FileStore


def _merged_state(store: FileStore, data: pa.Table) -> pa.Table:
    """One live row per key (retract results removed)."""
    opts = store.schema.core_options
    keys = list(store.schema.trimmed_primary_keys)
    merged = sort_and_merge(data, keys, store.merge_function(), opts.sequence_fields, opts.sequence_descending)
    keep = ~is_retract(merged.column(VALUE_KIND).to_numpy())
    return merged if keep.all() else merged.filter(pa.array(keep))


def produce_changelog(store: FileStore, task: CompactionTask, split: Split, reader: SplitReader) -> list[DataFileMeta]:
    """Changelog files of a lookup or full-compaction unit (the diff of the bucket's states).

    Only keys with new records can change, so the state before is read for those keys alone:
    the older files are streamed in batches of ``read.batch-size`` rows and each batch keeps
    the rows whose key the new records hold. Memory is the new records, their older versions
    and one batch, not the bucket (which the older files of a lookup unit are).
    """
    keys = list(store.schema.trimmed_primary_keys)
    values = [n for n in store.schema.field_names if n not in keys]

    def read_all(files: Sequence[DataFileMeta]) -> pa.Table:
        parts = [reader.read_file(split, f, with_system=True) for f in files]
        return pa.concat_tables(parts) if parts else _state_schema(reader).empty_table()

    if task.changelog_producer == "lookup":
        fresh = read_all([f for f in task.input_files if f.level == 0])
    else:
        before_names = {f.file_name for f in task.before_files}
        fresh = read_all([f for f in split.files if f.file_name not in before_names])
    if fresh.num_rows == 0:
        return []
    before_rows = _older_versions(reader, split, task.before_files, fresh, keys,
                                  stream_bounds(store.schema.core_options)[0])
    after_rows = pa.concat_tables([before_rows, fresh])
    before_state = _merged_state(store, before_rows)
    after_state = _merged_state(store, after_rows)
    opts = store.schema.core_options
    dedupe = opts.changelog_row_deduplicate
    # Keys with new records get a -U/+U pair even when the old record wins (Java's lookup and
    # full-compaction wrappers); first-row's wrapper emits only the +I of a new key.
    touched = fresh.select(keys) if engine_of(opts).changelog_for_unchanged_keys else None
    changes = diff_states(before_state, after_state, keys, values, row_deduplicate=dedupe, touched_keys=touched)
    if changes.num_rows == 0:
        return []
    writer = DataFileWriter(store.file_io, store.bucket_dir(task.partition, task.bucket), store.schema,
                            store.data_file_config(changelog=True))
    # Java writes a compaction's changelog with the unit's output level (createRollingChangelogFileWriter
    # (outputLevel)); Java 0.9's batch reads of first-row tables skip level-0 files, changelog too.
    return writer.write(changes, level=task.output_level, file_source=FILE_SOURCE_COMPACT)


def _older_versions(
    reader: SplitReader, split: Split, files: Sequence[DataFileMeta], fresh: pa.Table, keys: list[str],
    batch_rows: int,
) -> pa.Table:
    """The rows of ``files`` whose key ``fresh`` holds, in file and row order (as reading the
    files whole and filtering them would give), read ``batch_rows`` rows at a time."""
    # the new keys once, in Paimon's key order (key_view: floats by Double.compare), for the
    # per-batch range lookups of `sorted_key_mask`
    new_keys = fresh.select(keys)
    new_keys = new_keys.take(pc.sort_indices(key_view(new_keys, keys), sort_keys=[(k, "ascending") for k in keys]))
    parts = []
    for meta in files:
        for batch in reader.iter_file(split, meta, True, None, batch_rows):  # a data file is key-sorted
            hit = sorted_key_mask(batch, new_keys, keys)
            if hit.any():
                parts.append(batch.filter(pa.array(hit)))
    return pa.concat_tables(parts) if parts else _state_schema(reader).empty_table()


def _state_schema(reader: SplitReader) -> pa.Schema:
    fields = [to_arrow_field(reader.schema.field(c)) for c in reader.read_columns]
    return pa.schema([*fields, pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False),
                      pa.field(VALUE_KIND, pa.int8(), nullable=False)])
