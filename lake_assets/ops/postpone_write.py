"""The writer of postpone-bucket tables (``bucket = -2``, Paimon 1.1+).

A postpone table's writers do not know buckets: they put every row, with its row kind, into the
partition's ``bucket-postpone`` directory in arrival order, and the dedicated compaction
(`lake_assets.ops.postpone`) later moves the rows into real buckets. This writer does what
Paimon's ``PostponeBucketFileStoreWrite`` / ``PostponeBucketWriter`` (and pypaimon's
``PostponeDataWriter``) do:

* no sort, no merge, no inline compaction, no lookup of existing files (Java ignores previous
  files: the compaction reads these files one by one without merging);
* each writer names its files ``<data-file.prefix>-u-<commit user>-s-<write id>-w-<uuid>-<n>``
  with a random write id, so the compaction can replay one writer's files in order;
* sequence numbers start at 0 per (partition) and follow arrival order: they only order one
  writer's rows;
* files are Avro with ``metadata.stats-mode = none`` (empty value stats) when the schema has an
  Avro mapping, else the table's format and stats; level 0, ``totalBuckets`` -2, an APPEND commit.

Changelog files are not written here (Java's postpone writer writes none either): with
``changelog-producer = input`` the compaction's writers produce them from the replayed rows.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lake_assets.errors import LakeError, NoSuchTableError
from lake_assets.formats.avro_schema import record_schema
from lake_assets.formats.data_file import (
    FILE_SOURCE_APPEND,
    SEQUENCE_NUMBER,
    VALUE_KIND,
    DataFileWriter,
    RollingFileWriter,
)
from lake_assets.lsm.merge import is_retract
from lake_assets.ops.column_subset import subset_write_schema
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.conform import as_table, conform, row_kinds
from lake_assets.ops.postpone_table import is_postpone_table
from lake_assets.ops.prepared_names import PreparedNames
from lake_assets.ops.route import partition_groups
from lake_assets.ops.spill import spill_root
from lake_assets.ops.write import TableWriter
from lake_assets.ops.writer_abort import split_landed
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import DataFileMeta, SimpleStats
from lake_assets.spec.partition import partition_path
from lake_assets.store.file_store import FileStore
from lake_assets.table_rules import check_engine_producer
from lake_assets.table_support import POSTPONE_BUCKET, Op

# Java draws the write id with ThreadLocalRandom.nextInt(Integer.MAX_VALUE)
MAX_WRITE_ID = 2**31 - 1


def postpone_file_prefix(data_file_prefix: str, commit_user: str, write_id: int) -> str:
    """The file-name prefix of one postpone writer (Java's ``"%s-u-%s-s-%d-w-"``)."""
    return f"{data_file_prefix}-u-{commit_user}-s-{write_id}-w-"


def avro_mappable(store: FileStore) -> bool:
    """Whether every column has an Avro mapping (Java falls back to the table's format otherwise)."""
    try:
        record_schema([(f.name, f.type) for f in store.schema.fields])
    except LakeError:
        return False
    return True


@dataclass
class _PartitionFiles:
    """One partition's postpone files of this writer: rows waiting to be written, the file being
    filled, and the files finished since the last `PostponeWriter.prepare_commit`."""

    partition: bytes
    writer: DataFileWriter
    next_sequence: int = 0
    tables: list[pa.Table] = field(default_factory=list)
    nbytes: int = 0
    rolling: RollingFileWriter | None = None
    done: list[DataFileMeta] = field(default_factory=list)


class PostponeWriter:
    """Writes Arrow data of a postpone-bucket table into ``bucket-postpone`` files; the same
    two-phase interface as `TableWriter` (`write_arrow`, `prepare_commit`, `abort`, `close`)."""

    def __init__(self, store: FileStore, commit_user: str, *, write_id: int | None = None,
                 file_format: str | None = None) -> None:
        """``file_format`` overrides the format of the files (Avro, as Java's, by default): only
        for files no snapshot will name, such as a Spark batch write's staged rows
        (`lake_assets.ops.postpone_fixed_bucket`), which Parquet writes and reads far faster."""
        store.require(Op.WRITE)
        if not store.file_io.exists(store.paths.schema_file(store.schema.id)):
            raise NoSuchTableError(f"Cannot write to {store.name}: the table does not exist (dropped?)")
        self.store = store
        self.schema = store.schema
        self.commit_user = commit_user
        self.options = self.schema.core_options
        check_engine_producer(f"Cannot write to {store.name}", self.options)
        self.write_id = random.randrange(MAX_WRITE_ID) if write_id is None else write_id
        config = store.data_file_config()
        self._avro = avro_mappable(store) if file_format is None else file_format == "avro"
        self._config = dataclasses.replace(
            config, prefix=postpone_file_prefix(self.options.data_file_prefix, commit_user, self.write_id),
            file_format=file_format or ("avro" if self._avro else config.file_format))
        self._partition_types = self.schema.types(list(self.schema.partition_keys))
        self._partitions: dict[bytes, _PartitionFiles] = {}
        self._buffered_bytes = 0
        self._closed = False
        # the latest snapshot before its first file (`abort` looks after it): read at the first row
        self.based = False
        self.first_base_id: int | None = None
        self.prepared = PreparedNames()  # of its `prepare_commit`s, not seen landed: its own messages

    @property
    def spilling(self) -> bool:
        """Never: rows go to their files as they come (a postpone writer has nothing to merge)."""
        return False

    def interleave_sequences(self, slot: int, slots: int) -> None:
        """Nothing to do: a postpone file's sequence numbers order its writer's rows only (the
        compaction replays each writer's files on their own), so writers sharing a partition
        need no disjoint numbers."""
        if not 0 <= slot < slots:
            raise LakeError(f"Writer of {self.store.name}: sequence slot {slot} of {slots} is out of range")

    # ----------------------------------------------------------------- input
    def write_arrow(
        self, data: pa.Table | pa.RecordBatch | pa.RecordBatchReader, *, kinds: np.ndarray | None = None
    ) -> None:
        """Buffer rows, in arrival order, per partition; files are written when the buffer holds
        ``write-buffer-size`` bytes and at `prepare_commit`."""
        if self._closed:
            raise LakeError(f"Writer of {self.store.name} is closed")
        if isinstance(data, pa.RecordBatchReader):
            for batch in data:
                self.write_arrow(batch)
            return
        data = conform(as_table(data, self.store.name), self.schema, self.store.name)
        if data.num_rows == 0:
            return
        if kinds is None:
            kinds = row_kinds(data, self.schema, self.store.name)
        self.write_conformed(data, kinds)

    def write_conformed(self, data: pa.Table, kinds: np.ndarray) -> None:
        """Buffer rows already conformed to the table (`conform`) with their kinds (int8 RowKind
        per row): `write_arrow` after its checks, for writers that conform a batch once and hand
        its parts on (`lake_assets.ops.postpone_fixed_bucket.PostponeFixedBucketWriter`)."""
        if self._closed:
            raise LakeError(f"Writer of {self.store.name} is closed")
        if self.options.ignore_delete:
            # Java's writer drops retractions of ignore-delete tables before they reach a file
            keep = ~is_retract(kinds)
            if not keep.all():
                data, kinds = data.filter(pa.array(keep)), kinds[keep]
        if data.num_rows == 0:
            return
        ids, values = partition_groups(data, list(self.schema.partition_keys))
        single = len(values) == 1
        for gid, pvals in enumerate(values):
            rows = np.arange(data.num_rows) if single else np.flatnonzero(ids == gid)
            self._add(pvals, data if single else data.take(pa.array(rows)), kinds[rows])
        if self._buffered_bytes >= self.options.write_buffer_size:
            self.flush()

    def _add(self, pvals: tuple[Any, ...], rows: pa.Table, kinds: np.ndarray) -> None:
        part = self._partition(pvals)
        n = rows.num_rows
        seq = pa.array(np.arange(part.next_sequence, part.next_sequence + n, dtype=np.int64))
        part.next_sequence += n
        chunk = rows.append_column(SEQUENCE_NUMBER, seq).append_column(VALUE_KIND, pa.array(kinds, pa.int8()))
        part.tables.append(chunk)
        part.nbytes += chunk.nbytes
        self._buffered_bytes += chunk.nbytes

    def _partition(self, pvals: tuple[Any, ...]) -> _PartitionFiles:
        partition = serialize_row(list(pvals), self._partition_types)
        part = self._partitions.get(partition)
        if part is None:
            if not self.based:  # a lagging LATEST hint only makes abort look at more snapshots
                self.first_base_id, self.based = self.store.snapshot_manager.latest_id(), True
            ppath = partition_path(self.schema.partition_keys, pvals, self._partition_types,
                                   self.options.partition_default_name,
                                   legacy_name=self.options.partition_legacy_name)
            bucket_dir = self.store.paths.bucket_dir(ppath, POSTPONE_BUCKET)
            part = _PartitionFiles(partition, DataFileWriter(self.store.file_io, bucket_dir, self.schema,
                                                             self._config))
            self._partitions[partition] = part
        return part

    # ---------------------------------------------------------------- output
    def flush(self) -> None:
        """Write every partition's buffered rows into its open file (rolled at the target size)."""
        for part in self._partitions.values():
            if not part.tables:
                continue
            data = pa.concat_tables(part.tables) if len(part.tables) > 1 else part.tables[0]
            part.tables = []
            self._buffered_bytes -= part.nbytes
            part.nbytes = 0
            if part.rolling is None:
                part.rolling = part.writer.rolling(level=0, file_source=FILE_SOURCE_APPEND)
            part.rolling.write(data)
            self.store.fault_point("write.after_data_files")

    def _finish(self, meta: DataFileMeta) -> DataFileMeta:
        if not self._avro:
            return meta
        # metadata.stats-mode = none, as Java sets it with Avro: no value stats at all
        return dataclasses.replace(meta, value_stats=SimpleStats.EMPTY, value_stats_cols=())

    def prepare_commit(self) -> list[CommitMessage]:
        """Write what is buffered, close the open files and return one message per partition
        (bucket -2, ``totalBuckets`` -2) with the files written since the last call."""
        self.flush()
        messages = []
        for part in self._partitions.values():
            if part.rolling is not None:
                rolling, part.rolling = part.rolling, None
                part.done.extend(self._finish(m) for m in rolling.close())
            if part.done:
                messages.append(CommitMessage(part.partition, POSTPONE_BUCKET, POSTPONE_BUCKET,
                                              new_files=tuple(part.done)))
                part.done = []
        self.prepared.record(self.store, messages, self.first_base_id if self.based else None)
        return messages

    def abort(self, messages: Iterable[CommitMessage] = ()) -> list[CommitMessage]:
        """Delete files written but not committed: this writer's, and those of ``messages`` (this
        writer's) that no snapshot since its first row committed; returns those that one did, as
        `TableWriter.abort` (which see: `CommitStateUnknownError` when that cannot be known)."""
        since = self.prepared.since(self.first_base_id if self.based else None)
        landed, messages = split_landed(self.store, messages, since, self.prepared.names)
        # the messages' files proven inside the table (through symlinks too) before anything goes
        paths = self.store.paths.ensure_inside(
            [self.store.data_file_path(m.partition, m.bucket, f) for m in messages for f in m.all_written_files()],
            resolve_links=self.store.file_io.has_symlinks)
        for part in self._partitions.values():
            if part.rolling is not None:
                rolling, part.rolling = part.rolling, None
                rolling.abort()
            paths += [f"{part.writer.bucket_dir}/{name}" for f in part.done for name in (f.file_name, *f.extra_files)]
            part.done = []
            part.tables = []
            part.nbytes = 0
        self._buffered_bytes = 0
        self.store.file_io.delete_many(paths)
        self.prepared.forget([*landed, *messages])  # settled (`PreparedNames`)
        return landed

    def close(self) -> None:
        """Drop buffered rows and any file still open; files returned by `prepare_commit` are
        left to the committer."""
        for part in self._partitions.values():
            if part.rolling is not None:
                rolling, part.rolling = part.rolling, None
                rolling.abort()
            part.tables = []
            part.nbytes = 0
        self._buffered_bytes = 0
        self._closed = True

    def __enter__(self) -> PostponeWriter:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is not None:
            self.abort()
        self.close()


def new_table_writer(
    store: FileStore, commit_user: str, *, write_only: bool = False, ignore_previous_files: bool = False,
    spill_dir: str | os.PathLike[str] | None = None, write_columns: Sequence[str] | None = None,
) -> TableWriter | PostponeWriter:
    """The writer of a table: a `PostponeWriter` for postpone-bucket tables (it never compacts,
    spills nor looks at previous files, so the flags are moot and ``spill_dir`` is only checked),
    else a `TableWriter` spilling under ``spill_dir`` (`lake_assets.ops.spill.spill_root`), of
    ``write_columns`` only when given (`lake_assets.ops.column_subset`)."""
    if is_postpone_table(store):
        spill_root(spill_dir)  # a bad setting fails every writer alike, before it writes
        subset_write_schema(store.schema, write_columns, store.name)  # refused: not a data-evolution table
        return PostponeWriter(store, commit_user)
    return TableWriter(store, commit_user, write_only=write_only, ignore_previous_files=ignore_previous_files,
                       spill_dir=spill_dir, write_columns=write_columns)
