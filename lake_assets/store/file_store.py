"""`FileStore`: what the operations in `lake_assets.ops` work on (Paimon's name for it).

A `FileStore` holds a table's identity and storage - its name, file IO, paths, schemas and
options - and hands out the metadata stores (snapshots, manifests, changelogs, tags, consumers),
the scan, the merge function and file paths. It has no user-facing verbs: `lake_assets.table.Table`
holds one and turns its verbs into operations on it. Like `Table`, it holds no state a concurrent
writer could invalidate except the current schema, which `refresh` reloads and `schema_at` moves on
to a newer one a snapshot was committed under.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from lake_assets.errors import CorruptMetadataError, NoSuchTableError, UnsupportedFeatureError
from lake_assets.formats.data_file import DataFileWriterConfig
from lake_assets.formats.file_names import name_compression
from lake_assets.formats.manifest_codec import decode_index_manifest
from lake_assets.io.file_io import FileIO
from lake_assets.lsm.merge_engine.function import MergeFunction
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.ops import deletion_vectors
from lake_assets.ops.row_tracking import row_tracking_enabled
from lake_assets.ops.scan import FileStoreScan
from lake_assets.parallelism import validate_cpus_setting
from lake_assets.paths import TablePaths, check_data_directory, check_file_name
from lake_assets.refusal import DATA
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.manifest import DataFileMeta, IndexManifestEntry, ManifestEntry
from lake_assets.spec.partition import partition_path
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.branch_table import main_name, refuse_branch_write, refuse_on_branch
from lake_assets.store.branches import Branch, BranchHolder, based_on, branches, main_holders
from lake_assets.store.branches import holders as branch_holders
from lake_assets.store.changelog_manager import ChangelogManager
from lake_assets.store.consumers import ConsumerManager
from lake_assets.store.manifest_io import ManifestIO
from lake_assets.store.snapshot_manager import SnapshotManager
from lake_assets.store.tags import TagManager
from lake_assets.table_support import (
    Op,
    Refusal,
    alter_refusals,
    entry_refusals,
    index_refusals,
    refuse,
    schema_refusals,
    validate_open,
)

_SCHEMA_NAME = re.compile(r"schema-([0-9]+)")  # fullmatch: `$` would accept a final newline

# Test hook: a callable that is told each named step of a commit (the crash-injection harness
# kills the process there). None in production.
FaultHook = Callable[[str], None]


class FileStore:
    """One table's storage and metadata stores, as the operations see them.

    Public members: ``name`` (``db.table``), ``file_io``, ``paths``, ``schema`` (the current
    schema; `refresh` reloads it), ``snapshot_manager``, ``fault_hook`` and ``for_alter`` (opened
    for an ALTER of options only, `Catalog.alter_table_options`: options unchecked, every other
    operation refused); the methods below.
    """

    def __init__(self, name: str, file_io: FileIO, root: str, schema: TableSchema | None = None, *,
                 branch: str | None = None, for_alter: bool = False) -> None:
        self.name = name
        self.file_io = file_io
        file_io.confine_to_table(root)  # no write of this table goes through a link out of it
        # its data directory follows the schema (the `schema` setter); a branch's metadata its own directory
        self.paths = TablePaths(root, branch=branch)
        self.snapshot_manager = SnapshotManager(file_io, self.paths, name)
        self.fault_hook: FaultHook | None = None
        self._schemas: dict[int, TableSchema] = {}
        self._partition_paths: dict[bytes, str] = {}
        self._support: tuple[TableSchema, list[Refusal]] | None = None
        self._index_entries: dict[str, list[IndexManifestEntry]] = {}
        # set by `pin_schema`: the handle keeps that schema (`schema_at` does not move it)
        self._schema_pinned = False
        self.for_alter = for_alter
        self.schema = schema if schema is not None else self.load_latest_schema()
        self._schemas[self.schema.id] = self.schema
        # Malformed options fail now; unsupported features are refused per operation (`require`).
        self._validate_open(self.schema)

    def _validate_open(self, schema: TableSchema) -> None:
        if not self.for_alter:  # the ALTER checks the schema it would write instead
            validate_open(schema, self.name)

    # ----------------------------------------------------------------- schema
    def _schema_ids(self) -> list[int]:
        return [int(m.group(1)) for n in self.file_io.list_names(self.paths.schema_dir)
                if (m := _SCHEMA_NAME.fullmatch(n))]

    def load_latest_schema(self) -> TableSchema:
        """The newest schema on storage (`NoSuchTableError` when there is none)."""
        ids = self._schema_ids()
        if not ids:
            raise NoSuchTableError(f"Table {self.name} does not exist (no schema files under {self.paths.root})")
        return self.schema_by_id(max(ids))

    @property
    def schema(self) -> TableSchema:
        """The schema operations of this handle work with (see the class docstring)."""
        return self._schema

    @schema.setter
    def schema(self, schema: TableSchema) -> None:
        self._schema = schema
        # data-file.path-directory (immutable, as in Paimon): where partition and bucket directories live
        directory = schema.options.get("data-file.path-directory")
        if directory != self.paths.data_directory:
            self.paths = TablePaths(self.paths.root, None if directory is None else check_data_directory(
                directory, f"option data-file.path-directory of {self.name}"), self.paths.branch)

    def refresh(self) -> None:
        """Reload the latest schema (after schema changes by another process)."""
        schema = self.load_latest_schema()
        self._validate_open(schema)
        self.schema = schema
        self._schema_pinned = False

    def pin_schema(self, schema: TableSchema) -> None:
        """Read and write with ``schema`` from now on, whatever schema later snapshots carry (Spark
        pins the schema it declared to a query: files of newer schemas are read by field id into
        it); `refresh` unpins."""
        self.schema = schema
        self._schemas.setdefault(schema.id, schema)
        self._schema_pinned = True

    def schema_at(self, snap: Snapshot | None) -> TableSchema:
        """The schema an operation on the latest state, as of ``snap``, works with: the handle's
        schema, or ``snap``'s when that is newer.

        A snapshot records the latest schema when it was committed (as Java's committer does), so a
        snapshot newer than this handle's schema means another handle or process evolved the schema
        and wrote under it. Reading such files with the older schema would drop, misname or narrow
        their columns, and a writer or compaction would write that loss back: the store moves to the
        snapshot's schema (never back), so plans, predicates, merges and writers of this handle agree.
        A schema pinned by `pin_schema` stays."""
        if snap is None or snap.schema_id <= self.schema.id or self._schema_pinned:
            return self.schema
        schema = self.schema_by_id(snap.schema_id)
        self._validate_open(schema)
        if schema.id > self.schema.id:  # a racing thread may have moved it already
            self.schema = schema
        return self.schema

    def travel_schema(self, snap: Snapshot | None) -> TableSchema:
        """The schema a time-travel read of ``snap`` (by id, tag, timestamp) works with: the
        snapshot's fields - names, ids, types, keys - with the table's current options, as Paimon's
        ``AbstractFileStoreTable.tryTimeTravel`` (0.9 and 1.x: ``schema(snapshot.schemaId()).copy(
        current options)``). Options describe how the table is read now (merge engine settings,
        ``ignore-delete``, sequence fields, ...), not history: an old snapshot read with its own
        options would merge the same files differently from Java. A snapshot committed under a
        schema newer than this handle's is read with that schema whole (its options are the newer
        ones); the handle does not move (`schema_at` does, for reads of the latest state)."""
        current = self.schema
        if snap is None or snap.schema_id == current.id:
            return current
        old = self.schema_by_id(snap.schema_id)
        if old.id > current.id:
            return old
        return old.with_options(current.options)

    def schema_by_id(self, schema_id: int) -> TableSchema:
        """The schema of this id (cached: schema files never change)."""
        s = self._schemas.get(schema_id)
        if s is None:
            try:
                data = self.file_io.read_bytes(self.paths.schema_file(schema_id))
            except FileNotFoundError:
                raise CorruptMetadataError(f"Table {self.name}: schema-{schema_id} is missing") from None
            s = TableSchema.from_json(data, f"schema-{schema_id} of {self.name}")
            self._schemas[schema_id] = s
        return s

    def latest_schema_id(self) -> int:
        """The newest schema id on storage (a snapshot records it, as Java does at commit time)."""
        ids = self._schema_ids()
        return max(ids) if ids else self.schema.id

    def require_exists(self, schema_names: list[str] | None = None) -> None:
        """Raise `NoSuchTableError` when the table was dropped under this handle (its schema files
        are gone): reads and maintenance would otherwise see an empty table. ``schema_names``:
        ``schema/`` as the caller just listed it (else listed here)."""
        if not (self.file_io.list_names(self.paths.schema_dir) if schema_names is None else schema_names):
            raise NoSuchTableError(f"Table {self.name} does not exist (dropped?): no schema files under "
                                   f"{self.paths.root}")

    @property
    def primary_keys(self) -> tuple[str, ...]:
        """The current schema's primary keys (empty for an append table)."""
        return self.schema.primary_keys

    @property
    def partition_keys(self) -> tuple[str, ...]:
        """The current schema's partition keys."""
        return self.schema.partition_keys

    # ------------------------------------------------------------ support
    def refusals(self) -> list[Refusal]:
        """What the current schema refuses, per operation (see `lake_assets.table_support`)."""
        if self.for_alter:  # its options may not parse: only what refuses ALTER, each option on its own
            return alter_refusals(self.schema)
        if self._support is None or self._support[0] is not self.schema:
            self._support = (self.schema, schema_refusals(self.schema))
        return self._support[1]

    def require(self, op: Op) -> None:
        """Raise `UnsupportedFeatureError` naming the property if the table refuses ``op`` (its
        schema). Operations on data files also check ``LAKE_ASSETS_CPUS`` before they start."""
        if self.for_alter and op is not Op.SCHEMA_CHANGE:
            raise UnsupportedFeatureError(f"Cannot {op.value} {self.name}: it was opened for an ALTER of its "
                                          "options only; open it with Catalog.get_table")
        if op in DATA:
            validate_cpus_setting()  # not when a pool is first sized, mid-way through the work
        if self.paths.branch is not None:
            refuse_on_branch(self.name, op)
            refuse_branch_write(self.name, op, self.schema.options)
        refuse(self.name, op, self.refusals())

    def check_scanned(self, op: Op, snap: Snapshot, entries: Sequence[ManifestEntry]) -> None:
        """What a scan for ``op`` found (files, index files) must not refuse ``op``."""
        options = self.schema.options
        found = entry_refusals(entries, row_tracking=row_tracking_enabled(options))
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

    def remember_index_entries(self, index_manifest: str, entries: list[IndexManifestEntry]) -> None:
        """Cache the entries of an index manifest this process has just written: the next writer's
        restore and commit read them back (`index_entries`; manifests never change)."""
        self._index_entries[index_manifest] = list(entries)

    # ------------------------------------------------------- metadata stores
    def manifest_io(self) -> ManifestIO:
        """Reads and writes manifests and manifest lists with the table's manifest options."""
        opts = self.schema.core_options
        return ManifestIO(
            self.file_io,
            self.paths,
            self.schema.types(list(self.schema.partition_keys)),
            compression=lambda: opts.manifest_compression,  # parsed on the first manifest written
            target_file_size=opts.manifest_target_file_size,
            table_name=self.name,
        )

    def file_store_scan(self, op: Op | None = None, *, real_buckets_only: bool | None = None) -> FileStoreScan:
        """A manifest scan; for an ``op``, the schema is checked now and what it scans before use.

        ``real_buckets_only``: whether the scan skips ``bucket-postpone`` files (default: for
        `Op.READ` of a postpone-bucket table, as Paimon's batch scans; change reads decide for
        themselves, `lake_assets.ops.stream`)."""
        types = self.schema.types(list(self.schema.partition_keys))
        if op is None:
            return FileStoreScan(self.manifest_io(), types, self.name)
        self.require(op)
        if real_buckets_only is None:
            postpone = bool(self.schema.primary_keys) and self.schema.core_options.bucket == -2
            real_buckets_only = postpone and op is Op.READ
        return FileStoreScan(
            self.manifest_io(), types, self.name,
            guard=lambda snap, entries: self.check_scanned(op, snap, entries),
            real_buckets_only=real_buckets_only,
        )

    def tag_manager(self) -> TagManager:
        """The table's tags (``tag/tag-<name>``)."""
        return TagManager(self.file_io, self.paths, self.name)

    def consumer_manager(self) -> ConsumerManager:
        """The streaming consumers' positions (``consumer/consumer-<id>``)."""
        return ConsumerManager(self.file_io, self.paths)

    def branches(self) -> list[Branch]:
        """The table's branches (``branch/branch-<name>``; `lake_assets.store.branches`)."""
        return branches(self.file_io, self.paths.root, self.name)

    def branch_holders(self) -> list[BranchHolder]:
        """Every snapshot, tag and long-lived changelog of every branch: they name files in the
        table's directories, which maintenance of the main branch keeps."""
        return branch_holders(self.file_io, self.paths.root, self.name)

    def outside_holders(self) -> list[BranchHolder]:
        """What keeps files of the table besides this branch's own history: every other branch's
        snapshots, tags and long-lived changelogs and, on a branch, the main branch's."""
        branch = self.paths.branch
        out = [h for h in self.branch_holders() if h.branch != branch]
        if branch is not None:
            out += main_holders(self.file_io, self.paths.root, main_name(self.name))
        return out

    def branches_based_on(self, snap: Snapshot) -> list[str]:
        """The other branches created from a tag of ``snap`` (`lake_assets.store.branches.based_on`;
        on a branch, itself left out: it holds copies of its own tags' snapshots)."""
        return [b for b in based_on(self.file_io, self.paths.root, self.name, snap) if b != self.paths.branch]

    def main_store(self) -> FileStore:
        """The main branch of this branch's table (itself on the main branch)."""
        if self.paths.branch is None:
            return self
        return FileStore(main_name(self.name), self.file_io, self.paths.root)

    def changelog_manager(self) -> ChangelogManager:
        """Long-lived changelogs (``changelog/changelog-<id>``) of expired snapshots."""
        return ChangelogManager(self.file_io, self.paths, self.name)

    # ------------------------------------------------------------- merging
    def merge_function(self, schema: TableSchema | None = None) -> MergeFunction:
        """The merge function of ``schema``'s merge engine (default: the current schema)."""
        schema = schema or self.schema
        what = f"Table {self.name}"
        engine = engine_of(schema.core_options, what)
        fields = [(f.name, to_arrow(f.type)) for f in schema.fields]
        not_null = frozenset(f.name for f in schema.fields if not f.type.nullable)
        return engine.create(fields, list(schema.trimmed_primary_keys), schema.core_options, not_null, what)

    def merge_extra_columns(self, schema: TableSchema) -> list[str]:
        """Columns a merge needs beyond keys and sequence fields: engines that combine the columns
        of several records (partial-update, aggregation) need every column, e.g. sequence groups."""
        if engine_of(schema.core_options, f"Table {self.name}").needs_all_columns:
            return list(schema.field_names)
        return []

    def visible_files(self, files: Sequence[DataFileMeta], schema: TableSchema) -> list[DataFileMeta]:
        """The files a batch read of a bucket reads."""
        # Paimon's batch scan skips level 0 of first-row tables: their level-0 files are only
        # visible after compaction (readers elsewhere would disagree otherwise).
        # Deletion-vector tables likewise, unless deletion-vectors.merge-on-read.
        if (not engine_of(schema.core_options, f"Table {self.name}").level0_in_batch_reads
                or deletion_vectors.hides_level0(schema)):
            return [f for f in files if f.level > 0]
        return list(files)

    # --------------------------------------------------------------- files
    def data_file_config(self, *, changelog: bool = False) -> DataFileWriterConfig:
        """How data files (or with ``changelog``, changelog files) are written, from the options:
        the one place the writer, compaction and changelog production take it from."""
        opts = self.schema.core_options
        return DataFileWriterConfig(
            compression=opts.file_compression,
            zstd_level=opts.zstd_level,
            target_file_size=opts.target_file_size,
            page_size=opts.page_size,
            prefix=opts.changelog_file_prefix if changelog else opts.data_file_prefix,
            name_compression=name_compression(opts),
            changelog=changelog,
        )

    def partition_path_of(self, partition: bytes) -> str:
        """The directory (``k=v/...``) of a serialized partition, relative to the table."""
        p = self._partition_paths.get(partition)
        if p is None:
            types = self.schema.types(list(self.schema.partition_keys))
            values = deserialize_row(partition, types)
            opts = self.schema.core_options
            p = partition_path(self.schema.partition_keys, values, types, opts.partition_default_name,
                               legacy_name=opts.partition_legacy_name)
            self._partition_paths[partition] = p
        return p

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """The directory of one (partition, bucket)."""
        return self.paths.bucket_dir(self.partition_path_of(partition), bucket)

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

    def written_file_paths(self, partition: bytes, bucket: int, meta: DataFileMeta) -> list[str]:
        """A data or changelog file and its extra files (a ``.index`` file index): what removing a
        file a writer created must remove (all inside the table, as `data_file_path`)."""
        path = self.data_file_path(partition, bucket, meta)
        folder = path.rsplit("/", 1)[0]
        return [path, *(f"{folder}/{check_file_name(x, f'extra file of {meta.file_name}')}" for x in meta.extra_files)]

    def fault_point(self, step: str) -> None:
        """Tell the test hook (if any) that a named step of an operation is reached."""
        if self.fault_hook is not None:
            self.fault_hook(step)

    def __repr__(self) -> str:
        return f"FileStore({self.name!r}, schema_id={self.schema.id})"
