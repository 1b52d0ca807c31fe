"""Columns made NOT NULL after files holding nulls in them were written (docs/format.md §2.4).

Paimon Java 0.9 lets ``ALTER TABLE ... ALTER COLUMN c SET NOT NULL`` through whatever the table
holds (Paimon 1.x behind ``alter-column-null-to-not-null.disabled = false``; lake_assets refuses
the change itself). Files written while the column was nullable keep their nulls, and Java's
readers return them: its read maps a file's column to the table's by ``equalsIgnoreNullable``,
no cast and no check, so a row's ``isNullAt`` stays true. lake_assets' reads return them as nulls
too, with the column declared nullable in every read of such a table (the same schema for every
file, batch and engine: `relaxed_columns`, `read_arrow_schema`), never a schema that claims NOT
NULL over nulls. Writing such a null into a new file under the NOT NULL schema is refused by
every data file writer (`DataFileWriter`), and a compaction that meets one says which columns and
files (`rewrite_error`): Java 0.9's primary-key compaction writes it into a required Parquet
column and leaves a file no reader can decode.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, InvalidDataError, NullInNotNullColumnError
from lake_assets.spec.arrow_types import to_arrow_field
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.schema import TableSchema

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


def relaxed_columns(store: FileStore, schema: TableSchema) -> frozenset[str]:
    """The columns NOT NULL in ``schema`` that an older schema of the table has nullable: files
    written under it may hold nulls there. Primary-key columns are NOT NULL from the table's
    creation on (Java makes them so) and never count."""
    strict = {f.id: f.name for f in schema.fields if not f.type.nullable and f.name not in schema.primary_keys}
    if not strict or schema.id == 0:
        return frozenset()
    out: set[str] = set()
    for schema_id in range(schema.id):
        try:
            older = store.schema_by_id(schema_id)  # cached by the store: read once per handle
        except CorruptMetadataError:
            if store.file_io.exists(store.paths.schema_file(schema_id)):
                raise
            continue  # a gap in the ids: no file names it
        for f in older.fields:
            if f.id in strict and f.type.nullable:
                out.add(strict[f.id])
    return frozenset(out)


def read_arrow_schema(store: FileStore, schema: TableSchema) -> pa.Schema:
    """The Arrow schema reads of ``schema`` give: the table's, with `relaxed_columns` nullable."""
    relaxed = relaxed_columns(store, schema)
    return pa.schema([to_arrow_field(f).with_nullable(True) if f.name in relaxed else to_arrow_field(f)
                      for f in schema.fields])


def rewrite_error(store: FileStore, files: Iterable[DataFileMeta], exc: NullInNotNullColumnError) -> InvalidDataError:
    """The error of a compaction of ``files`` whose writer refused a null in a NOT NULL column
    (`DataFileWriter`): when the table made that column NOT NULL after files with nulls were
    written, it names the files written while it was nullable; else ``exc`` as it is."""
    schema = store.schema
    if exc.column not in relaxed_columns(store, schema):
        return exc
    fid = schema.field(exc.column).id
    older = sorted({f.file_name for f in files
                    if (old := store.schema_by_id(f.schema_id).field_by_id(fid)) is not None and old.type.nullable})
    return InvalidDataError(
        f"Cannot compact {store.name}: column {exc.column} became NOT NULL after {', '.join(older) or 'some files'} "
        f"were written (while it was nullable), and rows read from them are null there ({exc}). Paimon cannot "
        f"store a null in a NOT NULL column (Java 0.9's compaction writes a file it then cannot read): make the "
        f"column nullable again or overwrite those rows")
