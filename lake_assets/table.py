"""The table facade: reads, writes, two-phase commit, snapshots.

A `Table` is a handle on a table directory; it holds no state that a concurrent writer could
invalidate except the schema, which `refresh` reloads.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import posixpath
import re
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

import pendulum
import pyarrow as pa

from lake_assets import arguments as args
from lake_assets.errors import (
    CommitStateUnknownError,
    CorruptMetadataError,
    InvalidArgumentError,
    NoSuchTableError,
    SchemaError,
    SnapshotNotFoundError,
    UnsupportedFeatureError,
)
from lake_assets.formats.manifest_codec import decode_index_manifest
from lake_assets.io.file_io import FileIO
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.lsm.key_compare import values_equal
from lake_assets.lsm.merge_engine.function import MergeFunction
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.ops.changelog_manager import ChangelogManager
from lake_assets.ops.commit import Overwrite, TableCommitter
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact import CompactResult, compact
from lake_assets.ops.consumers import ConsumerManager
from lake_assets.ops.expire import ExpireResult, expire_snapshots
from lake_assets.ops.manifest_io import ManifestIO
from lake_assets.ops.orphans import OrphanResult, remove_orphan_files
from lake_assets.ops.overwrite import overwrite_of_whole_table
from lake_assets.ops.partition_expire import PartitionExpireResult, expire_partitions
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import FileStoreScan, Split
from lake_assets.ops.schema_change import SchemaUpdate
from lake_assets.ops.snapshot_manager import SnapshotManager
from lake_assets.ops.stream import ChangeReader, StreamEnumerator, read_changes
from lake_assets.ops.table_health import table_health
from lake_assets.ops.tags import TagManager
from lake_assets.ops.write import TableWriter
from lake_assets.paths import TablePaths
from lake_assets.predicate import Predicate
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.manifest import DataFileMeta, IndexManifestEntry, ManifestEntry
from lake_assets.spec.partition import partition_path
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot, Tag
from lake_assets.spec.types import BinaryType, VarBinaryType, to_arrow
from lake_assets.table_support import (
    Op,
    Refusal,
    branch_refusals,
    entry_refusals,
    index_refusals,
    refuse,
    schema_refusals,
    validate_open,
)

_STREAM_MODES = ("latest-full", "earliest-full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp")
_SCHEMA_NAME = re.compile(r"schema-([0-9]+)")  # fullmatch: `$` would accept a final newline

# Test hook: a callable that is told each named step of a commit (the crash-injection harness
# kills the process there). None in production.
FaultHook = Callable[[str], None]


class Table:
    """A Paimon table in a filesystem catalog."""

    def __init__(self, name: str, file_io: FileIO, root: str, schema: TableSchema | None = None) -> None:
        self.name = name
        self.file_io = file_io
        self.paths = TablePaths(root)
        self.snapshot_manager = SnapshotManager(file_io, self.paths, name)
        self._schemas: dict[int, TableSchema] = {}
        self._partition_paths: dict[bytes, str] = {}
        self.fault_hook: FaultHook | None = None
        self.schema = schema if schema is not None else self._load_latest_schema()
        self._schemas[self.schema.id] = self.schema
        # Malformed options fail now; unsupported features are refused per operation (`require`).
        validate_open(self.schema)
        self._support: tuple[TableSchema, list[Refusal]] | None = None
        self._index_entries: dict[str, list[IndexManifestEntry]] = {}

    # ----------------------------------------------------------------- schema
    def _load_latest_schema(self) -> TableSchema:
        ids = [int(m.group(1)) for n in self.file_io.list_names(self.paths.schema_dir)
               if (m := _SCHEMA_NAME.fullmatch(n))]
        if not ids:
            raise NoSuchTableError(f"Table {self.name} does not exist (no schema files under {self.paths.root})")
        return self.schema_by_id(max(ids))

    def schema_by_id(self, schema_id: int) -> TableSchema:
        s = self._schemas.get(schema_id)
        if s is None:
            try:
                data = self.file_io.read_bytes(self.paths.schema_file(schema_id))
            except FileNotFoundError:
                raise CorruptMetadataError(f"Table {self.name}: schema-{schema_id} is missing") from None
            s = TableSchema.from_json(data, f"schema-{schema_id} of {self.name}")
            self._schemas[schema_id] = s
        return s

    def _read_schema(self, snap: Snapshot | None, *, travel: bool) -> TableSchema:
        """Time travel reads with the schema the snapshot was committed under, as Paimon does;
        a read of the latest state uses the table's current schema."""
        if not travel or snap is None or snap.schema_id == self.schema.id:
            return self.schema
        return self.schema_by_id(snap.schema_id)

    def _require_exists(self) -> None:
        """Raise `NoSuchTableError` when the table was dropped under this handle (its schema files
        are gone): reads and maintenance would otherwise see an empty table."""
        if not self.file_io.list_names(self.paths.schema_dir):
            raise NoSuchTableError(f"Table {self.name} does not exist (dropped?): no schema files under "
                                   f"{self.paths.root}")

    def latest_schema_id(self) -> int:
        """The newest schema id on storage (a snapshot records it, as Java does at commit time)."""
        ids = [int(m.group(1)) for n in self.file_io.list_names(self.paths.schema_dir)
               if (m := _SCHEMA_NAME.fullmatch(n))]
        return max(ids) if ids else self.schema.id

    def update_schema(self) -> SchemaUpdate:
        """Evolve the schema: ``table.update_schema().add_column("x", pa.int64()).commit()``.

        Old files keep reading by field id: renamed columns follow their id, added ones read as null,
        widened types are cast. Key and partition columns are protected (see `SchemaUpdate`).
        """
        self.require(Op.SCHEMA_CHANGE)
        return SchemaUpdate(self)

    def refresh(self) -> Table:
        """Reload the latest schema (after schema changes by another process)."""
        schema = self._load_latest_schema()
        validate_open(schema)
        self.schema = schema
        return self

    @property
    def primary_keys(self) -> tuple[str, ...]:
        return self.schema.primary_keys

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return self.schema.partition_keys

    @property
    def options(self) -> dict[str, str]:
        return dict(self.schema.options)

    @property
    def arrow_schema(self) -> pa.Schema:
        return self.schema.arrow_schema

    # ------------------------------------------------------------ support
    def refusals(self) -> list[Refusal]:
        """What the current schema refuses, per operation (see `lake_assets.table_support`)."""
        if self._support is None or self._support[0] is not self.schema:
            self._support = (self.schema, schema_refusals(self.schema))
        return self._support[1]

    def require(self, op: Op) -> None:
        """Raise `UnsupportedFeatureError` naming the property if the table refuses ``op``: its
        schema, and for operations that delete files by what the snapshots reference, its branches."""
        refusals = self.refusals()
        if op in (Op.EXPIRE, Op.ORPHANS):
            names = self.file_io.list_names(posixpath.join(self.paths.root, "branch"))
            refusals = refusals + branch_refusals(n[len("branch-"):] for n in names if n.startswith("branch-"))
        refuse(self.name, op, refusals)

    def _check_scanned(self, op: Op, snap: Snapshot, entries: Sequence[ManifestEntry]) -> None:
        """What a scan for ``op`` found (files, index files) must not refuse ``op``."""
        found = entry_refusals(entries)
        if snap.index_manifest:
            found += index_refusals(self.index_entries(snap.index_manifest), self.schema)
        refuse(self.name, op, found)

    def index_entries(self, index_manifest: str) -> list[IndexManifestEntry]:
        """The entries of an index manifest (cached: manifests never change)."""
        got = self._index_entries.get(index_manifest)
        if got is None:
            path = self.paths.manifest_file(index_manifest)
            try:
                data = self.file_io.read_bytes(path)
            except FileNotFoundError:
                raise CorruptMetadataError(f"Table {self.name}: index manifest {index_manifest} is missing") from None
            got = self._index_entries[index_manifest] = decode_index_manifest(data, index_manifest)
        return got

    # --------------------------------------------------------------- plumbing
    def manifest_io(self) -> ManifestIO:
        opts = self.schema.core_options
        return ManifestIO(
            self.file_io,
            self.paths,
            self.schema.types(list(self.schema.partition_keys)),
            compression=opts.manifest_compression,
            target_file_size=opts.manifest_target_file_size,
            table_name=self.name,
        )

    def file_store_scan(self, op: Op | None = None) -> FileStoreScan:
        """A manifest scan; for an ``op``, the schema is checked now and what it scans before use."""
        types = self.schema.types(list(self.schema.partition_keys))
        if op is None:
            return FileStoreScan(self.manifest_io(), types, self.name)
        self.require(op)
        postpone = bool(self.schema.primary_keys) and self.schema.core_options.bucket == -2
        return FileStoreScan(
            self.manifest_io(), types, self.name,
            guard=lambda snap, entries: self._check_scanned(op, snap, entries),
            real_buckets_only=postpone and op is Op.READ,
        )

    def merge_function(self, schema: TableSchema | None = None) -> MergeFunction:
        schema = schema or self.schema
        engine = engine_of(schema.core_options, f"Table {self.name}")
        fields = [(f.name, to_arrow(f.type)) for f in schema.fields]
        return engine.create(fields, list(schema.trimmed_primary_keys), schema.core_options)

    def merge_extra_columns(self, schema: TableSchema) -> list[str]:
        """Columns a merge needs beyond keys and sequence fields: engines that combine the columns
        of several records (partial-update, aggregation) need every column, e.g. sequence groups."""
        if engine_of(schema.core_options, f"Table {self.name}").needs_all_columns:
            return list(schema.field_names)
        return []

    def visible_files(self, files: Sequence[DataFileMeta], schema: TableSchema) -> list[DataFileMeta]:
        # Paimon's batch scan skips level 0 of first-row tables: their level-0 files are only
        # visible after compaction (readers elsewhere would disagree otherwise).
        if not engine_of(schema.core_options, f"Table {self.name}").level0_in_batch_reads:
            return [f for f in files if f.level > 0]
        return list(files)

    def partition_path_of(self, partition: bytes) -> str:
        p = self._partition_paths.get(partition)
        if p is None:
            types = self.schema.types(list(self.schema.partition_keys))
            values = deserialize_row(partition, types)
            p = partition_path(
                self.schema.partition_keys, values, types, self.schema.core_options.partition_default_name
            )
            self._partition_paths[partition] = p
        return p

    def data_file_path(self, partition: bytes, bucket: int, meta: DataFileMeta) -> str:
        """Where a data or changelog file lives; always inside the table (see `TablePaths`)."""
        if meta.external_path:
            # Paimon 1.x `data-file.external-paths`: acting on such a path (reading, deleting)
            # would leave the table directory; not implemented, so refuse rather than follow it.
            raise UnsupportedFeatureError(
                f"Table {self.name}: file {meta.file_name} has an external path {meta.external_path!r}; "
                "external data paths (data-file.external-paths) are not supported"
            )
        return self.paths.data_file(self.partition_path_of(partition), bucket, meta.file_name)

    def fault_point(self, step: str) -> None:
        if self.fault_hook is not None:
            self.fault_hook(step)

    # ------------------------------------------------------ tags, consumers
    def tag_manager(self) -> TagManager:
        return TagManager(self.file_io, self.paths, self.name)

    def consumer_manager(self) -> ConsumerManager:
        return ConsumerManager(self.file_io, self.paths)

    def changelog_manager(self) -> ChangelogManager:
        return ChangelogManager(self.file_io, self.paths, self.name)

    def create_tag(self, name: str, snapshot_id: int | None = None, *, time_retained: timedelta | None = None) -> Tag:
        """Tag a snapshot (default: the latest). Tagged snapshots' files survive expiration.

        Raises `SnapshotNotFoundError` (and leaves no tag) when an expiration is removing, or has
        removed, the snapshot; `AlreadyExistsError` when another tag has the name.
        """
        args.text("name", name, optional=False, empty=True)  # check_tag_name judges it
        args.integer("snapshot_id", snapshot_id, minimum=0)
        args.duration("time_retained", time_retained)
        self.require(Op.TAG)
        snap = self.resolve_snapshot(snapshot_id)
        if snap is None:
            raise SnapshotNotFoundError(f"Cannot tag {self.name}: the table has no snapshot yet")
        tags = self.tag_manager()
        tag = tags.create(name, snap, None if time_retained is None else time_retained.total_seconds())
        try:
            # The tag is published; now make sure no expiration is removing the snapshot's files
            # (the expiry handshake in SnapshotManager). If one is, or we cannot tell, withdraw it.
            self.snapshot_manager.check_retained(snap.id, f"tag snapshot {snap.id} as {name!r}")
        except BaseException:
            with contextlib.suppress(Exception):
                tags.delete(name)
            raise
        self.fault_point("tag.after_create")
        return tag

    def delete_tag(self, name: str) -> None:
        """Remove a tag; files only it kept become orphans (see `remove_orphan_files`)."""
        args.text("name", name, optional=False, empty=True)  # check_tag_name judges it
        self.require(Op.TAG)
        self.tag_manager().delete(name)

    def tags(self) -> dict[str, Snapshot]:
        """Tag name → tagged snapshot."""
        return {n: t.snapshot for n, t in self.tag_manager().tags().items()}

    # -------------------------------------------------------------- maintenance
    def expire_snapshots(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than: datetime | timedelta | None = None,
        limit: int | None = None,
        dry_run: bool = False,
    ) -> ExpireResult:
        """Expire old snapshots per ``snapshot.num-retained.*``, ``snapshot.time-retained`` and
        ``snapshot.expire.limit`` (arguments override). Tags, live consumers and the latest snapshot
        are always kept.

        When ``changelog.num-retained.*`` / ``changelog.time-retained`` exceed the snapshot settings,
        expired snapshots leave long-lived changelogs that streams and `read_changes` still read;
        those expire here too, per the changelog settings."""
        args.integer("retain_min", retain_min, minimum=1)  # the latest snapshot is never expired
        args.integer("retain_max", retain_max, minimum=1)
        args.age_or_time("older_than", older_than)
        args.flag("dry_run", dry_run)
        args.integer("limit", limit, minimum=1)
        # Both given: they contradict each other (one given bounds the other option, as before).
        if retain_min is not None and retain_max is not None and retain_max < retain_min:
            raise InvalidArgumentError(f"Cannot expire {self.name}: retain_max ({retain_max}) must not be less "
                                       f"than retain_min ({retain_min})")
        self._require_exists()
        older_ms = None
        if isinstance(older_than, timedelta):
            older_ms = int(time.time() * 1000) - int(older_than.total_seconds() * 1000)
        elif isinstance(older_than, datetime):
            older_ms = _to_epoch_ms(older_than)
        return expire_snapshots(
            self, retain_min=retain_min, retain_max=retain_max, older_than_ms=older_ms, limit=limit, dry_run=dry_run
        )

    def expire_partitions(
        self,
        expiration_time: timedelta | None = None,
        *,
        strategy: str | None = None,
        timestamp_pattern: str | None = None,
        timestamp_formatter: str | None = None,
        max_expires: int | None = None,
        dry_run: bool = False,
    ) -> PartitionExpireResult:
        """Drop partitions older than ``expiration_time`` (default: option ``partition.expiration-time``)
        in one OVERWRITE snapshot, per ``partition.expiration-strategy`` (values-time, update-time),
        ``partition.timestamp-pattern`` / ``-formatter`` and ``partition.expiration-max-num``
        (arguments override); see `lake_assets.ops.partition_expire`."""
        return expire_partitions(
            self, expiration_time=expiration_time, strategy=strategy, timestamp_pattern=timestamp_pattern,
            timestamp_formatter=timestamp_formatter, max_expires=max_expires, dry_run=dry_run,
        )

    def compact(
        self,
        *,
        full: bool = False,
        partitions: Sequence[dict[str, Any]] | None = None,
        max_units: int | None = None,
        parallelism: int | None = None,
    ) -> CompactResult:
        """Compact in this process: Paimon's universal compaction (or everything with ``full=True``)
        per (partition, bucket), committed as one COMPACT snapshot with conflict checks.

        Up to ``parallelism`` units run at once (default: option ``compaction.parallelism``).
        For distributed runs use the pieces in `lake_assets.ops.compact` (plan → run a unit → commit).
        """
        args.flag("full", full)
        args.mappings("partitions", partitions)
        args.integer("max_units", max_units, minimum=1)
        args.integer("parallelism", parallelism, minimum=1)
        self._require_exists()
        return compact(self, full=full, partitions=partitions, max_units=max_units, parallelism=parallelism)

    def health(self, *, snapshot_id: int | None = None, small_file_threshold: int | None = None) -> pa.Table:
        """Per (partition, bucket) LSM health from manifests only (no data files are read)."""
        args.integer("snapshot_id", snapshot_id, minimum=0)
        args.integer("small_file_threshold", small_file_threshold, minimum=0)
        self._require_exists()
        return table_health(self, snapshot_id=snapshot_id, small_file_threshold=small_file_threshold)

    def read_changes(
        self,
        start: int | str,
        end: int | str | None = None,
        *,
        source: str = "auto",
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Incremental read: the changes of snapshots in ``(start, end]`` (ids or tag names), with a
        ``_row_kind`` column (+I, -U, +U, -D). ``source``: "delta", "changelog" or "auto"."""
        args.snapshot_or_tag("start", start, optional=False)
        args.snapshot_or_tag("end", end)
        args.one_of("source", source, ("auto", "delta", "changelog"))
        args.names("columns", columns)
        self.require(Op.STREAM)
        return read_changes(self, start, end, source=source, columns=list(columns) if columns else None)  # type: ignore[arg-type]

    def stream(
        self,
        *,
        mode: str = "latest-full",
        snapshot_id: int | None = None,
        timestamp: datetime | int | str | None = None,
        consumer_id: str | None = None,
        position: int | None = None,
    ) -> StreamEnumerator:
        """A streaming read's enumerator (read its splits with `change_reader`)."""
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
        self.require(Op.STREAM)
        ts = None if timestamp is None else _to_epoch_ms(timestamp)
        return StreamEnumerator(self, mode=mode, snapshot_id=snapshot_id, timestamp_ms=ts,  # type: ignore[arg-type]
                                consumer_id=consumer_id, position=position)

    def change_reader(self, columns: Sequence[str] | None = None) -> ChangeReader:
        """A reader of the change splits a `stream` plans, projecting ``columns``."""
        args.names("columns", columns)
        self.require(Op.STREAM)
        return ChangeReader(self, list(columns) if columns else None)

    def remove_orphan_files(
        self, *, older_than: timedelta = timedelta(days=1), dry_run: bool = True
    ) -> OrphanResult:
        """List (and with ``dry_run=False`` delete) files no snapshot or tag references, older than the bound."""
        args.duration("older_than", older_than, optional=False)
        args.flag("dry_run", dry_run)
        self._require_exists()
        return remove_orphan_files(self, older_than=older_than, dry_run=dry_run)

    def rollback_to(self, *, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
        """Make a snapshot (or a tag's snapshot) the latest again; newer snapshots are removed.

        Their files become unreferenced and are cleaned by `remove_orphan_files`.
        """
        args.integer("snapshot_id", snapshot_id, minimum=0)
        args.text("tag", tag, empty=True)
        if (snapshot_id is None) == (tag is None):
            raise InvalidArgumentError("rollback_to needs exactly one of snapshot_id or tag")
        self.require(Op.ROLLBACK)
        sm = self.snapshot_manager
        if tag is not None:
            target = self.tag_manager().get(tag).snapshot
            if not sm.exists(target.id):
                # the tagged snapshot was expired: bring its file back from the tag
                sm.file_io.try_create(self.paths.snapshot_file(target.id), target.to_json().encode())
        else:
            target = sm.snapshot(snapshot_id)  # type: ignore[arg-type]
        latest = sm.latest_id() or target.id
        # newest first, so a crash leaves a contiguous range ending at a valid snapshot
        for sid in range(latest, target.id, -1):
            self.file_io.delete(self.paths.snapshot_file(sid))
            self.fault_point("rollback.after_snapshot_delete")
        sm.write_latest_hint(target.id)
        earliest_hint = sm._read_hint("EARLIEST")
        if earliest_hint is not None and earliest_hint > target.id:
            sm.write_earliest_hint(target.id)
        return target

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
        self, commit_user: str, *, write_only: bool = False, ignore_previous_files: bool = False
    ) -> TableWriter:
        """A writer for the two-phase commit: `write_arrow`, then `prepare_commit` → messages.

        ``ignore_previous_files``: the writer's buckets start empty (for an overwrite, whose commit
        removes the files there): inline compaction and changelog see only the new data.
        """
        args.text("commit_user", commit_user, optional=False)
        args.flag("write_only", write_only)
        args.flag("ignore_previous_files", ignore_previous_files)
        return TableWriter(self, commit_user, write_only=write_only, ignore_previous_files=ignore_previous_files)

    def new_committer(self, commit_user: str) -> TableCommitter:
        """The committer of ``commit_user``: `commit(messages, commit_identifier)` is exactly-once."""
        args.text("commit_user", commit_user, optional=False)
        return TableCommitter(self, commit_user)

    def write_arrow(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader,
        *,
        overwrite: bool | dict[str, str] = False,
    ) -> int | None:
        """Write and commit in one call; returns the new snapshot id (None if nothing was written).

        ``overwrite=True`` replaces, as Paimon does, the partitions the data has rows in (nothing
        when it has none) under ``dynamic-partition-overwrite`` = true, the default, else the whole
        table (an unpartitioned table is always replaced whole); a dict such as
        ``{"dt": "2024-01-01"}`` replaces the partitions matching those values (and rejects rows
        outside them).
        """
        user = str(uuid.uuid4())
        ow = self._overwrite_spec(overwrite)
        # Like Paimon's overwrite writer: the replaced partitions' files are not compacted with
        # the new data (the commit deletes them) nor looked up for changelog.
        writer = self.new_writer(user, ignore_previous_files=ow is not None)
        committer = self.new_committer(user)
        messages: list[CommitMessage] = []
        try:
            writer.write_arrow(data)
            messages = writer.prepare_commit()
            if isinstance(overwrite, dict) and overwrite:
                self._check_inside_partition(messages, ow)
            elif ow is not None:
                ow = overwrite_of_whole_table(self, messages)
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

    def _overwrite_spec(self, overwrite: bool | dict[str, str]) -> Overwrite | None:
        if overwrite is False or overwrite is None:
            return None
        if overwrite is True or overwrite == {}:
            return Overwrite(None)
        if not isinstance(overwrite, dict):
            raise SchemaError(f"overwrite must be a bool or a dict of partition values, got {overwrite!r}")
        keys = list(self.schema.partition_keys)
        wanted: dict[int, Any] = {}
        for k, v in overwrite.items():
            if k not in keys:
                raise SchemaError(f"Cannot overwrite {self.name}: {k!r} is not a partition key (keys: {keys})")
            t = to_arrow(self.schema.field(k).type)
            try:
                wanted[keys.index(k)] = None if v is None else pa.scalar(v).cast(t).as_py()
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(f"Cannot overwrite {self.name}: {k}={v!r} is not a {t}: {exc}") from exc

        def matcher(values: tuple) -> bool:
            # float partitions match as Paimon's partition predicate does (Double.compare):
            # NaN matches NaN, and -0.0 is another partition than 0.0
            return all(values_equal(values[i], v) for i, v in wanted.items())

        return Overwrite(matcher)

    def _check_inside_partition(self, messages: list[CommitMessage], ow: Overwrite | None) -> None:
        if ow is None:
            return
        types = self.schema.types(list(self.schema.partition_keys))
        for m in messages:
            values = tuple(deserialize_row(m.partition, types))
            if not ow.matches(values):
                raise SchemaError(
                    f"Cannot overwrite {self.name}: input has rows in partition "
                    f"{dict(zip(self.schema.partition_keys, values, strict=True))} outside the overwritten one"
                )

    # ------------------------------------------------------------------- read
    def resolve_snapshot(
        self,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: datetime | int | str | None = None,
    ) -> Snapshot | None:
        """The snapshot a read sees: by id, by tag, as of a time (epoch ms, datetime or ISO text), or latest."""
        args.integer("snapshot_id", snapshot_id)
        args.text("tag", tag, empty=True)
        given = [x is not None for x in (snapshot_id, tag, timestamp)]
        if sum(given) > 1:
            raise InvalidArgumentError("Pass at most one of snapshot_id, tag and timestamp")
        if tag is not None:
            return self.tag_manager().get(tag).snapshot
        if timestamp is not None:
            ms = _to_epoch_ms(timestamp)
            snap = self.snapshot_manager.newer_than_or_equal_time(ms)
            if snap is None:
                raise SnapshotNotFoundError(f"Table {self.name} has no snapshot committed at or before {timestamp}")
            return snap
        if snapshot_id is None:
            latest = self.snapshot_manager.latest()
            if latest is None:
                self._require_exists()  # a dropped table is no empty table
            return latest
        return self.snapshot_manager.snapshot(snapshot_id)

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
        the files planned are checked for it (`lake_assets.table_support`)."""
        self.require(op)
        snap = snapshot if snapshot is not None else self.resolve_snapshot(snapshot_id)
        if snap is None:
            return []
        pred = Predicate.of(filter)
        if pred is not None:
            pred.check(self.schema.arrow_schema, self.name)
        return self._plan(snap, pred, op)

    def _plan(self, snap: Snapshot, pred: Predicate | None, op: Op = Op.READ) -> list[Split]:
        scan = self.file_store_scan(op)
        schema = self.schema
        pkeys = list(schema.partition_keys)
        partition_filter = None
        partition_range = None
        buckets: set[int] | None = None
        if pred is not None and pred.clauses:
            if pkeys and set(pkeys) & pred.columns:
                def partition_filter(values: tuple) -> bool:
                    return pred.test_values(dict(zip(pkeys, values, strict=True)))

                def partition_range(lo: Sequence, hi: Sequence) -> bool:
                    return pred.test_ranges(dict(zip(pkeys, lo, strict=True)), dict(zip(pkeys, hi, strict=True)))
            bucket_keys = list(schema.bucket_keys)
            nb = schema.core_options.bucket
            if schema.primary_keys and nb > 0 and bucket_keys:
                combos = pred.equality_values(bucket_keys)
                if combos:
                    buckets = self._buckets_of(combos, bucket_keys, nb)
        entries = scan.live_entries(
            snap, partition_filter=partition_filter, partition_range=partition_range, buckets=buckets
        )
        if pred is not None and pred.clauses:
            entries = [e for e in entries if self._file_may_match(e.file, pred)]
        return scan.splits(entries)

    def _buckets_of(self, combos: list[dict[str, Any]], keys: list[str], nb: int) -> set[int] | None:
        if any(isinstance(v, float) and v != v for c in combos for v in c.values()):
            # NaN equals every NaN (Double.compare) but NaNs differ in bits, so in bucket hash:
            # a NaN literal cannot name one bucket.
            return None
        try:
            cols = [pa.array([c[k] for c in combos], to_arrow(self.schema.field(k).type)) for k in keys]
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return None
        return {int(b) for b in assign_buckets(cols, self.schema.types(keys), nb)}

    def _file_may_match(self, meta: DataFileMeta, pred: Predicate) -> bool:
        """Prune by file stats: key stats for PK tables (values may be superseded), value stats otherwise."""
        file_schema = self.schema_by_id(meta.schema_id)
        if self.schema.primary_keys:
            names = list(file_schema.trimmed_primary_keys)
            stats = meta.key_stats
        else:
            names = list(meta.value_stats_cols) if meta.value_stats_cols is not None else list(
                file_schema.field_names
            )
            stats = meta.value_stats
        if not names or not (set(names) & pred.columns | self._renamed(file_schema, names, pred)):
            return True
        types = file_schema.types(names)
        try:
            lo = deserialize_row(stats.min_values, types)
            hi = deserialize_row(stats.max_values, types)
        except CorruptMetadataError:
            return True
        # Stats are by the file's column names; map them to the current names by field id.
        cur = {}
        for n, a, b in zip(names, lo, hi, strict=True):
            f = self.schema.field_by_id(file_schema.field(n).id)
            # Binary bounds are never trusted: Java writes none, and older lake_assets files carry
            # some whose order another reader may not share (signed vs unsigned bytes).
            if f is not None and not isinstance(f.type, (BinaryType, VarBinaryType)):
                cur[f.name] = (a, b)
        return pred.test_ranges({k: v[0] for k, v in cur.items()}, {k: v[1] for k, v in cur.items()})

    def _renamed(self, file_schema: TableSchema, names: list[str], pred: Predicate) -> set[str]:
        out = set()
        for n in names:
            f = self.schema.field_by_id(file_schema.field(n).id)
            if f is not None and f.name in pred.columns:
                out.add(f.name)
        return out

    def to_batches(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: datetime | int | str | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
    ) -> Iterator[pa.RecordBatch]:
        """Stream the table's rows as record batches; memory is bounded by one merge section.

        Arguments are checked at the call, not at the first batch."""
        args.names("columns", columns)
        return self._batches(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp, columns=columns, filter=filter)

    def _batches(self, *, snapshot_id: int | None, tag: str | None, timestamp: datetime | int | str | None,
                 columns: Sequence[str] | None, filter: Any) -> Iterator[pa.RecordBatch]:
        for t in self._tables(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp, columns=columns, filter=filter):
            yield from t.to_batches()

    def _tables(
        self,
        *,
        snapshot_id: int | None,
        columns: Sequence[str] | None,
        filter: Any,
        tag: str | None = None,
        timestamp: datetime | int | str | None = None,
    ) -> Iterator[pa.Table]:
        self.require(Op.READ)
        snap = self.resolve_snapshot(snapshot_id, tag=tag, timestamp=timestamp)
        schema = self._read_schema(snap, travel=(snapshot_id, tag, timestamp) != (None, None, None))
        if columns is not None:
            unknown = [c for c in columns if not schema.has_field(c)]
            if unknown:
                raise SchemaError(f"Table {self.name} has no columns {unknown}")
        if snap is None:
            return
        pred = Predicate.of(filter)
        if pred is not None:
            pred.check(schema.arrow_schema, self.name)
        reader = SplitReader(self, schema, columns, pred)
        reader.snapshot_id = snap.id  # a file removed by expiry meanwhile: a race, not corruption
        splits = self._plan(snap, pred)
        if len(splits) <= 1:
            for split in splits:
                yield from reader.read_split(split)
            return
        # Splits are independent and pyarrow releases the GIL: read a few ahead in threads,
        # yielding in plan order; memory stays bounded by the number in flight. Twice as many
        # splits as workers are queued, so a worker that finishes early picks up the next split
        # instead of idling until the oldest one (the one yielded next) is done.
        workers = min(len(splits), max(2, os.cpu_count() or 2))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            pending = deque()
            it = iter(splits)
            for split in itertools.islice(it, 2 * workers):
                pending.append(pool.submit(lambda sp: list(reader.read_split(sp)), split))
            while pending:
                tables = pending.popleft().result()
                nxt = next(it, None)
                if nxt is not None:
                    pending.append(pool.submit(lambda sp: list(reader.read_split(sp)), nxt))
                yield from tables

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
        snap = self.resolve_snapshot(snapshot_id, tag=tag, timestamp=timestamp)
        table_schema = self._read_schema(snap, travel=(snapshot_id, tag, timestamp) != (None, None, None))
        schema = table_schema.arrow_schema
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns if table_schema.has_field(c)])
        tables = list(
            self._tables(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp, columns=columns, filter=filter)
        )
        if not tables:
            return schema.empty_table()
        return pa.concat_tables(tables)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, schema_id={self.schema.id})"



def _to_epoch_ms(value: datetime | int | str) -> int:
    if isinstance(value, bool):
        raise InvalidArgumentError("timestamp must be epoch milliseconds, a datetime or ISO-8601 text")
    if isinstance(value, int):
        return args.integer("timestamp", value)  # type: ignore[return-value]
    if isinstance(value, str):
        try:
            value = pendulum.parse(value)  # type: ignore[assignment]
        except (ValueError, OverflowError) as exc:  # pendulum's ParserError is a ValueError
            raise InvalidArgumentError(f"timestamp {value!r} is not ISO-8601 text: {exc}") from None
    if isinstance(value, datetime):
        try:
            if value.tzinfo is None:
                value = value.astimezone()  # naive = the machine's local time, as users mean it
            return int(value.timestamp() * 1000)
        except (ValueError, OverflowError, OSError) as exc:  # year 1 or 9999 near the platform's limits
            raise InvalidArgumentError(f"timestamp {value!r} is out of range: {exc}") from None
    raise InvalidArgumentError(f"timestamp must be epoch milliseconds, a datetime or ISO-8601 text, got {value!r}")
