"""Changelog of a compaction unit (``changelog-producer`` lookup or full-compaction): the diff
of the bucket's merged states before and after the unit, written as changelog files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.data_file import FILE_SOURCE_COMPACT, SEQUENCE_NUMBER, VALUE_KIND, DataFileWriter
from lake_assets.lsm.changelog import diff_states
from lake_assets.lsm.key_compare import key_view
from lake_assets.lsm.merge import is_retract, sort_and_merge
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split
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
    """Changelog files of a lookup or full-compaction unit (the diff of the bucket's states)."""
    keys = list(store.schema.trimmed_primary_keys)
    values = [n for n in store.schema.field_names if n not in keys]

    def read_all(files: Sequence[DataFileMeta]) -> pa.Table:
        parts = [reader.read_file(split, f, with_system=True) for f in files]
        return pa.concat_tables(parts) if parts else _state_schema(reader).empty_table()

    before_rows = read_all(task.before_files)
    if task.changelog_producer == "lookup":
        fresh = read_all([f for f in task.input_files if f.level == 0])
        if fresh.num_rows == 0:
            return []
        # Keys are matched in key_view form: float keys equal as Paimon compares them.
        old_keys = key_view(before_rows.select(keys), keys)
        new_keys = key_view(fresh.select(keys), keys)
        if len(keys) == 1:
            touched = pc.unique(new_keys.column(keys[0]))
            before_rows = before_rows.filter(pc.is_in(old_keys.column(keys[0]), value_set=touched))
        else:
            # composite keys: a semi join keeps the old rows of keys the new data touches
            touched_keys = new_keys.group_by(keys, use_threads=False).aggregate([])
            rows = old_keys.append_column("__row", pa.array(np.arange(before_rows.num_rows, dtype=np.int64)))
            joined = rows.join(touched_keys, keys=keys, join_type="left semi", use_threads=False)
            before_rows = before_rows.take(np.sort(joined.column("__row").to_numpy()))
        after_rows = pa.concat_tables([before_rows, fresh])
    else:
        before_names = {f.file_name for f in task.before_files}
        fresh = read_all([f for f in split.files if f.file_name not in before_names])
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


def _state_schema(reader: SplitReader) -> pa.Schema:
    fields = [to_arrow_field(reader.schema.field(c)) for c in reader.read_columns]
    return pa.schema([*fields, pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False),
                      pa.field(VALUE_KIND, pa.int8(), nullable=False)])
