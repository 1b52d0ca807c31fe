"""Data file formats (Paimon's ``FileFormat``): one writer and one reader per format.

A table names the format its writers use (``file.format``), but Paimon readers pick the format of
each file from its name, so a table whose ``file.format`` changed holds files of several formats
at once and every read, compaction and maintenance operation must take each file as it is
(docs/format.md §1). `format_of_file` is that rule; `file_format` gives the implementation.

Every format writes the same Arrow layout (`lake_assets.formats.file_layout.file_arrow_schema`) and
reads back Arrow tables whose columns have the layout's names; types may come back in the
format's own physical spelling (ORC timestamps in nanoseconds, TIME as milliseconds in an INT),
which readers cast to the table's types as they do for evolved schemas.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.formats.file_names import COMPRESSION_EXTENSIONS
from lake_assets.formats.row_mask import arrow_mask
from lake_assets.spec.schema import TableSchema

# A last extension Paimon's formatIdentifier skips to the format before it: a Hadoop codec's
# (lake_assets.formats.file_names; text formats name their codec last). Data files of
# file.suffix.include.compression carry the codec before the format (.zst.parquet): the last wins.
_COMPRESSION_SUFFIXES = COMPRESSION_EXTENSIONS


def format_of_file(file_name: str) -> str:
    """The format Paimon readers pick for a data file: its last extension, or the one before a
    compression suffix (docs/format.md §1); ``""`` for a name without one."""
    parts = file_name.lower().split(".")
    if len(parts) < 2:
        return ""
    if parts[-1] in _COMPRESSION_SUFFIXES and len(parts) >= 3:
        return parts[-2]
    return parts[-1]


@dataclass(frozen=True)
class WriteOptions:
    """What a format writer of one new file takes from the table's options and the file's rows."""

    compression: str
    zstd_level: int
    target_file_size: int
    # pq.ParquetWriter's keyword arguments (`DataFileWriter.parquet_options`: codec, dictionary
    # columns sampled from the file's first rows, page size); empty for other formats
    parquet: dict[str, object] = field(default_factory=dict)


class FormatWriter(ABC):
    """An open data file: Arrow tables in the file layout go in, `close` writes the footer."""

    # Whether the sink holds every row once `write` returns (a Parquet row group per call, whole
    # Avro blocks), so that its position measures the file; not ORC's, which buffers a stripe.
    holds_rows_written = True

    @abstractmethod
    def write(self, chunk: pa.Table) -> None:
        """Append rows (one row group / stripe / block batch per call or as the format buffers)."""

    @abstractmethod
    def close(self) -> None:
        """Finish the file (footer, last block); the sink stays open for the caller."""

    def row_group_ranges(self, leaves: Sequence[int]) -> list[tuple[int, list[tuple[Any, Any] | None]]] | None:
        """After `close`, from the format's own footer statistics: per row group, its row count
        and, per leaf column in ``leaves``, (min, max) of its non-null values, None where it has
        none, (None, None) where the footer has no range for them. None when the format keeps no
        such statistics (the default)."""
        return None


class FileFormat(ABC):
    """One data file format: its name (also the file extension), a writer and a reader."""

    name: str
    # the codecs (``file.compression`` names, folded to lower case) its writer writes as Paimon
    # Java's writer of the format would; None: any text (the writer picks its codec itself)
    codecs: frozenset[str] | None = None

    def check_writable(self, schema: TableSchema, table: str) -> None:  # noqa: B027 - optional hook
        """Raise `UnsupportedFeatureError` when files of this format cannot be written for the table
        (an option value the format does not implement); by default every table is writable."""

    @abstractmethod
    def open_writer(self, sink: Any, arrow_schema: pa.Schema, schema: TableSchema,
                    options: WriteOptions) -> FormatWriter:
        """A writer of one file into ``sink`` (a writable Arrow or Python file object)."""

    @abstractmethod
    def read(self, source: Any, columns: Sequence[str] | None, *, use_threads: bool,
             footer_key: str | None = None) -> pa.Table:
        """Read ``columns`` (all when None) of the file open as ``source``; ``footer_key`` (the
        path of an immutable data file) lets a format reuse what it parsed of the file before."""

    @abstractmethod
    def row_count(self, source: Any, *, footer_key: str | None = None) -> int:
        """The rows the file open as ``source`` holds, by its own metadata (Parquet's footer, ORC's
        tail, the record counts of Avro's blocks): what a read checks a manifest's count against
        before it sizes anything by it. ``footer_key`` as in `read`."""

    def cached_row_count(self, footer_key: str, file_size: int) -> int | None:
        """`row_count` of the file ``footer_key`` names when a read parsed its metadata before, at
        ``file_size`` bytes (no read at all); None otherwise (the default: nothing is kept)."""
        return None

    def cached_file_size(self, footer_key: str) -> int | None:
        """The size of the file ``footer_key`` names when a read parsed the metadata that
        `cached_row_count` answers from; None when nothing is kept (the default)."""
        return None

    def read_rows(self, source: Any, columns: Sequence[str] | None, keep: np.ndarray, *,
                  use_threads: bool, footer_key: str | None = None) -> pa.Table:
        """`read`, holding only the rows ``keep`` (a bool per row of the file) marks: the rows a
        deletion vector keeps. By default the whole file is read, then filtered; formats that can
        drop rows earlier override it."""
        data = self.read(source, columns, use_threads=use_threads, footer_key=footer_key)
        if len(keep) != data.num_rows:
            raise CorruptMetadataError(f"a selection of {len(keep)} rows was asked for, but the file has "
                                       f"{data.num_rows} rows")
        return data.filter(arrow_mask(keep))

    @abstractmethod
    def iter_batches(self, source: Any, columns: Sequence[str] | None, batch_rows: int | None = None, *,
                     footer_key: str | None = None, buffer_bytes: int = 0,
                     coalesce: bool = False) -> Iterator[pa.Table]:
        """Read the file in pieces of bounded size (row groups, stripes, blocks), each of at most
        ``batch_rows`` rows when given. ``footer_key`` as in `read`; ``buffer_bytes`` > 0: read
        a column chunk that many bytes at a time where the format can (Parquet), not whole;
        ``coalesce``: each read of ``source`` is a request (an object store), so the format may
        read fewer, larger pieces within the same bound (Parquet: `parquet_chunk_plan`)."""


def sliced(pieces: Iterator[pa.Table], batch_rows: int | None) -> Iterator[pa.Table]:
    """``pieces`` cut into tables of at most ``batch_rows`` rows (unchanged when None)."""
    for piece in pieces:
        if batch_rows is None or piece.num_rows <= batch_rows:
            yield piece
            continue
        for start in range(0, piece.num_rows, batch_rows):
            yield piece.slice(start, batch_rows)


_FORMATS: dict[str, FileFormat] = {}


def register(fmt: FileFormat) -> FileFormat:
    """Add a format to the registry (each format module registers itself on import)."""
    _FORMATS[fmt.name] = fmt
    return fmt


def file_format(name: str) -> FileFormat:
    """The implementation of format ``name`` (``parquet``, ``orc``, ``avro``)."""
    _load_builtin()
    fmt = _FORMATS.get(name.strip().lower())
    if fmt is None:
        raise UnsupportedFeatureError(
            f"Data file format {name!r} is not supported; supported: {', '.join(sorted(_FORMATS))}"
        )
    return fmt


def supported_formats() -> frozenset[str]:
    """Names of the formats lake_assets reads and writes."""
    _load_builtin()
    return frozenset(_FORMATS)


def table_format(schema: TableSchema) -> str:
    """The format a table's writers use: its ``file.format`` (schema loading fills in Paimon's
    pre-0.9 ORC default for old schema versions), Parquet when unset."""
    return (schema.options.get("file.format") or "parquet").lower()  # as Paimon: never trimmed


def _load_builtin() -> None:
    # imported here: the format modules import this one for the base classes (a no-op once loaded)
    from lake_assets.formats import avro_format, orc_format, parquet_format  # noqa: F401
