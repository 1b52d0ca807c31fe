"""Data files in Paimon's layouts, written with rolling at the target size.

Primary-key files hold ``_KEY_<k>...``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and then every table
column; append files hold the table columns only. Field ids are written as Java does. The file
format (Parquet, ORC, Avro: `lake_assets.formats.file_format`) is the table's ``file.format`` for
new files, and each existing file's own (its extension) for reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass, replace

import pyarrow as pa

from lake_assets.errors import NullInNotNullColumnError, UnsupportedFeatureError
from lake_assets.formats.data_file_read import file_column_names, iter_data_file, read_data_file, row_types_of
from lake_assets.formats.file_format import FileFormat, WriteOptions, file_format, table_format
from lake_assets.formats.file_index import index_plan
from lake_assets.formats.file_layout import (
    KEY_FIELD_ID_START,
    KEY_PREFIX,
    PARQUET_PAGE_BYTES,
    SEQUENCE_FIELD_ID,
    SEQUENCE_NUMBER,
    VALUE_KIND,
    VALUE_KIND_FIELD_ID,
    dictionary_pays,
    file_arrow_schema,
    layout_of,
)
from lake_assets.formats.file_names import file_extension
from lake_assets.formats.footer_stats import FooterColumns
from lake_assets.formats.format_options import codec_for_format, level_format_and_codec
from lake_assets.formats.rolling_writer import (
    LOCAL_SINK_BUFFER_BYTES,
    ROW_GROUP_MAX_BYTES,
    RollingFileWriter,
    local_now_ms,
)
from lake_assets.io.file_io import FileIO
from lake_assets.spec.binary_row_encoder import row_encoder
from lake_assets.spec.manifest import DataFileMeta, FileSource
from lake_assets.spec.schema import TableSchema

# Moved to file_layout / data_file_read / rolling_writer; importable from here as before.
__all__ = [
    "FILE_SOURCE_APPEND", "FILE_SOURCE_COMPACT", "KEY_FIELD_ID_START", "KEY_PREFIX", "LOCAL_SINK_BUFFER_BYTES",
    "ROW_GROUP_MAX_BYTES", "SEQUENCE_FIELD_ID", "SEQUENCE_NUMBER", "VALUE_KIND",
    "VALUE_KIND_FIELD_ID", "DataFileWriter", "DataFileWriterConfig", "RollingFileWriter", "file_arrow_schema",
    "file_column_names", "iter_data_file", "local_now_ms", "read_data_file", "row_types_of",
]

# The FileSource members under their former names, for ops/compact and ops/expire while another
# branch restructures them (issue 16: the FileStore seam); new code uses FileSource.
FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT = FileSource.APPEND, FileSource.COMPACT

_PARQUET_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4",
                   "brotli": "brotli", "none": "none", "uncompressed": "none",
                   "lz4_raw": "lz4"}  # pyarrow's "lz4" writes Parquet's LZ4_RAW codec


@dataclass
class DataFileWriterConfig:
    compression: str = "zstd"
    zstd_level: int = 1
    target_file_size: int = 128 * 1024 * 1024
    page_size: int = 64 * 1024
    prefix: str = "data-"
    # what file names carry before the format extension (file.suffix.include.compression), or None
    name_compression: str | None = None
    # None: the table's file.format (what Paimon writers use for new files)
    file_format: str | None = None
    # changelog files: Paimon writes no file index for them (KeyValueFileWriterFactory)
    changelog: bool = False


class DataFileWriter:
    """Writes sorted, merged tables of one bucket into rolled data files and describes them."""

    def __init__(
        self,
        file_io: FileIO,
        bucket_dir: str,
        schema: TableSchema,
        config: DataFileWriterConfig,
    ) -> None:
        self.file_io = file_io
        self.bucket_dir = bucket_dir
        self.schema = schema
        self.config = config
        layout = layout_of(schema)
        self.arrow_schema = layout.arrow_schema
        self.key_names = layout.key_names
        self.key_types = layout.key_types
        self.value_types = layout.value_types
        self.value_names = layout.value_names
        # min/max keys of every file: the key row type's encoder, looked up once per writer
        self.key_encoder = row_encoder(self.key_types)
        self._dictionary_columns = layout.dictionary_columns
        self._sampled_dictionary_columns = layout.sampled_dictionary_columns
        self._same_values = layout.same_values
        self.format: FileFormat = file_format(config.file_format or table_format(schema))
        # the table's (or the level's) codec, before the format's own codec option replaces it
        self._table_codec = config.compression
        config = self.config = replace(config, compression=codec_for_format(schema.options, self.format.name,
                                                                           config.compression))
        # Parquet's footer holds the ranges of these columns: no min/max pass over them
        footer = self.format.name == "parquet"
        self._key_footer = layout.key_footer if footer else FooterColumns({}, frozenset())
        self._value_footer = layout.value_footer if footer else FooterColumns({}, frozenset())
        # refused here, before any file exists (an option value Java's writer of the format rejects);
        # table_support refuses the operation earlier, naming the options
        codecs = self.format.codecs
        if codecs is not None and config.compression not in codecs:
            raise UnsupportedFeatureError(
                f"Cannot write {self.format.name} files in {bucket_dir}: {config.compression!r} is no codec of "
                f"Paimon's {self.format.name} writer that lake_assets writes ({', '.join(sorted(codecs))})")
        self.format.check_writable(schema, bucket_dir)
        # file-index.* (docs/format.md §7.6): every file written gets the table's bloom filters
        self.index_plan = None if config.changelog else index_plan(schema)
        self._uuid = uuid.uuid4()
        self._counter = 0
        self._per_level: dict[int, DataFileWriter] = {}

    def _next_name(self) -> str:
        name = f"{self.config.prefix}{self._uuid}-{self._counter}"
        name += file_extension(self.format.name, self.config.name_compression)
        self._counter += 1
        return name

    def _layout(self, data: pa.Table) -> pa.Table:
        """Put a (values + _SEQUENCE_NUMBER + _VALUE_KIND) table into the file's column layout."""
        if not self.schema.primary_keys:
            cols = [data.column(n) for n in self.value_names]
        else:
            cols = [data.column(k) for k in self.key_names]
            cols += [data.column(SEQUENCE_NUMBER), data.column(VALUE_KIND)]
            cols += [data.column(n) for n in self.value_names]
        for col, field in zip(cols, self.arrow_schema, strict=True):
            if not field.nullable and col.null_count:
                # a required column holding nulls: Paimon's readers cannot decode such a file
                # (rows read from files written before the column became NOT NULL:
                # `lake_assets.ops.not_null_history`); user writes are refused before this
                raise NullInNotNullColumnError(
                    f"Cannot write a data file of schema-{self.schema.id} in {self.bucket_dir}: column {field.name} "
                    f"is NOT NULL but {col.null_count} of the rows to write are null there (rows carried over from "
                    f"files written while it was nullable, which Paimon cannot store under NOT NULL: make the "
                    f"column nullable again)", column=field.name)
        return pa.Table.from_arrays(cols, schema=self.arrow_schema)

    def write(
        self,
        data: pa.Table,
        *,
        level: int,
        file_source: FileSource = FileSource.APPEND,
        sequence_range: tuple[int, int] | None = None,
    ) -> list[DataFileMeta]:
        """Write ``data`` (already sorted by key and merged for PK tables) into rolled files.

        For append tables ``data`` also carries ``_SEQUENCE_NUMBER`` (used for the file's range only).
        """
        rolling = self.rolling(level=level, file_source=file_source, sequence_range=sequence_range)
        try:
            rolling.write(data)
            # closing writes the last file's footer, which can fail too (a full disk): the files
            # finished before it must then go as well, or nothing would ever remove them
            return rolling.close()
        except BaseException:
            rolling.abort()
            raise

    def rolling(
        self, *, level: int, file_source: FileSource = FileSource.APPEND, sequence_range: tuple[int, int] | None = None
    ) -> RollingFileWriter:
        """A writer that keeps one file open across `write` calls and rolls at the target size."""
        return RollingFileWriter(self.for_level(level), level, file_source, sequence_range)

    def for_level(self, level: int) -> DataFileWriter:
        """The writer of files of ``level``: this one, or one with the format and codec that
        ``file.format.per.level`` / ``file.compression.per.level`` give the level (changelog
        files: ``changelog-file.format`` / ``changelog-file.compression`` first)."""
        fmt, codec = level_format_and_codec(self.schema.options, bool(self.schema.primary_keys), level,
                                            self.format.name, self._table_codec, changelog=self.config.changelog)
        if fmt == self.format.name and codec == self.config.compression:
            return self
        writer = self._per_level.get(level)
        if writer is None:
            writer = DataFileWriter(self.file_io, self.bucket_dir, self.schema,
                                    replace(self.config, file_format=fmt, compression=codec))
            self._per_level[level] = writer
        return writer

    def dictionary_columns(self, first_rows: pa.Table | None = None, rows: int = 0,
                           among: Collection[str] | None = None) -> list[str]:
        """The columns of a new file that get dictionary pages, given the file's first rows and
        how many rows it is expected to hold; with ``among``, only those of these columns (each
        decided as for the whole file: the others are not sampled).

        A string column is dictionary-encoded only when its values repeat enough for the
        dictionary to pay and stay within one dictionary page: past the page limit pyarrow falls
        back to plain encoding in the middle of the column chunk, so the file pays for both, and
        readers decode both (parquet-java falls back likewise, per column, when the dictionary
        does not compress)."""
        if first_rows is None:
            return list(self._dictionary_columns)
        decided: dict[str, bool] = {}
        chosen = []
        for c in self._dictionary_columns:
            if among is not None and c not in among:
                continue
            if c in self._sampled_dictionary_columns:
                source = self._same_values.get(c, c)
                pays = decided.get(source)
                if pays is None:
                    pays = decided[source] = dictionary_pays(first_rows.column(source), rows)
                if not pays:
                    continue
            chosen.append(c)
        return chosen

    def write_options(self, first_rows: pa.Table | None = None, rows: int = 0,
                      among: Collection[str] | None = None) -> WriteOptions:
        """What the format writer of a new file takes (Parquet: `parquet_options`; ``among``: see
        `dictionary_columns`)."""
        cfg = self.config
        parquet = self.parquet_options(first_rows, rows, among) if self.format.name == "parquet" else {}
        return WriteOptions(compression=cfg.compression, zstd_level=cfg.zstd_level,
                            target_file_size=cfg.target_file_size, parquet=parquet)

    def parquet_options(self, first_rows: pa.Table | None = None, rows: int = 0,
                        among: Collection[str] | None = None) -> dict[str, object]:
        cfg = self.config
        codec = _PARQUET_CODECS[cfg.compression]
        kwargs: dict[str, object] = {
            "use_dictionary": self.dictionary_columns(first_rows, rows, among),
            "compression": codec,
            "store_decimal_as_integer": True,
            # parquet-java's default page (Paimon's writer leaves parquet.page.size unset): Paimon's
            # `page-size` sizes its write-buffer memory pages, not Parquet pages, and 64 KiB pages
            # made our files decode slower than Java's
            "data_page_size": PARQUET_PAGE_BYTES,
            "write_statistics": True,
        }
        if codec == "zstd":
            kwargs["compression_level"] = cfg.zstd_level
        return kwargs


# Buffer of a local data file's writes: a few system calls a file instead of one per page
# (0.1-0.3 ms less CPU per 25k-row file); closing the buffer closes the file, also when the
# last flush fails (ENOSPC).
