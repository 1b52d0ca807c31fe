"""`StoreView`: a `Table`'s read-only (and test-settable) view of its `FileStore`'s plumbing.

These properties predate the `FileStore` seam; callers and tests still reach the table's name,
storage, paths, snapshots, schema and keys through the table, so `Table` keeps them by inheriting
this view while its own module holds the user-facing verbs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

    from lake_assets.io.file_io import FileIO
    from lake_assets.paths import TablePaths
    from lake_assets.spec.schema import TableSchema
    from lake_assets.store.file_store import FaultHook, FileStore
    from lake_assets.store.snapshot_manager import SnapshotManager


class StoreView:
    """The `FileStore` plumbing a `Table` exposes: each property reads (or sets) the store's."""

    store: FileStore

    @property
    def name(self) -> str:
        """``db.table``."""
        return self.store.name

    @property
    def file_io(self) -> FileIO:
        """The table's storage (tests wrap it to inject faults: the setter swaps the store's)."""
        return self.store.file_io

    @file_io.setter
    def file_io(self, file_io: FileIO) -> None:
        self.store.file_io = file_io

    @property
    def paths(self) -> TablePaths:
        """Where the table's files live (`TablePaths`)."""
        return self.store.paths

    @property
    def snapshot_manager(self) -> SnapshotManager:
        """The table's snapshots (`SnapshotManager`)."""
        return self.store.snapshot_manager

    @property
    def schema(self) -> TableSchema:
        """The current schema (`refresh` reloads it; reads and writers move it on to a newer one a
        snapshot was committed under, `FileStore.schema_at`)."""
        return self.store.schema

    @schema.setter
    def schema(self, schema: TableSchema) -> None:
        """Pin the handle to ``schema`` (`FileStore.pin_schema`), as Spark does with the schema it
        declared to a query."""
        self.store.pin_schema(schema)

    @property
    def fault_hook(self) -> FaultHook | None:
        """Test hook told each named step of a commit (see `FileStore.fault_hook`)."""
        return self.store.fault_hook

    @fault_hook.setter
    def fault_hook(self, hook: FaultHook | None) -> None:
        self.store.fault_hook = hook

    @property
    def primary_keys(self) -> tuple[str, ...]:
        """The primary key columns (empty for an append table)."""
        return self.schema.primary_keys

    @property
    def partition_keys(self) -> tuple[str, ...]:
        """The partition columns, outermost first."""
        return self.schema.partition_keys

    @property
    def options(self) -> dict[str, str]:
        """A copy of the schema's table options."""
        return dict(self.schema.options)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The current schema as Arrow (what reads return)."""
        return self.schema.arrow_schema
