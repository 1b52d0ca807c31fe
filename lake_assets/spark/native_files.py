"""The files Spark's Parquet writer staged for a native write, described and moved into the table.

Spark writes ``<staging>/__lake_part_0=<v>/.../__lake_bucket=<n>/part-....parquet`` (its
``partitionBy`` directories name the copies of the partition columns; the files keep the
partition columns themselves, as Paimon's do). The driver reads each file's footer, finds its
partition from the partition columns in the file (one value per file: Spark starts a new file
when the value changes) and its bucket from the last directory name, and moves the file to
``<partition path>/bucket-<n>/<data-file.prefix><uuid>-0.parquet`` - the partition path built by
lake_assets' own escaping, never from Spark's directory names, and checked to stay inside the
table. Its `DataFileMeta` is level 0 with key and value statistics taken as the core's writer
takes them: the key columns are read (first and last key, their ranges, truncated to 128
characters) and the value ranges come from the footer for the types whose Parquet statistics
are exact (`formats.footer_stats`), from the values for the others (floats: NaN has no range).
"""

from __future__ import annotations

import os
import re
import stat
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_assets.errors import LakeError, UnsafePathError
from lake_assets.formats.data_file import local_now_ms
from lake_assets.formats.file_layout import KEY_PREFIX, SEQUENCE_NUMBER
from lake_assets.formats.file_names import file_extension, name_compression
from lake_assets.formats.footer_stats import FOOTER_RANGE_TYPES, FOOTER_STRING_BYTES, FOOTER_STRING_TYPES
from lake_assets.formats.stats import StatsAccumulator
from lake_assets.io.nofollow_dirs import NOFOLLOW_DIR, open_below, relative_parts, rename_below
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import DataFileMeta, FileSource
from lake_assets.spec.schema import TableSchema
from lake_assets.store.file_store import FileStore

PARTITION_COPY_PREFIX = "__lake_part_"
BUCKET_DIR_COLUMN = "__lake_bucket"
_BUCKET_DIR = re.compile(re.escape(BUCKET_DIR_COLUMN) + r"=(\d+)")
# The names Spark's Parquet writer gives its files: part-<task>-<job uuid>[.c<n>][.<codec>].parquet
_SPARK_FILE = re.compile(r"part-\d{5,}-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"
                         r"(?:\.c\d{3,})?(?:\.[a-z0-9]+)?\.parquet")
# Key statistics are truncated as the core's writer truncates them (formats/data_file.py).
KEY_STATS_TRUNCATE = 128


class NativeWriteError(LakeError):
    """Spark's output for a native write is not what the driver planned (a bug, never user data)."""


@dataclass(frozen=True)
class StagedFile:
    """One Parquet file Spark wrote, its bucket, and the staging directory it was found in (the
    file is opened through the directories between, none of them followed if a link)."""

    path: str
    bucket: int
    staging: str

    def parents(self) -> list[str]:
        """The directories from the staging directory (included) down to the file's."""
        return [os.path.basename(self.staging), *relative_parts(self.staging, self.path)[:-1]]


def _expected_dir(name: str, depth: int, partition_levels: int) -> bool:
    """Whether ``name`` is the directory Spark's ``partitionBy`` makes at ``depth`` below staging:
    the copy of partition key ``depth``, then the bucket."""
    if depth < partition_levels:
        return name.startswith(f"{PARTITION_COPY_PREFIX}{depth}=")
    return depth == partition_levels and _BUCKET_DIR.fullmatch(name) is not None


def _open_dir(name: str, dir_fd: int | None, where: str) -> int:
    try:
        return os.open(name, NOFOLLOW_DIR, dir_fd=dir_fd)
    except OSError as exc:
        raise NativeWriteError(f"Spark's staging directory {where} is not a directory (a symbolic link?)") from exc


def staged_files(staging: str, partition_levels: int) -> list[StagedFile]:
    """The data files Spark wrote under ``staging``: ``partition_levels`` partition directories,
    a bucket directory, Spark's file names. Only what the driver planned is taken, and nothing in
    the staging directory is followed outside it: Spark's markers and checksums (names starting
    with ``_`` or ``.``: ``_SUCCESS``, ``.part-....crc``, ``_temporary``) are skipped; a symbolic
    link, any other kind of entry, a directory or file where the layout has none, or a file not
    named as Spark names its files raise `NativeWriteError` (the write then commits nothing).
    Each directory is listed through a descriptor opened without following a link, relative to
    its parent's: a directory swapped for a link during the walk fails it too."""
    out: list[StagedFile] = []

    def walk(fd: int, directory: str, depth: int) -> None:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        for entry in entries:
            where = os.path.join(directory, entry.name)
            if entry.is_symlink():
                raise NativeWriteError(f"Spark's staging directory holds a symbolic link {where}: not followed")
            if entry.name.startswith(("_", ".")) and not entry.name.startswith("__lake_"):
                continue  # Spark's markers, checksums and temporary directories (the layout's are __lake_)
            if entry.is_dir(follow_symlinks=False):
                if not _expected_dir(entry.name, depth, partition_levels):
                    raise NativeWriteError(f"Spark's staging directory holds an unexpected directory {where}")
                child = _open_dir(entry.name, fd, where)
                try:
                    walk(child, where, depth + 1)
                finally:
                    os.close(child)
            elif not entry.is_file(follow_symlinks=False):
                raise NativeWriteError(f"Spark's staging directory holds {where}, which is not a regular file")
            elif depth != partition_levels + 1:
                raise NativeWriteError(f"Spark wrote {entry.name} outside a bucket directory: {directory}")
            elif not _SPARK_FILE.fullmatch(entry.name):
                raise NativeWriteError(f"Spark's staging directory holds {where}, not a file Spark's writer names")
            else:
                m = _BUCKET_DIR.fullmatch(os.path.basename(directory))
                assert m is not None  # checked when the walk entered it
                out.append(StagedFile(where, int(m.group(1)), staging))

    top = _open_dir(staging, None, staging)
    try:
        walk(top, staging, 0)
    finally:
        os.close(top)
    return out


def _leaf_of(pf: pq.ParquetFile) -> dict[str, int]:
    return {pf.schema.column(i).name: i for i in range(len(pf.schema))}


def _footer_range(pf: pq.ParquetFile, leaf: int) -> tuple[int, list[tuple[Any, Any] | None]] | None:
    """(null count, per row group: (min, max), None for no values, (None, None) for unknown);
    None when a row group has no null count (then the values are read)."""
    nulls = 0
    ranges: list[tuple[Any, Any] | None] = []
    meta = pf.metadata
    for r in range(meta.num_row_groups):
        st = meta.row_group(r).column(leaf).statistics
        if st is None or not st.has_null_count:
            return None
        nulls += st.null_count
        if st.has_min_max:
            ranges.append((st.min, st.max))
        else:
            ranges.append(None if st.num_values == 0 else (None, None))
    return nulls, ranges


def column_stats(pf: pq.ParquetFile, names: Sequence[str], types: Sequence[DataType], truncate: int,
                 read: dict[str, pa.ChunkedArray] | None = None) -> Any:
    """SimpleStats of columns ``names`` of the file: from the footer where it is exact, else from
    the values (``read`` may hold columns already read)."""
    acc = StatsAccumulator(types, truncate)
    leaf = _leaf_of(pf)
    values: list[int] = []
    for i, (name, t) in enumerate(zip(names, types, strict=True)):
        got = _footer_range(pf, leaf[name]) if isinstance(t, FOOTER_RANGE_TYPES) and name not in (read or {}) else None
        if got is not None and isinstance(t, FOOTER_STRING_TYPES) and any(
                r is not None and (r[1] is None or len(str(r[1]).encode()) > FOOTER_STRING_BYTES) for r in got[1]):
            got = None  # long strings (parquet-java drops ranges over 4 KiB): computed, as the core does
        if got is None:
            values.append(i)
            continue
        nulls, ranges = got
        acc.nulls[i] += nulls
        for r in ranges:
            if r is not None:
                acc.fold(i, r[0], r[1])
    if values:
        missing = [names[i] for i in values if names[i] not in (read or {})]
        table = pf.read(columns=missing, use_threads=False) if missing else None
        sub = StatsAccumulator([types[i] for i in values], truncate)
        sub.update([(read or {}).get(names[i]) or table.column(names[i]) for i in values])  # type: ignore[union-attr]
        for j, i in enumerate(values):
            acc.nulls[i] += sub.nulls[j]
            acc.mins[i], acc.maxs[i], acc.unknown[i] = sub.mins[j], sub.maxs[j], sub.unknown[j]
    return acc.result()


def _partition_values(pf: pq.ParquetFile, schema: TableSchema, path: str) -> list[Any]:
    """The one partition of a file's rows, from its partition columns."""
    names = list(schema.partition_keys)
    if not names:
        return []
    leaf = _leaf_of(pf)
    values: list[Any] = []
    unread = []
    for name, t in zip(names, schema.types(names), strict=True):
        got = _footer_range(pf, leaf[name]) if isinstance(t, FOOTER_RANGE_TYPES) else None
        ranges = {r for r in got[1] if r is not None} if got is not None and got[0] == 0 else set()
        lo, hi = ranges.pop() if len(ranges) == 1 else (None, None)
        if lo is not None and lo == hi:
            values.append(lo)  # the footer says: one value in every row group, no nulls
        else:
            values.append(None)
            unread.append(name)
    if not unread:
        return values
    data = pf.read(columns=unread, use_threads=False)
    for name in unread:
        distinct = data.column(name).unique()
        if len(distinct) != 1:
            raise NativeWriteError(f"Spark wrote {path} with {len(distinct)} values of partition key {name!r}")
        values[names.index(name)] = distinct[0].as_py()
    return values


def open_staged(staged: StagedFile) -> tuple[BinaryIO, os.stat_result]:
    """The staged file open for reading, and its status, never through a symbolic link: the
    staging scan saw regular directories and a regular file, but an entry swapped for a link since
    would otherwise be followed (the directories are opened one by one from the staging
    directory's parent, and the file, with ``O_NOFOLLOW``; anything but a regular file is refused)."""
    try:
        with open_below(os.path.dirname(staged.staging), staged.parents(), create=False,
                        what=staged.path, follow_inside=False) as parent:
            fd = os.open(os.path.basename(staged.path), os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0),
                         dir_fd=parent)  # a FIFO must not block
    except (OSError, UnsafePathError) as exc:
        raise NativeWriteError(f"Cannot read Spark's staged file {staged.path} (replaced since the staging scan, "
                               f"by a symbolic link?): {exc}") from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NativeWriteError(f"Spark's staged file {staged.path} is no longer a regular file: not read")
    return os.fdopen(fd, "rb"), st


def describe(staged: StagedFile, schema: TableSchema,
             file_name: str) -> tuple[list[Any], DataFileMeta, os.stat_result]:
    """The partition values of a staged file, the `DataFileMeta` it gets under ``file_name``, and
    the status of the file read: everything is read through one descriptor opened by `open_staged`
    (footer and columns alike), and the move checks that this file is still the one read."""
    fh, st = open_staged(staged)
    with fh:
        values, meta = _describe(fh, st, staged.path, schema, file_name)
    return values, meta, st


def _describe(fh: BinaryIO, st: os.stat_result, path: str, schema: TableSchema,
              file_name: str) -> tuple[list[Any], DataFileMeta]:
    pf = pq.ParquetFile(fh)
    keys = list(schema.trimmed_primary_keys)
    key_types = schema.types(keys)
    key_cols = [KEY_PREFIX + k for k in keys]
    key_data = pf.read(columns=[*key_cols, SEQUENCE_NUMBER], use_threads=False)
    rows = key_data.num_rows
    if rows == 0:
        raise NativeWriteError(f"Spark wrote an empty file {path}")
    first = [key_data.column(c)[0].as_py() for c in key_cols]
    last = [key_data.column(c)[rows - 1].as_py() for c in key_cols]
    key_stats = column_stats(pf, key_cols, key_types, KEY_STATS_TRUNCATE,
                             {c: key_data.column(c) for c in key_cols})
    value_names = [f.name for f in schema.fields]
    value_stats = column_stats(pf, value_names, [f.type for f in schema.fields], 16)
    seq = key_data.column(SEQUENCE_NUMBER)
    meta = DataFileMeta(
        file_name=file_name,
        file_size=st.st_size,
        row_count=rows,
        min_key=serialize_row(first, key_types),
        max_key=serialize_row(last, key_types),
        key_stats=key_stats,
        value_stats=value_stats,
        min_sequence_number=int(pc.min(seq).as_py()),
        max_sequence_number=int(pc.max(seq).as_py()),
        schema_id=schema.id,
        level=0,
        extra_files=(),
        creation_time_ms=local_now_ms(),
        delete_row_count=0,  # the native write writes +I records only
        embedded_file_index=None,
        file_source=FileSource.APPEND,
        value_stats_cols=None,
        external_path=None,
        first_row_id=None,
        write_cols=None,
        write_cols_sequences=None,
    )
    return _partition_values(pf, schema, path), meta


def move_into_table(store: FileStore, staged: Sequence[StagedFile], prefix: str,
                    moved: list[str]) -> list[CommitMessage]:
    """Describe every staged file, move it into its bucket directory, and group the files into
    commit messages. Each destination is appended to ``moved`` before the move, so that a caller
    cleaning up after a failure finds every file (a move that did not happen deletes nothing)."""
    schema = store.schema
    types = schema.types(list(schema.partition_keys))
    by_bucket: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    extension = file_extension("parquet", name_compression(schema.core_options))
    total = schema.core_options.bucket
    for s in staged:
        if not 0 <= s.bucket < total:  # the bucket directory's number is Spark's output: checked
            raise NativeWriteError(f"Spark wrote {s.path} into bucket {s.bucket}; {store.name} has {total} buckets")
        name = f"{prefix}{uuid.uuid4()}-0{extension}"
        values, meta, read = describe(s, schema, name)
        partition = serialize_row(values, types)
        dest = store.data_file_path(partition, s.bucket, meta)
        store.paths.ensure_inside([dest])  # lexically inside before anything is done
        moved.append(dest)
        _rename_staged(s, store.paths.root, dest, read)
        by_bucket[(partition, s.bucket)].append(meta)
    return [CommitMessage(partition, bucket, total, tuple(files)) for (partition, bucket), files in by_bucket.items()]


def _rename_staged(staged: StagedFile, root: str, dest: str, read: os.stat_result) -> None:
    """Move the staged file to ``dest`` (inside the table ``root``) if it is still the regular
    file that was read (``read``: same device and inode): ``os.rename`` moves a symbolic link
    itself, so an entry swapped for a link (or another file) after it was described would
    otherwise land in the table under statistics that are not its own. Checked right before the
    rename; Spark's staging directory is written by this job's tasks alone, so the window left is
    the rename itself.

    Both ends are reached through directory descriptors (`open_below`): no directory of the
    staging side is followed if a link, and the destination's directories are made and opened
    below the table root, a link out of the table refused (``os.makedirs`` would follow it and
    make directories behind it). Orphan removal may remove the bucket directory (once emptied)
    between its opening and the rename: `rename_below` makes it again."""
    source = os.path.basename(staged.path)
    try:
        with open_below(os.path.dirname(staged.staging), staged.parents(), create=False,
                        what=staged.path, follow_inside=False) as src_fd:
            st = os.stat(source, dir_fd=src_fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (read.st_dev, read.st_ino):
                what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else (
                    "not a regular file" if not stat.S_ISREG(st.st_mode) else "another file than the one read")
                raise NativeWriteError(f"Spark's staged file {staged.path} is now {what}: not moved into the table")
            rename_below(src_fd, source, root, dest)
    except UnsafePathError:
        raise
    except FileNotFoundError as exc:
        raise NativeWriteError(f"Cannot move Spark's staged file {staged.path} into the table: {exc}") from exc
