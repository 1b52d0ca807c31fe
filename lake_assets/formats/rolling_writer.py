"""The rolling file writer: one data file filled row group by row group up to the target size,
then the next; and each finished file's description (`DataFileMeta`) - its keys, statistics,
sequence range, delete count and file index, accumulated per chunk so that memory holds one
chunk, not one file.

`lake_assets.formats.data_file.DataFileWriter` holds what every file of a bucket shares (layout,
format, options) and hands out these writers (`DataFileWriter.rolling`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.file_index import INDEX_FILE_SUFFIX, FileIndexBuilder
from lake_assets.formats.file_layout import DICTIONARY_SAMPLE_ROWS, KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.formats.footer_stats import DeferredRanges, needed_leaves
from lake_assets.formats.stats import StatsAccumulator
from lake_assets.spec.binary_row import EMPTY_ROW
from lake_assets.spec.manifest import DataFileMeta, FileSource, SimpleStats
from lake_assets.spec.row_kind import RowKind

if TYPE_CHECKING:
    from lake_assets.formats.data_file import DataFileWriter


def local_now_ms() -> int:
    """The writer's local wall-clock time encoded as if UTC, as Paimon stores _CREATION_TIME."""
    now = dt.datetime.now()
    return int((now - dt.datetime(1970, 1, 1)).total_seconds() * 1000)



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
