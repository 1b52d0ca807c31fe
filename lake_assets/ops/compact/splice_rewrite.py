"""A lookup unit's level-0 file written again with only its changed columns encoded.

A deletion-vector unit of a partial-update or aggregation table merges each level-0 row with its
key's live row above (`ops.dv_old_values`). Where the merge keeps every row (one output row per
input row, same keys in the same order) but changes some value columns (an aggregation's sums),
the new file is the level-0 file with those columns' chunks replaced
(`formats.parquet_splice.splice_columns`): the key, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the
unchanged value columns are copied as they are, and only the changed ones encoded, with the
options and row groups our writer gives them. The file's description (key range, statistics,
sequence range, delete count) is accounted from the rows as a rewrite accounts them
(`RollingFileWriter.write_prepared`).

The level-0 file's bytes are read again for its chunks: on a local file system only (a page-cache
read). On S3 that read is a HEAD and a GET of the whole file, and the round took no less CPU than
with the file written whole (`bench/bench_dv_splice_s3.py`, moto on loopback): elsewhere the file
is written whole.

Anything else is written whole as before (`spliced_rewrite` returns None): another format than
Parquet, a file index or Parquet bloom filters to build, a level-0 file our writer did not write
with this schema's Arrow layout (another writer's footer, or rows hidden by a deletion vector),
nested columns, or a footer the splice does not carry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets.formats.data_file import FILE_SOURCE_COMPACT, DataFileWriter
from lake_assets.formats.file_layout import DICTIONARY_SAMPLE_ROWS
from lake_assets.formats.format_options import parquet_bloom_filters, parquet_overrides
from lake_assets.formats.parquet_format import SplicedParquetWriter
from lake_assets.formats.parquet_splice import SpliceRefused, splice_columns
from lake_assets.io.local import LocalFileIO

if TYPE_CHECKING:
    from lake_assets.formats.rolling_writer import RollingFileWriter
    from lake_assets.ops.scan import Split
    from lake_assets.spec.manifest import DataFileMeta
    from lake_assets.store.file_store import FileStore


def changed_columns(writer: DataFileWriter, rows: pa.Table, merged: pa.Table) -> list[int] | None:
    """The file columns (by position) in which ``merged`` differs from ``rows``, None when the
    two are no row-for-row pair (row count, schema, or a key column differs) or nothing changed."""
    if merged.num_rows != rows.num_rows or merged.num_rows == 0:
        return None
    return _changed(writer, writer._layout(rows), writer._layout(merged))


def _changed(writer: DataFileWriter, old: pa.Table, new: pa.Table) -> list[int] | None:
    """`changed_columns` of two tables in the file's column layout."""
    if old.num_rows != new.num_rows or new.num_rows == 0 or not old.schema.equals(new.schema):
        return None
    changed = [i for i in range(old.num_columns) if not old.column(i).equals(new.column(i))]
    keys = len(writer.key_names)
    if not changed or changed[0] < keys:  # a key column changed: not the same rows
        return None
    return changed


def _spliceable(writer: DataFileWriter) -> bool:
    """Whether files of ``writer`` may be spliced: Parquet, flat columns, nothing built beside the
    rows (file index, Parquet bloom filters)."""
    return (writer.format.name == "parquet" and writer.index_plan is None
            and not parquet_bloom_filters(writer.schema.options, writer.arrow_schema)
            and not any(pa.types.is_nested(f.type) for f in writer.arrow_schema))


def _encoded_columns(writer: DataFileWriter, laid_out: pa.Table, changed: list[int], groups: list[int]) -> bytes:
    """A Parquet file of the ``changed`` columns of ``laid_out`` (merged rows in the file's
    layout) alone, in row groups of ``groups`` rows, written with the options our writer would
    give a file of these rows (dictionary choices made on its first rows, as `RollingFileWriter`
    makes them; only the changed columns' are made, each as for the whole file)."""
    schema = pa.schema([writer.arrow_schema.field(i) for i in changed])
    table = pa.Table.from_arrays([laid_out.column(i) for i in changed], schema=schema)
    options = writer.write_options(laid_out.slice(0, DICTIONARY_SAMPLE_ROWS), laid_out.num_rows,
                                   among=frozenset(schema.names))
    kwargs = {**options.parquet, **parquet_overrides(writer.schema.options, writer.arrow_schema, options.compression)}
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, schema, **kwargs) as out:
        start = 0
        for rows in groups:
            out.write_table(table.slice(start, rows), row_group_size=rows)
            start += rows
    return bytes(sink.getvalue().to_pybytes())


def spliced_rewrite(store: FileStore, split: Split, writer: DataFileWriter, meta: DataFileMeta, rows: pa.Table,
                    merged: pa.Table, level: int, rollings: list[RollingFileWriter]) -> list[DataFileMeta] | None:
    """Write ``merged``, the unit's output of level-0 file ``meta`` (whose rows, as read, are
    ``rows``), as a splice of ``meta``'s chunks and the changed columns' new ones, at ``level``;
    its description, or None (nothing written) when the file is to be written whole. The rolling
    writer used is added to ``rollings`` (the unit aborts it on a later failure)."""
    writer = writer.for_level(level)
    if not isinstance(store.file_io, LocalFileIO) or not _spliceable(writer):
        return None
    if merged.num_rows != rows.num_rows or merged.num_rows == 0:
        return None
    laid_out = writer._layout(merged)
    changed = _changed(writer, writer._layout(rows), laid_out)
    if changed is None:
        return None
    path = store.data_file_path(split.partition, split.bucket, meta)
    old = store.file_io.read_bytes(path)
    if len(old) != meta.file_size:
        return None  # not the file the manifest describes: the rewrite reads (and checks) it
    try:
        footer = pq.read_metadata(pa.BufferReader(old))
    except (OSError, ValueError):
        return None
    # our writer's file of this layout: its Arrow schema (field ids included) and nothing else in
    # the key-value metadata; every row of it is read (no deletion vector hides one)
    if (footer.num_rows != merged.num_rows or set((footer.metadata or {}).keys()) != {b"ARROW:schema"}
            or not footer.schema.to_arrow_schema().equals(writer.arrow_schema, check_metadata=True)):
        return None
    groups = [footer.row_group(g).num_rows for g in range(footer.num_row_groups)]
    try:
        data = splice_columns(old, _encoded_columns(writer, laid_out, changed, groups), changed)
    except SpliceRefused:
        return None
    rolling = writer.rolling(level=level, file_source=FILE_SOURCE_COMPACT)
    rollings.append(rolling)
    rolling.write_prepared(merged, lambda sink: SplicedParquetWriter(sink, data), groups, laid_out=laid_out)
    return rolling.close()


__all__ = ["changed_columns", "spliced_rewrite"]
