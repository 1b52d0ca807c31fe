"""Compaction of an append table's unit: each group of files rewritten into one rolling output
(row tracking: each row's ids kept; data evolution: one file of the merged row-id range), the
rewritten files' deletion vectors dropped. Moved out of `rewrite.run_compaction_task` as it was."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_assets.formats.data_file import FILE_SOURCE_COMPACT, SEQUENCE_NUMBER
from lake_assets.formats.rolling_writer import RollingFileWriter
from lake_assets.lsm.bucketed_append import output_sequences, sequence_order
from lake_assets.ops.append_vectors import change_vectors
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact.data_evolution_compact import rewrite_group
from lake_assets.ops.compact.memory import read_batch_rows
from lake_assets.ops.compact.plan import CompactionTask
from lake_assets.ops.compact.row_tracking_rewrite import check_compactable, tracked_rows, with_write_cols
from lake_assets.ops.compact.unit_inputs import gathered
from lake_assets.ops.row_tracking import data_evolution_enabled, row_tracking_enabled
from lake_assets.ops.scan import Split
from lake_assets.spec.manifest import DataFileMeta, IndexManifestEntry

if TYPE_CHECKING:
    from lake_assets.ops.compact.rewrite import UnitFiles
    from lake_assets.store.file_store import FileStore


def numbered(pieces: Iterable[pa.Table], first: int) -> Iterator[pa.Table]:
    """``pieces`` with a ``_SEQUENCE_NUMBER`` column numbering their rows from ``first`` on."""
    for piece in pieces:
        n = piece.num_rows
        yield piece.append_column(SEQUENCE_NUMBER, pa.array(np.arange(first, first + n, dtype=np.int64)))
        first += n


def rewrite_append_groups(
    store: FileStore, task: CompactionTask, unit: UnitFiles, split: Split, chunk_rows: int,
    before: list[DataFileMeta], after: list[DataFileMeta], rollings: list[RollingFileWriter], index_paths: list[str],
) -> CommitMessage:
    """Rewrite the unit's ``append_groups``: its message. ``before``, ``after``, ``rollings`` and
    ``index_paths`` are the caller's, which removes what they hold when this fails."""
    opts = store.schema.core_options
    batch_rows = min(chunk_rows, read_batch_rows(opts))
    tracking = row_tracking_enabled(store.schema.options)
    evolving = data_evolution_enabled(store.schema.options)
    for group in task.append_groups:
        ordered = sorted(group, key=lambda f: f.min_sequence_number)
        if evolving:  # one file of the unit's merged rows (ops/compact/data_evolution_compact.py)
            unit_split = Split(task.partition, task.partition_values, task.bucket, task.total_buckets,
                               list(group))
            after.append(rewrite_group(store, unit_split, unit.data_reader, batch_rows))
            before += group
            continue
        if tracking:
            # each row's _ROW_ID and _SEQUENCE_NUMBER stored in the output, whose sequence
            # range is its rows' (ops/compact/row_tracking_rewrite.py)
            check_compactable(store, group)
            rolling = unit.tracked_writer.rolling(level=0, file_source=FILE_SOURCE_COMPACT)
            pieces = tracked_rows(unit.tracked_reader, split, ordered, batch_rows)
        elif task.bucket >= 0 and task.total_buckets > 0:
            # a fixed-bucket bucket: rows numbered one by one from the first input's number, as
            # Java's compactRewrite, so rolled outputs hold disjoint ranges in their rows' order
            rolling = unit.writer.rolling(level=0, file_source=FILE_SOURCE_COMPACT)
            pieces = numbered(
                (piece for f in sequence_order(group) for piece in unit.reader.iter_file(split, f, False, None,
                                                                                      batch_rows)),
                output_sequences(group))
        else:
            seq_range = (min(f.min_sequence_number for f in group), max(f.max_sequence_number for f in group))
            rolling = unit.writer.rolling(level=0, file_source=FILE_SOURCE_COMPACT, sequence_range=seq_range)
            # the files in sequence order, streamed: a row group per ``chunk_rows`` rows,
            # never the group whole (its files add up to the target file size)
            pieces = (piece for f in ordered
                      for piece in unit.reader.iter_file(split, f, False, None, batch_rows))
        rollings.append(rolling)
        for chunk in gathered(pieces, chunk_rows):
            rolling.write(chunk)
            del chunk  # written: not held while the next one is read
        written = rolling.close()
        after += with_write_cols(written, store.schema) if tracking else written
        before += group
    old_index: tuple[IndexManifestEntry, ...] = ()
    new_index: tuple[IndexManifestEntry, ...] = ()
    if task.deletion_vectors:  # the rewritten files' vectors go (ops/append_vectors.py)
        gone = {f.file_name for f in before}
        old_index, new_index, written_index = change_vectors(store, split, gone=gone, loader=unit.vectors)
        index_paths += written_index
    return CommitMessage(task.partition, task.bucket, task.total_buckets,
                         compact_before=tuple(before), compact_after=tuple(after),
                         index_before=old_index, index_after=new_index)
