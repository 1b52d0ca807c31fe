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
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.file_index import INDEX_FILE_SUFFIX, FileIndexBuilder
from lake_assets.formats.file_layout import DICTIONARY_SAMPLE_ROWS, KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.formats.footer_stats import DeferredRanges, needed_leaves
from lake_assets.formats.format_options import ORC_WRITE_BATCH_SIZE
from lake_assets.formats.stats import StatsAccumulator
from lake_assets.spec.binary_row import EMPTY_ROW
from lake_assets.spec.manifest import DataFileMeta, FileSource, SimpleStats
from lake_assets.spec.row_kind import RowKind

if TYPE_CHECKING:
    from lake_assets.formats.data_file import DataFileWriter
    from lake_assets.formats.file_format import FormatWriter


def local_now_ms() -> int:
    """The writer's local wall-clock time encoded as if UTC, as Paimon stores _CREATION_TIME."""
    now = dt.datetime.now()
    return int((now - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


LOCAL_SINK_BUFFER_BYTES = 256 * 1024


class _OpenFile:
    """The file a rolling writer is filling, and what its manifest entry will say."""

    def __init__(self, owner: DataFileWriter, name: str, first_rows: pa.Table | None = None, rows: int = 0,
                 open_writer: Callable[[Any], FormatWriter] | None = None) -> None:
        self.name = name
        self.path = f"{owner.bucket_dir}/{name}"
        fio = owner.file_io
        self.sink = fio.open_output(self.path)
        try:
            if isinstance(self.sink, pa.OSFile):
                # parquet-cpp hands its sink every page and footer part as it goes (~40 writes a
                # file); a local file takes each as a system call of its own
                self.sink = pa.BufferedOutputStream(self.sink, LOCAL_SINK_BUFFER_BYTES)
            self.writer = (owner.format.open_writer(self.sink, owner.arrow_schema, owner.schema,
                                                    owner.write_options(first_rows, rows))
                           if open_writer is None else open_writer(self.sink))
        except BaseException:
            # the file exists but no rolling writer knows it yet (e.g. the disk filled while the
            # header was written): remove it here or nothing ever will
            with contextlib.suppress(Exception):
                self.sink.close()
            fio.delete(self.path)
            raise
        self.header_bytes = 0  # the sink's position before any row (Parquet magic, Avro header)
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
# Rows between two size checks of Paimon's RollingFileWriter (CHECK_ROLLING_RECORD_CNT, 0.9 and
# 1.x): it asks the Parquet and Avro writers whether the file reached the target size when the
# count of rows it has written (over all its files) is a multiple of this.
CHECK_ROLLING_ROWS = 1000
# Java's ORC writer answers only between two of its row batches (``orc.write.batch-size`` rows,
# counted from the file's start), whatever the rolling writer suggests (OrcBulkWriter).
ORC_BATCH_ROWS = 1024
# Beyond this many check intervals from the predicted crossing of the target size, a chunk stops
# 1/PREDICTION_MARGIN of the predicted rows short of it (at least one interval) and the file is
# measured before the rest is predicted (`RollingFileWriter.write`).
PREDICTION_SLACK = 4
PREDICTION_MARGIN = 32
# Rows of a first chunk that an ORC file's bytes per row are measured on (`_calibrated_row_bytes`)
ORC_SAMPLE_ROWS = 8192
TARGET_FILE_ROW_NUM = "target-file-row-num"


def rolling_check(owner: DataFileWriter) -> tuple[int, bool]:
    """Rows between the points where Paimon Java would roll this writer's files, and whether they
    are counted per file (ORC's row batches) rather than over the rolling writer's rows."""
    if owner.format.name == "orc":
        batch = owner.schema.options.get(ORC_WRITE_BATCH_SIZE)
        return (int(str(batch).strip()) if batch is not None else ORC_BATCH_ROWS), True
    return CHECK_ROLLING_ROWS, False


def rows_to_check(done: int, need: int, every: int) -> int:
    """Rows to write, after ``done`` rows, to reach the first check point (a multiple of ``every``)
    at or after ``need`` more rows (at least one row)."""
    end = done + max(1, need)
    return -(-end // every) * every - done


class RollingFileWriter:
    """Appends sorted chunks to one data file until it reaches the target size, then starts the
    next; stats are accumulated per chunk so memory holds one chunk, not one file.

    Files roll where Paimon Java's `RollingFileWriter` rolls them: at the first check point
    (`rolling_check`: every 1,000 rows written, for ORC every row batch of the file) at which the
    file holds ``target-file-size`` bytes, or (Paimon 1.x) as soon as it holds
    ``target-file-row-num`` rows. No check is made row by row: the rows up to the check
    point where the file is predicted to reach the target (from the bytes per row written so far)
    are written in two chunks: up to a check point about 3% (`PREDICTION_MARGIN`) short of the
    predicted crossing, then, measured again, to the check point at or after the crossing. A file
    thus ends at the check point where Java's would if the size measures agreed, unless the bytes
    per row of the last ~3% of its rows differ from those before by more than one check interval's
    worth (then one interval later, or it goes on in interval steps when it fell short). Each
    chunk is one Parquet row group: a file is a large row group and a small one (~3%).

    The size is the encoded bytes in the sink (Parquet: closed row groups; Avro: whole blocks). An
    ORC writer buffers a whole stripe, so an ORC file's size is predicted from the bytes per row
    of the ORC files finished so far, else of a sample of the first chunk encoded alone. Java's
    writers look at their own estimates instead (parquet-java: written bytes plus the open pages
    uncompressed; ORC: written bytes plus a fifth of the writer's buffers), which exceed the
    encoded size while a file is smaller than a few pages per column: Java's small files (below
    about 1 MiB per column) hold fewer rows than ours (docs/format.md §7.1, and the tolerances of
    tests/differential/test_rolling_java.py).
    """

    def __init__(
        self, owner: DataFileWriter, level: int, file_source: FileSource, sequence_range: tuple[int, int] | None
    ) -> None:
        self.owner = owner
        self.level = level
        self.file_source = file_source
        self.sequence_range = sequence_range
        self.current: _OpenFile | None = None
        self.done: list[DataFileMeta] = []
        # size and rows of the files finished so far: their bytes per row size the next file
        self._finished_bytes = 0
        self._finished_rows = 0
        self._rows_written = 0  # over every file: Java's rolling check counts these
        self._check_rows, self._check_per_file = rolling_check(owner)
        # target-file-row-num (Paimon 1.x; 0.9 has no such option): a file also ends at that many rows
        row_num = owner.schema.options.get(TARGET_FILE_ROW_NUM)
        self._max_file_rows = int(str(row_num).strip()) if row_num is not None else None
        self._sample_row_bytes: float | None = None

    def write(self, data: pa.Table) -> None:
        if data.num_rows == 0:
            return
        owner = self.owner
        laid_out = owner._layout(data)
        append_seq = data.column(SEQUENCE_NUMBER) if (
            not owner.schema.primary_keys and SEQUENCE_NUMBER in data.column_names) else None
        n = laid_out.num_rows
        # A chunk is also cut at ROW_GROUP_MAX_BYTES of Arrow data, which bounds what a reader
        # decodes at once (parquet-java's default block size).
        row_bytes = max(1, laid_out.nbytes // max(1, n))
        max_rows = max(self._check_rows, ROW_GROUP_MAX_BYTES // row_bytes)
        target = owner.config.target_file_size
        start = 0
        while start < n:
            if self.current is None:
                self.current = _OpenFile(owner, owner._next_name(), laid_out.slice(start, DICTIONARY_SAMPLE_ROWS),
                                         min(n - start, max_rows))
                self.current.header_bytes = self.current.sink.tell()
            f = self.current
            per_row = self._row_bytes(laid_out, start, row_bytes)
            need = math.ceil(max(0, target - self._size(f, per_row)) / per_row)
            done = f.rows if self._check_per_file else self._rows_written
            every = self._check_rows
            if need > PREDICTION_SLACK * every:
                # far from the target: up to the last check point before the predicted crossing
                # less a margin, then measure and predict the rest (a prediction over a few rows
                # errs by less than a check interval; bytes per row drift, e.g. growing varints)
                aim = done + need - max(every, need // PREDICTION_MARGIN)
                step = max(every, aim // every * every - done)
            else:
                step = rows_to_check(done, need, every)
            step = min(n - start, max_rows, step)
            if self._max_file_rows is not None:
                step = min(step, self._max_file_rows - f.rows)
            chunk = laid_out.slice(start, step)
            f.writer.write(chunk)  # one row group (Parquet) per call
            self._account(chunk, append_seq.slice(start, step) if append_seq is not None else None)
            start += step
            self._rows_written += step
            at_check = (f.rows if self._check_per_file else self._rows_written) % self._check_rows == 0
            full = self._max_file_rows is not None and f.rows >= self._max_file_rows
            if full or (at_check and self._size(f, per_row) >= target):
                self._finish()

    def write_prepared(self, data: pa.Table, open_writer: Callable[[Any], FormatWriter],
                       row_groups: Sequence[int], *, laid_out: pa.Table | None = None) -> None:
        """One file of ``data`` (a primary-key table's sorted, merged rows) whose bytes the writer
        ``open_writer`` gives on the file's sink puts there when closed (a splice of another
        file's column chunks: `ops.compact.splice_rewrite`); its description is accounted row
        group by row group (``row_groups``: their row counts) as `write` accounts its chunks
        (``laid_out``: ``data`` in the file's layout, where the caller has it already)."""
        if not self.owner.schema.primary_keys or sum(row_groups) != data.num_rows:
            raise ValueError("a prepared file holds a primary-key table's rows, in its row groups")
        self._finish()
        if laid_out is None:
            laid_out = self.owner._layout(data)
        self.current = _OpenFile(self.owner, self.owner._next_name(), open_writer=open_writer)
        start = 0
        for rows in row_groups:
            self._account(laid_out.slice(start, rows), None)
            start += rows
        self._rows_written += start
        self._finish()

    def _size(self, f: _OpenFile, per_row: float) -> float:
        """The bytes ``f`` holds so far: those in its sink, or for a format that buffers rows
        (ORC's stripe) its rows at ``per_row`` bytes, whichever is larger."""
        written = f.sink.tell()
        return written if f.writer.holds_rows_written else max(written, f.rows * per_row)

    def _row_bytes(self, laid_out: pa.Table, start: int, arrow_row_bytes: int) -> float:
        """Encoded bytes per row the open file is predicted to take: its own so far, else the
        finished files', else (ORC) a sample's encoded alone, else (a first chunk of Parquet or
        Avro) the Arrow size, which encoding mostly shrinks: the file is then measured and the
        rest predicted from it."""
        f = self.current
        assert f is not None
        if f.rows and f.writer.holds_rows_written:
            return max(1e-3, (f.sink.tell() - f.header_bytes) / f.rows)
        if self._finished_rows:
            return max(1e-3, self._finished_bytes / self._finished_rows)
        if not f.writer.holds_rows_written:
            if self._sample_row_bytes is None:
                self._sample_row_bytes = self._calibrated_row_bytes(laid_out.slice(start, ORC_SAMPLE_ROWS))
            return self._sample_row_bytes
        return float(arrow_row_bytes)

    def _calibrated_row_bytes(self, sample: pa.Table) -> float:
        """Bytes per row of ``sample`` encoded alone by this writer's format into memory, less
        the bytes of an empty file (header and footer)."""
        owner = self.owner

        def encoded(rows: pa.Table) -> int:
            sink = pa.BufferOutputStream()
            writer = owner.format.open_writer(sink, owner.arrow_schema, owner.schema,
                                              owner.write_options(sample, sample.num_rows))
            writer.write(rows)
            writer.close()
            return len(sink.getvalue())

        return max(1e-3, (encoded(sample) - encoded(sample.slice(0, 0))) / max(1, sample.num_rows))

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
