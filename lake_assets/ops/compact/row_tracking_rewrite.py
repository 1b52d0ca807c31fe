"""Compaction of row-tracking tables (``row-tracking.enabled``, no data evolution), as Paimon HEAD.

Every row keeps its ``_ROW_ID`` and ``_SEQUENCE_NUMBER``: the rewritten file stores them as two
physical BIGINT NOT NULL columns after the table's columns (field ids ``2147483642`` and
``2147483646``, HEAD's ``SpecialFields.rowTypeWithRowTracking``), lists every column plus both in
``_WRITE_COLS``, has no ``_FIRST_ROW_ID`` and ``_FILE_SOURCE`` COMPACT (so the commit gives it no new
ids), and its sequence range is the smallest and largest ``_SEQUENCE_NUMBER`` of its rows. Sources:
``AppendOnlyFileStore.newWrite`` (the compaction read asks for both system columns),
``AppendTableCompactor`` / Spark's ``CompactProcedure`` (``withWriteType(rowTypeWithRowTracking)``),
``RowDataFileWriter`` with ``RowDataFileSequenceNumberTracker`` (the range from the rows, #7409),
``RowTrackingCommitUtils.assignRowTracking`` ("for compact file, do not assign first row id").

Readers take a row's stored value where the file holds one, else ``_FIRST_ROW_ID`` + position and
the file's max sequence number (``DataFileRecordReader``), so a second compaction keeps them too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.formats.data_file import DataFileWriter
from lake_assets.ops.data_evolution_read import iter_raw
from lake_assets.ops.read import SplitReader
from lake_assets.ops.row_tracking import ROW_ID, ROW_TRACKING_FIELDS, SEQUENCE_NUMBER
from lake_assets.spec.data_types import BigIntType, DataField
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.schema import TableSchema

if TYPE_CHECKING:
    from lake_assets.ops.deletion_vectors import VectorLoader
    from lake_assets.ops.scan import Split
    from lake_assets.store.file_store import FileStore

#: Field ids of the stored system columns (``SpecialFields.ROW_ID`` / ``SEQUENCE_NUMBER``).
ROW_ID_FIELD_ID = 2**31 - 1 - 5
SEQUENCE_NUMBER_FIELD_ID = 2**31 - 1 - 1


def tracked_schema(schema: TableSchema) -> TableSchema:
    """``schema`` with ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` appended as BIGINT NOT NULL: the
    layout of a compacted file (same schema id; the two are never table columns)."""
    extra = (DataField(ROW_ID_FIELD_ID, ROW_ID, BigIntType(nullable=False)),
             DataField(SEQUENCE_NUMBER_FIELD_ID, SEQUENCE_NUMBER, BigIntType(nullable=False)))
    return dataclasses.replace(schema, fields=(*schema.fields, *extra))


def tracked_writer(store: FileStore, bucket_dir: str) -> DataFileWriter:
    """A writer of compacted files of ``store``'s current schema with both system columns stored."""
    return DataFileWriter(store.file_io, bucket_dir, tracked_schema(store.schema), store.data_file_config())


def tracked_reader(store: FileStore, vectors: VectorLoader) -> SplitReader:
    """A reader of every table column plus ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` (no defaults
    filled: a compaction keeps the nulls the files hold)."""
    reader = SplitReader(store, store.schema, [*store.schema.field_names, *ROW_TRACKING_FIELDS])
    reader.vectors = vectors
    return reader


def check_compactable(store: FileStore, files: Sequence[DataFileMeta]) -> None:
    """Refuse files whose ``_WRITE_COLS`` leave out a column of the schema that wrote them: on a
    table without data evolution no Paimon writer makes one, and rewriting it would turn the
    columns it lacks into nulls."""
    for f in files:
        if f.write_cols is None:
            continue
        held = set(f.write_cols)
        missing = [n for n in store.schema_by_id(f.schema_id).field_names if n not in held]
        if missing:
            raise UnsupportedFeatureError(
                f"Cannot compact {store.name}: data file {f.file_name} holds a subset of the columns "
                f"(_WRITE_COLS lacks {', '.join(missing)}) on a table without data evolution")


def tracked_rows(reader: SplitReader, split: Split, files: Sequence[DataFileMeta], batch_rows: int
                 ) -> Iterator[pa.Table]:
    """The rows of ``files`` (in this order) with their ``_ROW_ID`` and ``_SEQUENCE_NUMBER``, in
    batches of at most ``batch_rows`` rows. A row without an id (a file with neither a first row
    id nor stored ids, which no Paimon writer leaves) is refused: its id cannot be kept."""
    for f in files:
        for part in iter_raw(reader, split, f, False, batch_rows):
            if part.column(ROW_ID).null_count:
                raise CorruptMetadataError(
                    f"Cannot compact {reader.store.name}: data file {f.file_name} of a row-tracking table has "
                    "rows without a _ROW_ID (no _FIRST_ROW_ID and no stored ids)")
            yield part


def with_write_cols(files: Sequence[DataFileMeta], schema: TableSchema) -> list[DataFileMeta]:
    """The compacted files' descriptions with ``_WRITE_COLS`` naming every column and both system
    columns (HEAD: the write type's names, since it differs from the table's row type)."""
    names = (*schema.field_names, *ROW_TRACKING_FIELDS)
    return [dataclasses.replace(f, write_cols=names) for f in files]


__all__ = [
    "ROW_ID_FIELD_ID",
    "SEQUENCE_NUMBER_FIELD_ID",
    "check_compactable",
    "tracked_reader",
    "tracked_rows",
    "tracked_schema",
    "tracked_writer",
    "with_write_cols",
]
