"""The table facade: reads, writes, two-phase commit, snapshots.

A `Table` is a handle on a table directory; it holds no state that a concurrent writer could
invalidate except the schema, which `refresh` reloads and which reads, plans and new writers move
on to the schema of the snapshot they work on when another handle evolved it (`FileStore.schema_at`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_assets import arguments as args
from lake_assets.errors import (
    CommitStateUnknownError,
    InvalidArgumentError,
    SchemaError,
)
from lake_assets.io.file_io import FileIO
from lake_assets.ops.data_evolution_read import system_columns
from lake_assets.ops.row_range_prune import filter_schema
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from lake_assets.store.file_store import FileStore
from lake_assets.table_maintenance import TableMaintenance
from lake_assets.table_support import Op

# The verbs' modules are imported inside the methods that use them (the first lines of each), so that
# loading a table (every Spark worker, Dagster code location and job does) imports only what reads and
# writes need, and a verb's modules load at its first call (issue 17 §3). The names here are for
# type checkers only.
if TYPE_CHECKING:
    from lake_assets.ops.commit import TableCommitter
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.ops.postpone_write import PostponeWriter
    from lake_assets.ops.scan import Split
    from lake_assets.ops.schema_change import SchemaUpdate
    from lake_assets.ops.stream import ChangeReader, StreamEnumerator
    from lake_assets.ops.write import TableWriter

_STREAM_MODES = ("latest-full", "earliest-full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp")


class Table(TableMaintenance):
    """A Paimon table in a filesystem catalog: the user-facing verbs over its `FileStore`.

    ``store`` is what the operations in `lake_assets.ops` work on; ``name``, ``file_io``,
    ``paths``, ``snapshot_manager``, ``schema`` and the key properties are the store's (`StoreView`);
    tags and maintenance (expiry, compaction, health, orphans, rollback) are `TableMaintenance`'s.
    """

    def __init__(self, name: str, file_io: FileIO, root: str, schema: TableSchema | None = None) -> None:
        self.store = FileStore(name, file_io, root, schema)

    def _read_schema(self, snap: Snapshot | None, *, travel: bool) -> TableSchema:
        """Time travel reads with the fields of the schema the snapshot was committed under and
        the current options, as Paimon does (`FileStore.travel_schema`); a read of the latest state
        uses the handle's schema, moved on to the snapshot's when another handle evolved the schema
        since (`FileStore.schema_at`)."""
        if not travel:
            return self.store.schema_at(snap)
        return self.store.travel_schema(snap)

    def update_schema(self) -> SchemaUpdate:
        """Evolve the schema: ``table.update_schema().add_column("x", pa.int64()).commit()``.

        Old files keep reading by field id: renamed columns follow their id, added ones read as null,
        widened types are cast. Key and partition columns are protected (see `SchemaUpdate`).
        """
        from lake_assets.ops.schema_change import SchemaUpdate

        self.store.require(Op.SCHEMA_CHANGE)
        return SchemaUpdate(self.store)

    def refresh(self) -> Table:
        """Reload the latest schema (after schema changes by another process)."""
        self.store.refresh()
        return self

    # ---------------------------------------------------------------- changes
    def read_changes(
        self,
        start: int | str,
        end: int | str | None = None,
        *,
        source: str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Incremental read with a ``_row_kind`` column (+I, -U, +U, -D): between two tags the net
        change of each key (the tags' files diffed, as Paimon), else the changes of snapshots in
        ``(start, end]``. ``source``: "delta", "changelog", "auto" or "diff"; unset, the table's
        ``incremental-between-scan-mode`` (see `lake_assets.ops.stream.read_changes`)."""
        from lake_assets.ops.stream import read_changes

        args.snapshot_or_tag("start", start, optional=False)
        args.snapshot_or_tag("end", end)
        if source is not None:
            args.one_of("source", source, ("auto", "delta", "changelog", "diff"))
        args.names("columns", columns)
        self.store.require(Op.STREAM)
        return read_changes(self.store, start, end, source=source, columns=list(columns) if columns else None)  # type: ignore[arg-type]

    def stream(
        self,
        *,
        mode: str = "latest-full",
        snapshot_id: int | None = None,
        timestamp: datetime | int | str | None = None,
        consumer_id: str | None = None,
        position: int | None = None,
    ) -> StreamEnumerator:
        """A streaming read's enumerator (read its splits with `change_reader`). It reads with
        one schema for its whole run (`StreamEnumerator.read_schema`: the table's now, or a
        start snapshot's fields when it starts at a snapshot id or time), as Paimon's streams;
        a new enumerator - from ``consumer_id``'s position too - takes the table's schema then."""
        from lake_assets.ops.plan import to_epoch_ms
        from lake_assets.ops.stream import StreamEnumerator

        args.one_of("mode", mode, _STREAM_MODES)
        args.integer("snapshot_id", snapshot_id, minimum=0)
        # An argument the mode does not use would be ignored silently (Java refuses such options:
        # "scan.snapshot-id must be null when you set scan.mode=...").
        if snapshot_id is not None and mode not in ("from-snapshot", "from-snapshot-full"):
            raise InvalidArgumentError(f"snapshot_id needs mode 'from-snapshot' or 'from-snapshot-full', not {mode!r}")
        if timestamp is not None and mode != "from-timestamp":
            raise InvalidArgumentError(f"timestamp needs mode 'from-timestamp', not {mode!r}")
        args.text("consumer_id", consumer_id, empty=True)
        args.integer("position", position, minimum=0)
        self.store.require(Op.STREAM)
        ts = None if timestamp is None else to_epoch_ms(timestamp)
        return StreamEnumerator(self.store, mode=mode, snapshot_id=snapshot_id, timestamp_ms=ts,  # type: ignore[arg-type]
                                consumer_id=consumer_id, position=position)

    def change_reader(
        self, columns: Sequence[str] | None = None, *, stream: StreamEnumerator | None = None
    ) -> ChangeReader:
        """A reader of the change splits a `stream` plans, projecting ``columns``. With ``stream``
        it starts with that stream's schema: one from an old snapshot reads with the snapshot's
        fields (`StreamEnumerator.read_schema`), so ``columns`` and its `ChangeReader.schema`
        are those names. Splits are read with the schema they carry either way."""
        from lake_assets.ops.stream import ChangeReader, StreamEnumerator

        args.names("columns", columns)
        if stream is not None and not isinstance(stream, StreamEnumerator):
            raise InvalidArgumentError(f"stream must be a StreamEnumerator from Table.stream, got "
                                       f"{type(stream).__name__}")
        self.store.require(Op.STREAM)
        return ChangeReader(self.store, list(columns) if columns else None,
                            None if stream is None else stream.read_schema)

    # -------------------------------------------------------------- snapshots
    def snapshots(self) -> list[Snapshot]:
        """All retained snapshots, oldest first."""
        return list(self.snapshot_manager.snapshots())

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """The snapshot of this id (`SnapshotNotFoundError` when it is not retained)."""
        args.integer("snapshot_id", snapshot_id, optional=False)
        return self.snapshot_manager.snapshot(snapshot_id)

    # ------------------------------------------------------------------ write
    def new_writer(
        self, commit_user: str, *, write_only: bool = False, ignore_previous_files: bool = False,
        spill_dir: str | os.PathLike[str] | None = None,
    ) -> TableWriter | PostponeWriter:
        """A writer for the two-phase commit: `write_arrow`, then `prepare_commit` → messages.

        ``ignore_previous_files``: the writer's buckets start empty (for an overwrite, whose commit
        removes the files there): inline compaction and changelog see only the new data.
        ``spill_dir``: the local directory its write buffer and inline compaction spill under
        (default ``LAKE_ASSETS_SPILL_DIR``, in a Spark worker Spark's local dirs, else the system
        temp; `lake_assets.ops.spill.spill_root`); it must exist.
        """
        from lake_assets.ops.postpone_write import new_table_writer

        args.text("commit_user", commit_user, optional=False)
        args.flag("write_only", write_only)
        args.flag("ignore_previous_files", ignore_previous_files)
        # A writer takes the schema of the latest snapshot when another handle evolved it since
        # this one loaded: its merges, lookups and inline compaction read the files under it.
        self.store.schema_at(self.snapshot_manager.latest())
        return new_table_writer(self.store, commit_user, write_only=write_only,
                                ignore_previous_files=ignore_previous_files, spill_dir=spill_dir)

    def new_committer(self, commit_user: str) -> TableCommitter:
        """The committer of ``commit_user``: `commit(messages, commit_identifier)` is exactly-once."""
        from lake_assets.ops.commit import TableCommitter

        args.text("commit_user", commit_user, optional=False)
        return TableCommitter(self.store, commit_user)

    def write_arrow(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader,
        *,
        overwrite: bool | dict[str, str] = False,
        spill_dir: str | os.PathLike[str] | None = None,
    ) -> int | None:
        """Write and commit in one call; returns the new snapshot id (None if nothing was written).

        ``overwrite=True`` replaces, as Paimon does, the partitions the data has rows in (nothing
        when it has none) under ``dynamic-partition-overwrite`` = true, the default, else the whole
        table (an unpartitioned table is always replaced whole); a dict such as
        ``{"dt": "2024-01-01"}`` replaces the partitions matching those values (and rejects rows
        outside them). ``spill_dir``: where the write spills (see `new_writer`).
        """
        from lake_assets.ops.overwrite import check_inside_partition, overwrite_of_whole_table, overwrite_spec

        user = str(uuid.uuid4())
        ow = overwrite_spec(self.store, overwrite)
        # Like Paimon's overwrite writer: the replaced partitions' files are not compacted with
        # the new data (the commit deletes them) nor looked up for changelog.
        writer = self.new_writer(user, ignore_previous_files=ow is not None, spill_dir=spill_dir)
        committer = self.new_committer(user)
        messages: list[CommitMessage] = []
        try:
            writer.write_arrow(data)
            messages = writer.prepare_commit()
            if isinstance(overwrite, dict) and overwrite:
                check_inside_partition(self.store, messages, ow)
            elif ow is not None:
                ow = overwrite_of_whole_table(self.store, messages)
                if ow is None:  # a dynamic overwrite of no rows: nothing replaced, no commit (nor an empty one)
                    return None
            ids = committer.commit(messages, BATCH_COMMIT_IDENTIFIER, overwrite=ow, check_committed=False)
        except CommitStateUnknownError:
            raise  # the files may be referenced by a snapshot that did land: never delete them
        except BaseException:
            # An interrupt (Ctrl-C) after a snapshot landed or while one was being put must not
            # delete files that snapshot references: only a commit proven absent is cleaned up.
            if not committer.may_have_landed:
                writer.abort(messages)
            raise
        finally:
            writer.close()
        return ids[-1] if ids else None

    def update_columns(self, data: pa.Table | pa.RecordBatch) -> int | None:
        """Set some columns of existing rows of a data-evolution table, by ``_ROW_ID``; commits and
        returns the new snapshot id (None when ``data`` has no rows).

        ``data`` holds ``_ROW_ID`` and the columns to set, e.g. the values of a column added by
        `update_schema`: ``t.update_columns(pa.table({"_ROW_ID": [0, 5], "score": [0.9, 0.1]}))``.
        The rows are not rewritten: each row-id range touched gets one file of those columns
        (pypaimon's ``update_by_arrow_with_row_id`` writes the same), merged over the older files
        by every reader. Refused with a `LakeError`, before anything is written: a table without
        ``data-evolution.enabled``, a ``_ROW_ID`` that is null, repeated or of no live row, unknown,
        system or partition columns, values the column types cannot hold. The commit fails with
        `CommitConflictError` when a concurrent commit rewrote one of the ranges (a compaction) or
        wrote one of the columns of its rows since this update read them, as Paimon's does.
        """
        from lake_assets.ops.column_update import prepare_column_update

        self.store.require(Op.WRITE)
        messages, read_at = prepare_column_update(self.store, data)
        if not messages:
            return None
        committer = self.new_committer(str(uuid.uuid4()))
        try:
            ids = committer.commit(messages, BATCH_COMMIT_IDENTIFIER, check_committed=False,
                                   row_ids_read_at=read_at.id if read_at is not None else None)
        except BaseException:
            if not committer.may_have_landed:
                committer.abort(messages)
            raise
        return ids[-1] if ids else None

    # ------------------------------------------------------------------- read
    def resolve_snapshot(
        self,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: datetime | int | str | None = None,
    ) -> Snapshot | None:
        """The snapshot a read sees: by id, by tag, as of a time (epoch ms, datetime or ISO text), or latest."""
        from lake_assets.ops.plan import resolve_snapshot, to_epoch_ms

        args.integer("snapshot_id", snapshot_id)
        args.text("tag", tag, empty=True)
        given = [x is not None for x in (snapshot_id, tag, timestamp)]
        if sum(given) > 1:
            raise InvalidArgumentError("Pass at most one of snapshot_id, tag and timestamp")
        ms = None if timestamp is None else to_epoch_ms(timestamp)
        return resolve_snapshot(self.store, snapshot_id, tag=tag, timestamp_ms=ms, timestamp_label=timestamp)

    def plan(
        self,
        *,
        snapshot_id: int | None = None,
        filter: Any = None,
        snapshot: Snapshot | None = None,
        op: Op = Op.READ,
    ) -> list[Split]:
        """The splits (one per partition and bucket) a read of the snapshot consists of.

        ``op`` is the operation the plan is for (a compaction plans with `Op.COMPACT`): the table and
        the files planned are checked for it (`lake_assets.table_support`). A postpone table's plan
        holds its real buckets only; with ``postpone.merge-on-read`` the reads merge the waiting rows
        in (`lake_assets.ops.postpone_merge_read.plan_merge_read` is their plan)."""
        from lake_assets.ops.plan import plan_splits
        from lake_assets.predicate import Predicate

        self.store.require(op)
        snap = snapshot if snapshot is not None else self.resolve_snapshot(snapshot_id)
        if snap is None:
            return []
        # the filter names columns as the read's schema does: a time travel's is its snapshot's,
        # else the handle's, moved on when the snapshot was committed under a newer one
        schema = self._read_schema(snap, travel=snapshot is None and snapshot_id is not None)
        pred = Predicate.of(filter)
        if pred is not None:
            pred = pred.bind(filter_schema(schema), self.name)
        return plan_splits(self.store, snap, pred, op, schema=schema)

    def to_batches(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: datetime | int | str | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        batch_size: int | None = None,
        read_ahead: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Stream the table's rows as record batches of at most ``batch_size`` rows.

        Memory is set by ``batch_size`` and ``read_ahead`` (batches each reading thread may hold
        ready), not by the table: a bucket's sorted runs are merged batch by batch (see
        `lake_assets.ops.streaming_read`). Unset, they are the table's options ``read.batch-size``
        and ``read.read-ahead`` (defaults 65536 and 2), taken once the snapshot is resolved from the
        table's current schema - the handle's, moved on to the latest snapshot's when another handle
        evolved it (`FileStore.schema_at`) - as Paimon's reads take options: a time-travel read
        reads the old snapshot's columns with the current options (Java's time travel copies the
        snapshot's schema with the table's options), not the options the old schema had.
        Arguments are checked at the call, not at the first batch."""
        args.names("columns", columns)
        args.integer("batch_size", batch_size, minimum=1)
        args.integer("read_ahead", read_ahead, minimum=1)
        return self._batches(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp, columns=columns, filter=filter,
                             stream=(batch_size, read_ahead))

    def _batches(self, *, snapshot_id: int | None, tag: str | None, timestamp: datetime | int | str | None,
                 columns: Sequence[str] | None, filter: Any,
                 stream: tuple[int | None, int | None] = (None, None),
                 ) -> Iterator[pa.RecordBatch]:
        from lake_assets.ops.streaming_read import stream_bounds

        # Resolved at the first batch (a generator), once: the schema and the files come from it.
        snap, schema = self._read_point(snapshot_id, tag=tag, timestamp=timestamp)
        # after `_read_point`: a read of the latest state has moved the store to its schema
        bounds = stream_bounds(self.store.schema.core_options, *stream)
        for t in self._tables(snap, schema, columns=columns, filter=filter, stream=bounds):
            yield from t.to_batches(max_chunksize=bounds[0])

    def _read_point(
        self, snapshot_id: int | None, *, tag: str | None, timestamp: datetime | int | str | None
    ) -> tuple[Snapshot | None, TableSchema]:
        """The snapshot a read sees and the schema it reads with, resolved once: a read that looked
        the snapshot up twice could pair one snapshot's schema with another's files."""
        self.store.require(Op.READ)
        snap = self.resolve_snapshot(snapshot_id, tag=tag, timestamp=timestamp)
        return snap, self._read_schema(snap, travel=(snapshot_id, tag, timestamp) != (None, None, None))

    def _tables(
        self,
        snap: Snapshot | None,
        schema: TableSchema,
        *,
        columns: Sequence[str] | None,
        filter: Any,
        stream: tuple[int, int] | None = None,
    ) -> Iterator[pa.Table]:
        """The rows of ``snap`` read with ``schema`` (from `_read_point`), table by table: whole merge
        sections read splits ahead, or with ``stream`` = (batch rows, read-ahead) bounded batches
        (`ops.streaming_read`)."""
        from lake_assets.ops import postpone_merge_read
        from lake_assets.ops.read import SplitReader
        from lake_assets.ops.read_ahead import read_splits_ahead
        from lake_assets.ops.streaming_read import stream_bounds, stream_splits
        from lake_assets.predicate import Predicate

        if columns is not None:
            unknown = [c for c in columns if not schema.has_field(c) and c not in system_columns(schema)]
            if unknown:
                raise SchemaError(f"Table {self.name} has no columns {unknown}")
        if snap is None:
            return
        pred = Predicate.of(filter)
        if pred is not None:
            pred = pred.bind(filter_schema(schema), self.name)
        reader = SplitReader(self.store, schema, columns, pred, fill_defaults=True)
        reader.snapshot_id = snap.id  # a file removed by expiry meanwhile: a race, not corruption
        # postpone.merge-on-read: partitions with postponed rows are merged unit by unit
        splits, units = postpone_merge_read.plan_read(self.store, snap, pred, schema)
        if stream is not None:
            yield from stream_splits(reader, splits, batch_rows=stream[0], read_ahead=stream[1])
        else:
            yield from read_splits_ahead(reader, splits)
        batch_rows = stream[0] if stream is not None else stream_bounds(self.store.schema.core_options)[0]
        for unit in units:
            yield from postpone_merge_read.read_unit(reader, unit, batch_rows)

    def to_arrow(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: datetime | int | str | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
    ) -> pa.Table:
        """Read the table into one Arrow table: latest, or as of a snapshot id, tag or point in time."""
        args.names("columns", columns)
        snap, table_schema = self._read_point(snapshot_id, tag=tag, timestamp=timestamp)
        schema = table_schema.arrow_schema
        if columns is not None:
            extra = system_columns(table_schema)
            schema = pa.schema([extra[c] if c in extra else schema.field(c) for c in columns
                                if table_schema.has_field(c) or c in extra])
        tables = list(self._tables(snap, table_schema, columns=columns, filter=filter))
        if not tables:
            return schema.empty_table()
        return pa.concat_tables(tables)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, schema_id={self.schema.id})"
