"""Reading data files in any of their formats, system columns typed as every merge expects."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, MissingDataFileError, UnsupportedFeatureError
from lake_assets.formats.file_format import file_format, format_of_file
from lake_assets.formats.file_layout import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.io.file_io import FileIO
from lake_assets.spec.data_types import DataType
from lake_assets.spec.schema import TableSchema


def _system_types(data: pa.Table) -> pa.Table:
    """System columns as every format's reader hands them on: Avro stores _VALUE_KIND (TINYINT)
    as an ``int``, which merges must see as the int8 Parquet and ORC files give."""
    i = data.schema.get_field_index(VALUE_KIND)
    if i >= 0 and data.schema.field(i).type != pa.int8():
        data = data.set_column(i, pa.field(VALUE_KIND, pa.int8(), nullable=False), data.column(i).cast(pa.int8()))
    return data


@contextlib.contextmanager
def _read_errors(path: str) -> Iterator[None]:
    try:
        yield
    except FileNotFoundError:
        raise MissingDataFileError(f"Data file {path} is missing") from None
    except (pa.ArrowInvalid, OSError, CorruptMetadataError) as exc:
        raise CorruptMetadataError(f"Data file {path} is corrupt: {exc}") from exc
    except UnsupportedFeatureError as exc:
        raise UnsupportedFeatureError(f"Cannot read data file {path}: {exc}") from exc


def read_data_file(
    file_io: FileIO,
    path: str,
    columns: Sequence[str] | None = None,
    file_size: int | None = None,
    *,
    use_threads: bool = True,
    keep: np.ndarray | None = None,
) -> pa.Table:
    """Read columns of one data file in the format its name says; corrupt files raise
    CorruptMetadataError, missing ones MissingDataFileError.

    ``use_threads`` lets pyarrow decode columns in parallel; callers that already read several
    files at once turn it off. ``keep`` (a bool per row: what a deletion vector keeps) drops the
    other rows, as early as the format can (`FileFormat.read_rows`).
    """
    with _read_errors(path), file_io.open_data_file(path, file_size) as source:
        fmt = file_format(format_of_file(path))
        # data files never change: what a format parsed of one before may serve again
        if keep is None:
            return _system_types(fmt.read(source, columns, use_threads=use_threads, footer_key=path))
        return _system_types(fmt.read_rows(source, columns, keep, use_threads=use_threads, footer_key=path))


def data_file_row_count(file_io: FileIO, path: str, file_size: int | None = None) -> int:
    """The rows the data file at ``path`` holds by its own metadata (`FileFormat.row_count`); a
    Parquet footer parsed before, of a file of ``file_size`` bytes (the manifest's), serves it with
    no read (a file of another size is opened). Without ``file_size`` the file itself must be
    there: a footer parsed before serves once the file's size (a stat, cheaper than an open by
    two thirds on a local disk) is the one it was parsed at; else the file is opened. Errors as
    `read_data_file`'s."""
    fmt = file_format(format_of_file(path))
    if file_size is not None:
        cached = fmt.cached_row_count(path, file_size)
        if cached is not None:
            return cached
    elif (parsed := fmt.cached_file_size(path)) is not None:
        # only where a footer is held: an object store's size lookup is a request the open would
        # not save on a first read
        try:  # not in `_read_errors`: entering a generator's context costs as much as the stat
            size = file_io.size(path)
        except Exception:
            with _read_errors(path):
                raise
        cached = fmt.cached_row_count(path, size) if size == parsed else None
        if cached is not None:
            return cached
    with _read_errors(path), file_io.open_input(path) as source:
        return fmt.row_count(source, footer_key=path)


def iter_data_file(
    file_io: FileIO, path: str, columns: Sequence[str] | None = None, batch_rows: int | None = None,
    buffer_bytes: int = 0, file_size: int | None = None,
) -> Iterator[pa.Table]:
    """Read a data file a piece at a time (Parquet row groups, ORC stripes, Avro groups of
    blocks), or in batches of at most ``batch_rows`` rows. Parquet and Avro files are decoded a
    batch at a time (Avro's source read a block at a time), Parquet column chunks read
    ``buffer_bytes`` at a time (0: whole); ORC files a stripe at a time. ``file_size``: the
    manifest's (`FileIO.open_data_file`)."""
    with _read_errors(path):
        fmt = file_format(format_of_file(path))
        # a Parquet reader asks for what it holds (``buffer_bytes`` of a column chunk or whole
        # chunks): opened so that the store reads no further ahead (ORC and Avro as before)
        chunked = fmt.name == "parquet"
        buffer_bytes = file_io.chunked_read_bytes(buffer_bytes)  # object stores ask for more at once
        with file_io.open_data_file(path, file_size, buffer_bytes if chunked else None) as source:
            # data files never change: what a format parsed of one before may serve again
            # where each read is a request, fewer and larger reads within the same bound
            pieces = fmt.iter_batches(source, columns, batch_rows, footer_key=path, buffer_bytes=buffer_bytes,
                                      coalesce=file_io.parallel_reads_pay_off)
            for piece in pieces:
                yield _system_types(piece)


def file_column_names(key_names: Sequence[str]) -> list[str]:
    return [KEY_PREFIX + k for k in key_names] + [SEQUENCE_NUMBER, VALUE_KIND]


def row_types_of(schema: TableSchema, names: Sequence[str]) -> list[DataType]:
    return schema.types(list(names))
