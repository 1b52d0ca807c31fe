"""Data files in Paimon's layouts, written with rolling at the target size.

Primary-key files hold ``_KEY_<k>...``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and then every table
column; append files hold the table columns only. Field ids are written as Java does. The file
format (Parquet, ORC, Avro: `lake_assets.formats.file_format`) is the table's ``file.format`` for
new files, and each existing file's own (its extension) for reads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.data_file_read import file_column_names, iter_data_file, read_data_file, row_types_of
from lake_assets.formats.file_format import FileFormat, WriteOptions, file_format, table_format
from lake_assets.formats.file_index import INDEX_FILE_SUFFIX, FileIndexBuilder, index_plan
from lake_assets.formats.file_layout import (
    DICTIONARY_SAMPLE_ROWS,
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
from lake_assets.formats.footer_stats import DeferredRanges, FooterColumns, needed_leaves
from lake_assets.formats.format_options import level_format_and_codec
from lake_assets.formats.stats import StatsAccumulator
from lake_assets.io.file_io import FileIO
from lake_assets.spec.binary_row import EMPTY_ROW
from lake_assets.spec.binary_row_encoder import row_encoder
from lake_assets.spec.manifest import DataFileMeta, FileSource, SimpleStats
from lake_assets.spec.row_kind import RowKind
from lake_assets.spec.schema import TableSchema

# Moved to file_layout / data_file_read; importable from here as before.
__all__ = [
    "FILE_SOURCE_APPEND", "FILE_SOURCE_COMPACT", "KEY_FIELD_ID_START", "KEY_PREFIX", "SEQUENCE_FIELD_ID",
    "SEQUENCE_NUMBER", "VALUE_KIND", "VALUE_KIND_FIELD_ID", "DataFileWriter", "DataFileWriterConfig",
    "RollingFileWriter", "file_arrow_schema", "file_column_names", "iter_data_file", "local_now_ms",
    "read_data_file", "row_types_of",
]

# The FileSource members under their former names, for ops/compact and ops/expire while another
# branch restructures them (issue 16: the FileStore seam); new code uses FileSource.
FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT = FileSource.APPEND, FileSource.COMPACT

_PARQUET_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4",
                   "brotli": "brotli", "none": "none", "uncompressed": "none",
                   "lz4_raw": "lz4"}  # pyarrow's "lz4" writes Parquet's LZ4_RAW codec


def local_now_ms() -> int:
    """The writer's local wall-clock time encoded as if UTC, as Paimon stores _CREATION_TIME."""
    now = dt.datetime.now()
    return int((now - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


@dataclass
class DataFileWriterConfig:
    compression: str = "zstd"
    zstd_level: int = 1
    target_file_size: int = 128 * 1024 * 1024
    page_size: int = 64 * 1024
    prefix: str = "data-"
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
        # Parquet's footer holds the ranges of these columns: no min/max pass over them
        footer = self.format.name == "parquet"
        self._key_footer = layout.key_footer if footer else FooterColumns({}, frozenset())
        self._value_footer = layout.value_footer if footer else FooterColumns({}, frozenset())
        # refused here, before any file exists (an option value Java's writer of the format rejects)
        self.format.check_writable(schema, bucket_dir)
        # file-index.* (docs/format.md §7.6): every file written gets the table's bloom filters
        self.index_plan = None if config.changelog else index_plan(schema)
        self._uuid = uuid.uuid4()
        self._counter = 0
        self._per_level: dict[int, DataFileWriter] = {}

    def _next_name(self) -> str:
        name = f"{self.config.prefix}{self._uuid}-{self._counter}.{self.format.name}"
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
        ``file.format.per.level`` / ``file.compression.per.level`` give the level."""
        fmt, codec = level_format_and_codec(self.schema.options, bool(self.schema.primary_keys), level,
                                            self.format.name, self.config.compression)
        if fmt == self.format.name and codec == self.config.compression:
            return self
        writer = self._per_level.get(level)
        if writer is None:
            writer = DataFileWriter(self.file_io, self.bucket_dir, self.schema,
                                    replace(self.config, file_format=fmt, compression=codec))
            self._per_level[level] = writer
        return writer

    def dictionary_columns(self, first_rows: pa.Table | None = None, rows: int = 0) -> list[str]:
        """The columns of a new file that get dictionary pages, given the file's first rows and
        how many rows it is expected to hold.

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
            if c in self._sampled_dictionary_columns:
                source = self._same_values.get(c, c)
                pays = decided.get(source)
                if pays is None:
                    pays = decided[source] = dictionary_pays(first_rows.column(source), rows)
                if not pays:
                    continue
            chosen.append(c)
        return chosen

    def write_options(self, first_rows: pa.Table | None = None, rows: int = 0) -> WriteOptions:
        """What the format writer of a new file takes (Parquet: `parquet_options`)."""
        cfg = self.config
        parquet = self.parquet_options(first_rows, rows) if self.format.name == "parquet" else {}
        return WriteOptions(compression=cfg.compression, zstd_level=cfg.zstd_level,
                            target_file_size=cfg.target_file_size, parquet=parquet)

    def parquet_options(self, first_rows: pa.Table | None = None, rows: int = 0) -> dict[str, object]:
        cfg = self.config
        codec = _PARQUET_CODECS[cfg.compression]
        kwargs: dict[str, object] = {
            "use_dictionary": self.dictionary_columns(first_rows, rows),
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
LOCAL_SINK_BUFFER_BYTES = 256 * 1024


class _OpenFile:
    """The file a rolling writer is filling, and what its manifest entry will say."""

    def __init__(self, owner: DataFileWriter, name: str, first_rows: pa.Table | None = None, rows: int = 0) -> None:
        self.name = name
        self.path = f"{owner.bucket_dir}/{name}"
        fio = owner.file_io
        self.sink = fio.open_output(self.path)
        try:
            if isinstance(self.sink, pa.OSFile):
                # parquet-cpp hands its sink every page and footer part as it goes (~40 writes a
                # file); a local file takes each as a system call of its own
                self.sink = pa.BufferedOutputStream(self.sink, LOCAL_SINK_BUFFER_BYTES)
            self.writer = owner.format.open_writer(self.sink, owner.arrow_schema, owner.schema,
                                                   owner.write_options(first_rows, rows))
        except BaseException:
            # the file exists but no rolling writer knows it yet (e.g. the disk filled while the
            # header was written): remove it here or nothing ever will
            with contextlib.suppress(Exception):
                self.sink.close()
            fio.delete(self.path)
            raise
        self.rows = 0
        self.first_key: list | None = None
        self.last_key: list | None = None
        self.key_stats = DeferredRanges(StatsAccumulator(owner.key_types, truncate=128), owner._key_footer)
        self.value_stats = DeferredRanges(StatsAccumulator(owner.value_types), owner._value_footer)
        self.min_seq: int | None = None
        self.max_seq: int | None = None
        self.deletes = 0
        self.index = FileIndexBuilder(owner.index_plan) if owner.index_plan is not None else None


_UPDATE_BEFORE, _DELETE = int(RowKind.UPDATE_BEFORE), int(RowKind.DELETE)

# Largest row group, in Arrow (uncompressed) bytes: parquet-java's default block size, which
# Paimon's writers use, so that a file up to the target size is one row group as Java's are.
ROW_GROUP_MAX_BYTES = 128 * 1024 * 1024
# Smallest row group a rolling writer starts when it estimates the room left in a file.
MIN_ROW_GROUP_ROWS = 1024

class RollingFileWriter:
    """Appends sorted chunks to one Parquet file until it reaches the target size, then starts the
    next; stats are accumulated per chunk so memory holds one chunk, not one file."""

    def __init__(
        self, owner: DataFileWriter, level: int, file_source: FileSource, sequence_range: tuple[int, int] | None
    ) -> None:
        self.owner = owner
        self.level = level
        self.file_source = file_source
        self.sequence_range = sequence_range
        self.current: _OpenFile | None = None
        self.done: list[DataFileMeta] = []
        # size and rows of the files finished so far: their bytes per row size the next row group
        self._finished_bytes = 0
        self._finished_rows = 0

    def write(self, data: pa.Table) -> None:
        if data.num_rows == 0:
            return
        owner = self.owner
        laid_out = owner._layout(data)
        append_seq = data.column(SEQUENCE_NUMBER) if (
            not owner.schema.primary_keys and SEQUENCE_NUMBER in data.column_names) else None
        n = laid_out.num_rows
        # One row group per call and per file, as parquet-java writes files up to its block size:
        # a row group ends where the file reaches the target size (estimated from the bytes per
        # row of the files finished so far, footers included, else of this file's first row
        # group, else from the Arrow size, which compression only shrinks) or at
        # ROW_GROUP_MAX_BYTES of Arrow data, which bounds what a reader decodes at once.
        row_bytes = max(1, laid_out.nbytes // max(1, n))
        max_rows = max(MIN_ROW_GROUP_ROWS, ROW_GROUP_MAX_BYTES // row_bytes)
        target = owner.config.target_file_size
        start = 0
        while start < n:
            if self.current is None:
                self.current = _OpenFile(owner, owner._next_name(), laid_out.slice(start, DICTIONARY_SAMPLE_ROWS),
                                         min(n - start, max_rows))
            written = self.current.sink.tell()
            if self._finished_rows:
                per_row = self._finished_bytes // self._finished_rows
            elif self.current.rows:
                per_row = written // self.current.rows
            else:
                per_row = row_bytes
            room = (target - written) // max(1, per_row)
            if room < MIN_ROW_GROUP_ROWS and self.current.rows:
                self._finish()  # nearly full: a tiny last row group would only slow readers down
                continue
            step = int(min(n - start, max(room, MIN_ROW_GROUP_ROWS), max_rows))
            chunk = laid_out.slice(start, step)
            self.current.writer.write(chunk)  # one row group (Parquet) per call
            self._account(chunk, append_seq.slice(start, step) if append_seq is not None else None)
            start += step
            if self.current.sink.tell() >= target:
                self._finish()

    def _account(self, chunk: pa.Table, append_seq: pa.ChunkedArray | None) -> None:
        f = self.current
        assert f is not None
        owner = self.owner
        f.rows += chunk.num_rows
        if f.index is not None:
            f.index.add(chunk)
        f.value_stats.update([chunk.column(n) for n in owner.value_names])
        if owner.schema.primary_keys:
            keys = [chunk.column(KEY_PREFIX + k) for k in owner.key_names]
            if f.first_key is None:
                f.first_key = [c[0].as_py() for c in keys]
            f.last_key = [c[-1].as_py() for c in keys]
            f.key_stats.update(keys)
            kinds = chunk.column(VALUE_KIND).to_numpy()
            # plain ints: numpy compares an int8 array with an IntEnum member six times slower
            f.deletes += int(np.count_nonzero((kinds == _UPDATE_BEFORE) | (kinds == _DELETE)))
            seq = chunk.column(SEQUENCE_NUMBER)
        else:
            seq = append_seq
        if seq is not None:
            mm = pc.min_max(seq)
            lo, hi = int(mm["min"].as_py()), int(mm["max"].as_py())
            f.min_seq = lo if f.min_seq is None else min(f.min_seq, lo)
            f.max_seq = hi if f.max_seq is None else max(f.max_seq, hi)

    def _finish(self) -> None:
        f = self.current
        if f is None:
            return
        self.current = None
        try:
            f.writer.close()
            leaves = needed_leaves(f.key_stats, f.value_stats)
            if leaves:
                groups = f.writer.row_group_ranges(leaves)
                f.key_stats.fold(groups, leaves)
                f.value_stats.fold(groups, leaves)
            # The footer is written: the sink's position is the file size (no stat / HEAD request).
            size = f.sink.tell()
            f.sink.close()
        except BaseException:
            # e.g. the disk filled while writing the footer: the file is neither open nor done,
            # so nothing else would ever remove it.
            with contextlib.suppress(Exception):
                f.sink.close()
            self.owner.file_io.delete(f.path)
            raise
        extra_files, embedded_index = self._write_index(f)
        self._finished_bytes += size
        self._finished_rows += f.rows
        owner = self.owner
        if owner.schema.primary_keys:
            keys = owner.key_encoder
            min_key = keys.serialize(f.first_key or [])
            max_key = keys.serialize(f.last_key or [])
            key_stats = f.key_stats.acc.result()
        else:
            min_key = max_key = EMPTY_ROW
            key_stats = SimpleStats.EMPTY
        min_seq, max_seq = f.min_seq or 0, f.max_seq or 0
        if self.sequence_range is not None and not owner.schema.primary_keys:
            # append compaction: outputs inherit the sequence range of the files they replace
            min_seq, max_seq = self.sequence_range
        self.done.append(DataFileMeta(
            file_name=f.name,
            file_size=size,
            row_count=f.rows,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=f.value_stats.acc.result(),
            min_sequence_number=min_seq,
            max_sequence_number=max_seq,
            schema_id=owner.schema.id,
            level=self.level,
            extra_files=extra_files,
            creation_time_ms=local_now_ms(),
            delete_row_count=f.deletes,
            embedded_file_index=embedded_index,
            file_source=self.file_source,
            value_stats_cols=None,
            external_path=None,
            first_row_id=None,
            write_cols=None,
            write_cols_sequences=None,
        ))

    def _write_index(self, f: _OpenFile) -> tuple[tuple[str, ...], bytes | None]:
        """(extra files, embedded index) of a finished file: its index in the manifest entry, or
        written beside it as ``<file>.index`` when larger than file-index.in-manifest-threshold."""
        if f.index is None:
            return (), None
        fio = self.owner.file_io
        try:
            data, to_file = f.index.finish()
            if not to_file:
                return (), data
            name = f.name + INDEX_FILE_SUFFIX
            fio.write_bytes(f"{self.owner.bucket_dir}/{name}", data)
            return (name,), None
        except BaseException:
            # the data file is finished but no description of it exists yet: remove both here
            fio.delete_many([f.path, f.path + INDEX_FILE_SUFFIX])
            raise

    def close(self) -> list[DataFileMeta]:
        """Finish the open file; the descriptions of every file written."""
        self._finish()
        return self.done

    def abort(self) -> None:
        """Delete everything this writer wrote (an error happened mid-way)."""
        f = self.current
        self.current = None
        if f is not None:
            with contextlib.suppress(Exception):
                f.writer.close()
            with contextlib.suppress(Exception):
                f.sink.close()
            self.owner.file_io.delete(f.path)
        self.owner.file_io.delete_many(f"{self.owner.bucket_dir}/{name}"
                                       for m in self.done for name in (m.file_name, *m.extra_files))
        self.done = []
