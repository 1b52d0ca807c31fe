"""A data file's row count as its manifest entry states it, checked against the file.

The manifest's ``_ROW_COUNT`` of a data file is what a plan sees before any file is opened, so it
is tempting to size things by it: the deletion vector's keep mask, the rows of a read that needs
no file column (a partition-only projection), the constant partition columns of such a read. A
damaged count would then allocate without bound (2**36 rows: tens of GB) or, smaller than the
file, silently drop rows. Nothing is sized by it unchecked: a read that must size something before
decoding takes the file's own count first (`FileFormat.row_count`: Parquet's footer, cached for the
read that follows; ORC's tail; Avro's block counts) and one that decodes compares what it got.

Paimon Java 0.9 never sizes a read by the manifest's count either: a projection of no file column
still opens the file and counts its rows by the format's own metadata (``ParquetReaderFactory``
passes ``ParquetFileReader.getRecordCount()``), and a deletion vector is applied position by
position as rows come (``ApplyDeletionFileRecordIterator``), a position past the end never
met. Java reads a file whose count disagrees with its manifest entry without noticing (its
statistics and split sizes are then wrong); lake_assets refuses it as the damaged metadata it is,
naming the file and both counts (`row_count_error`), before a row is returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.data_file_read import data_file_row_count
from lake_assets.spec.manifest import DataFileMeta

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


def row_count_error(table: str, path: str, meta: DataFileMeta, found: int | str) -> CorruptMetadataError:
    """The error of a data file holding ``found`` rows where its manifest entry says otherwise."""
    return CorruptMetadataError(
        f"Cannot read {table}: data file {path} holds {found} rows, but its manifest entry says "
        f"{meta.row_count} (_ROW_COUNT); the manifest or the file is damaged")


def checked_row_count(store: FileStore, path: str, meta: DataFileMeta, *, read_follows: bool = False) -> int:
    """The rows of the data file ``meta`` at ``path``, by the file's own metadata, once they are
    known to be the manifest's ``_ROW_COUNT`` (else `row_count_error`). ``read_follows``: the
    caller reads the file next, so a footer parsed before serves with no open (the read meets a
    missing file); otherwise the file must be there, as Java opens it to count rows: a footer
    parsed before serves once a size lookup finds the file at the size it was parsed at, else
    the file is opened."""
    found = data_file_row_count(store.file_io, path, meta.file_size if read_follows else None)
    if found != meta.row_count:
        raise row_count_error(store.name, path, meta, found)
    return found


def check_rows_read(store: FileStore, path: str, meta: DataFileMeta, rows: int) -> None:
    """Raise `row_count_error` unless a whole read of ``meta`` gave its ``_ROW_COUNT`` ``rows``."""
    if rows != meta.row_count:
        raise row_count_error(store.name, path, meta, rows)


__all__ = ["check_rows_read", "checked_row_count", "row_count_error"]
