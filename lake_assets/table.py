"""The table facade: writes, two-phase commit, schema changes, snapshots; reads, changes and
maintenance through the verbs it inherits.

A `Table` is a handle on a table directory; it holds no state that a concurrent writer could
invalidate except the schema, which `refresh` reloads and which reads, plans and new writers move
on to the schema of the snapshot they work on when another handle evolved it (`FileStore.schema_at`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets import arguments as args
from lake_assets.errors import CommitStateUnknownError
from lake_assets.io.file_io import FileIO
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from lake_assets.store.file_store import FileStore
from lake_assets.store.read_once import reads_once
from lake_assets.table_changes import TableChanges
from lake_assets.table_maintenance import TableMaintenance
from lake_assets.table_reads import TableReads
from lake_assets.table_support import Op

# The verbs' modules are imported inside the methods that use them (the first lines of each), so that
# loading a table (every Spark worker, Dagster code location and job does) imports only what reads and
# writes need, and a verb's modules load at its first call (issue 17 §3). The names here are for
# type checkers only.
if TYPE_CHECKING:
    from lake_assets.ops.commit import TableCommitter
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.ops.postpone_write import PostponeWriter
    from lake_assets.ops.schema_change import SchemaUpdate
    from lake_assets.ops.write import TableWriter


class Table(TableReads, TableChanges, TableMaintenance):
    """A Paimon table in a filesystem catalog: the user-facing verbs over its `FileStore`.

    ``store`` is what the operations in `lake_assets.ops` work on; ``name``, ``file_io``,
    ``paths``, ``snapshot_manager``, ``schema`` and the key properties are the store's (`StoreView`);
    batch reads (`resolve_snapshot`, `plan`, `to_arrow`, `to_batches`) are `TableReads`'s, change
    reads and streams `TableChanges`'s, tags and maintenance (expiry, compaction, health, orphans,
    rollback) `TableMaintenance`'s; writes, commits, schema changes and snapshots are its own.
    """

    def __init__(self, name: str, file_io: FileIO, root: str, schema: TableSchema | None = None, *,
                 branch: str | None = None) -> None:
        """``branch``: open that branch of the table at ``root`` (its own snapshots, schemas and
        tags; reads only, `lake_assets.store.branch_table`); ``name`` is then ``db.t$branch_<b>``."""
        self.store = FileStore(name, file_io, root, schema, branch=branch)

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
        spill_dir: str | os.PathLike[str] | None = None, write_columns: Sequence[str] | None = None,
    ) -> TableWriter | PostponeWriter:
        """A writer for the two-phase commit: `write_arrow`, then `prepare_commit` → messages.

        ``ignore_previous_files``: the writer's buckets start empty (for an overwrite, whose commit
        removes the files there): inline compaction and changelog see only the new data.
        ``spill_dir``: the local directory its write buffer and inline compaction spill under
        (default ``LAKE_ASSETS_SPILL_DIR``, in a Spark worker Spark's local dirs, else the system
        temp; `lake_assets.ops.spill.spill_root`); it must exist. ``write_columns``: the writer
        takes new rows of these columns only (a data-evolution table; see `write_arrow`).
        """
        return self._new_writer(commit_user, write_only=write_only, ignore_previous_files=ignore_previous_files,
                                spill_dir=spill_dir, write_columns=write_columns)[0]

    def _new_writer(
        self, commit_user: str, *, write_only: bool = False, ignore_previous_files: bool = False,
        spill_dir: str | os.PathLike[str] | None = None, write_columns: Sequence[str] | None = None,
    ) -> tuple[TableWriter | PostponeWriter, Snapshot | None]:
        """`new_writer`, and the latest snapshot it read (None: the table has none)."""
        from lake_assets.ops.postpone_write import new_table_writer

        args.text("commit_user", commit_user, optional=False)
        args.flag("write_only", write_only)
        args.flag("ignore_previous_files", ignore_previous_files)
        # A writer takes the schema of the latest snapshot when another handle evolved it since
        # this one loaded: its merges, lookups and inline compaction read the files under it.
        latest = self.snapshot_manager.latest()
        self.store.schema_at(latest)
        writer = new_table_writer(self.store, commit_user, write_only=write_only,
                                  ignore_previous_files=ignore_previous_files, spill_dir=spill_dir,
                                  write_columns=write_columns)
        return writer, latest

    def new_committer(self, commit_user: str) -> TableCommitter:
        """The committer of ``commit_user``: `commit(messages, commit_identifier)` is exactly-once."""
        from lake_assets.ops.commit import TableCommitter

        args.text("commit_user", commit_user, optional=False)
        return TableCommitter(self.store, commit_user)

    @reads_once
    def write_arrow(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader,
        *,
        overwrite: bool | dict[str, str] = False,
        spill_dir: str | os.PathLike[str] | None = None,
        write_columns: Sequence[str] | None = None,
    ) -> int | None:
        """Write and commit in one call; returns the new snapshot id (None if nothing was written).

        ``overwrite=True`` replaces, as Paimon does, the partitions the data has rows in (nothing
        when it has none) under ``dynamic-partition-overwrite`` = true, the default, else the whole
        table (an unpartitioned table is always replaced whole); a dict such as
        ``{"dt": "2024-01-01"}`` replaces the partitions matching those values (and rejects rows
        outside them). ``spill_dir``: where the write spills (see `new_writer`).

        ``write_columns`` (data-evolution tables only): the new rows hold just these columns, as
        pypaimon's ``with_write_type`` writes them; ``data`` has exactly those columns. The others
        read as null (or their ``fields.<c>.default-value``) until `update_columns` sets them by
        ``_ROW_ID``: ``t.write_arrow(pa.table({"id": [7]}), write_columns=["id"])``. Partition and
        NOT NULL columns cannot be left out; every column is an ordinary write.
        """
        from lake_assets.ops import write as table_writer
        from lake_assets.ops.overwrite import check_inside_partition, overwrite_of_whole_table, overwrite_spec

        user = str(uuid.uuid4())
        ow = overwrite_spec(self.store, overwrite)
        # Like Paimon's overwrite writer: the replaced partitions' files are not compacted with
        # the new data (the commit deletes them) nor looked up for changelog.
        writer, latest = self._new_writer(user, ignore_previous_files=ow is not None, spill_dir=spill_dir,
                                          write_columns=write_columns)
        if isinstance(writer, table_writer.TableWriter):
            # it starts from the snapshot whose schema it took (one read of LATEST, not two); the
            # commit reads the latest again and checks what landed since
            writer.start_from(latest)
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

    def __repr__(self) -> str:
        return f"Table({self.name!r}, schema_id={self.schema.id})"
