"""Compaction of data-evolution tables (``data-evolution.enabled``), as Paimon HEAD's
``DataEvolutionCompactCoordinator.CompactPlanner`` plans it and ``DataEvolutionNormalCompactTask``
runs it (normal files only: blob and vector-store files are refused by their formats).

**Plan** (`plan_groups`, per partition): the files are split into stretches of contiguous row ids
(``[first, first + rows]``: adjacent files join, a gap splits); in each stretch, files of one row-id
range form a group (Java fails when overlapping files do not span the same range: so does this);
groups fill a bin in row-id order, weighing ``max(file size, source.split.open-file-cost)`` each.
A group heavier than ``target-file-size`` flushes the bin and is a unit alone; the bin is flushed
when it outweighs the target, and at the end of the stretch. A flushed bin is a unit when it holds
at least ``compaction.min.file-num`` files.

**Rewrite** (`rewrite_group`): the unit's rows merged as a read merges them (ops/data_evolution_read.py),
every table column, into one file (HEAD sets no target size or row count for it) of the current
schema: ``_FIRST_ROW_ID`` the unit's first, the sequence range the inputs' smallest min and largest
max, ``_FILE_SOURCE`` COMPACT, no ``_WRITE_COLS`` (all columns). No system column is stored, so a
row's ``_SEQUENCE_NUMBER`` becomes the output's max, as after HEAD's compaction; ``_ROW_ID`` and
every value stay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.data_file import DataFileWriter
from lake_assets.ops.data_evolution_read import iter_raw, overlap_groups, ranged_files, raw_units
from lake_assets.ops.read import SplitReader
from lake_assets.spec.manifest import DataFileMeta, FileSource

if TYPE_CHECKING:
    from lake_assets.ops.scan import Split
    from lake_assets.options import CoreOptions
    from lake_assets.store.file_store import FileStore

_UNBOUNDED = 2**62  # HEAD's "99999 G" target size and Long.MAX_VALUE row count: one output file


def _stretches(files: Sequence[DataFileMeta], table: str) -> list[list[tuple[int, int, DataFileMeta]]]:
    """Files by contiguous row ids (RangeHelper over ``[first, first + rows]``), in row-id order."""
    ranged = ranged_files(files, f"compact {table}", table)
    out: list[list[tuple[int, int, DataFileMeta]]] = []
    end = None
    for lo, hi, f in ranged:
        if end is not None and lo <= end:
            out[-1].append((lo, hi, f))
            end = max(end, hi + 1)
        else:
            out.append([(lo, hi, f)])
            end = hi + 1
    return out


def _groups(stretch: list[tuple[int, int, DataFileMeta]], table: str) -> list[list[DataFileMeta]]:
    """The files of one stretch by overlapping row ids; each group's files span one range."""
    return overlap_groups(stretch, f"compact {table}")


def plan_groups(files: Sequence[DataFileMeta], opts: CoreOptions, table: str) -> list[list[DataFileMeta]]:
    """The units of one partition's files (see the module docstring). Pure."""
    target, open_cost, min_files = opts.target_file_size, opts.split_open_file_cost, opts.compaction_min_file_num
    units: list[list[DataFileMeta]] = []

    def flush(bin_files: list[DataFileMeta]) -> None:
        if bin_files and len(bin_files) >= min_files:
            units.append(list(bin_files))

    for stretch in _stretches(files, table):
        bin_files: list[DataFileMeta] = []
        weight = 0
        for group in _groups(stretch, table):
            group_weight = sum(max(f.file_size, open_cost) for f in group)
            if group_weight > target:
                flush(bin_files)
                bin_files, weight = [], 0
                flush(group)
                continue
            bin_files += group
            weight += group_weight
            if weight > target:
                flush(bin_files)
                bin_files, weight = [], 0
        flush(bin_files)
    return units


def _merged_rows(reader: SplitReader, split: Split, batch_rows: int) -> Iterator[pa.Table]:
    """The split's rows merged per row-id range, in row-id order, ``batch_rows`` at a time."""
    for meta in raw_units(reader, split):
        yield from iter_raw(reader, split, meta, False, batch_rows)


def rewrite_group(store: FileStore, split: Split, reader: SplitReader, batch_rows: int
                  ) -> DataFileMeta:
    """Rewrite one unit (``split.files``) into one file; its description (see the module docstring)."""
    group = split.files
    schema = store.schema
    # one output file, as HEAD's task: no size or row-count rolling
    options = {k: v for k, v in schema.options.items() if k != "target-file-row-num"}
    writer = DataFileWriter(store.file_io, store.bucket_dir(split.partition, split.bucket),
                            dataclasses.replace(schema, options=options),
                            dataclasses.replace(store.data_file_config(), target_file_size=_UNBOUNDED))
    rolling = writer.rolling(level=0, file_source=FileSource.COMPACT)
    try:
        for part in _merged_rows(reader, split, batch_rows):
            rolling.write(part)
        written = rolling.close()
    except BaseException:
        rolling.abort()
        raise
    rows = sum(f.row_count for f in written)
    expected = sum(g[0].row_count for g in _groups([t for s in _stretches(group, store.name) for t in s], store.name))
    if len(written) != 1 or rows != expected:
        store.file_io.delete_many(f"{writer.bucket_dir}/{f.file_name}" for f in written)
        raise CorruptMetadataError(
            f"Cannot compact {store.name}: the files from {group[0].file_name} on gave {rows} rows in "
            f"{len(written)} files, their manifest entries {expected} rows in one")
    first = min(f.first_row_id for f in group if f.first_row_id is not None)
    return dataclasses.replace(written[0], first_row_id=first,
                               min_sequence_number=min(f.min_sequence_number for f in group),
                               max_sequence_number=max(f.max_sequence_number for f in group))


def data_reader(store: FileStore) -> SplitReader:
    """A reader of every table column (no system column, no defaults filled)."""
    return SplitReader(store, store.schema)


__all__ = ["data_reader", "plan_groups", "rewrite_group"]
