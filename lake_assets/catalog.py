"""A filesystem catalog: databases are ``<name>.db`` directories, tables directories with schemas."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lake_assets import arguments as args
from lake_assets.catalog_names import check_name, parse_identifier
from lake_assets.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NoSuchDatabaseError,
    NoSuchTableError,
    OptionError,
    SchemaError,
    UnsupportedFeatureError,
)
from lake_assets.io.file_io import FileIO
from lake_assets.option_rules_row_tracking import row_tracking_shape_problem
from lake_assets.options import CoreOptions
from lake_assets.paths import TablePaths
from lake_assets.refusal import Op
from lake_assets.schema_rules import check_column_names, check_fields, check_keys
from lake_assets.spec.arrow_types import fields_from_arrow_schema
from lake_assets.spec.schema import TableSchema
from lake_assets.store.branch_table import split_branch
from lake_assets.table import Table
from lake_assets.table_rules import check_options


class Catalog:
    """Databases and tables under one warehouse URL (local path, ``file://``, ``memory://``, ``s3://``)."""

    def __init__(self, warehouse: str, **storage_options: Any) -> None:
        args.text("warehouse", warehouse, optional=False)
        self.warehouse_url = warehouse
        try:
            self.file_io, self.root = FileIO.for_url(warehouse, **storage_options)
        except (ValueError, ImportError, TypeError) as exc:
            # an unknown scheme, a missing s3fs, storage options the backend does not take
            raise InvalidArgumentError(f"Cannot open warehouse {warehouse!r}: {exc}") from exc

    # -------------------------------------------------------------- databases
    def _db_path(self, database: str) -> str:
        return f"{self.root}/{check_name(database)}.db"

    def create_database(self, name: str, ignore_if_exists: bool = True) -> None:
        """Create the database ``name`` (its ``<name>.db`` directory)."""
        args.flag("ignore_if_exists", ignore_if_exists)
        path = self._db_path(name)
        if self.file_io.exists(path):
            if ignore_if_exists:
                return
            raise AlreadyExistsError(f"Database {name} already exists")
        self.file_io.mkdirs(path)
        if not self.file_io.keeps_empty_directories:
            # Object stores have no directories: a marker keeps an empty database listable.
            self.file_io.write_bytes(f"{path}/.database", b"")

    def list_databases(self) -> list[str]:
        return sorted(
            s.path.rstrip("/").rsplit("/", 1)[-1][: -len(".db")]
            for s in self.file_io.list_status(self.root)
            if s.is_dir and s.path.rstrip("/").endswith(".db")
        )

    def database_exists(self, name: str) -> bool:
        return self.file_io.exists(self._db_path(name))

    def drop_database(self, name: str, *, cascade: bool = False) -> None:
        """Delete a database; one with tables only with ``cascade=True``."""
        args.flag("cascade", cascade)
        if not self.database_exists(name):
            raise NoSuchDatabaseError(f"Database {name} does not exist")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise SchemaError(f"Database {name} is not empty ({len(tables)} tables); pass cascade=True")
        self.file_io.delete_tree(self._db_path(name))

    # ----------------------------------------------------------------- tables
    def table_path(self, identifier: str) -> str:
        db, name = parse_identifier(identifier)
        return f"{self._db_path(db)}/{name}"

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise NoSuchDatabaseError(f"Database {database} does not exist")
        out = []
        for s in self.file_io.list_status(self._db_path(database)):
            if s.is_dir and self.file_io.list_names(f"{s.path.rstrip('/')}/schema"):
                out.append(s.path.rstrip("/").rsplit("/", 1)[-1])
        return sorted(out)

    def table_exists(self, identifier: str) -> bool:
        return bool(self.file_io.list_names(f"{self.table_path(identifier)}/schema"))

    def get_table(self, identifier: str) -> Table:
        """The table ``db.name``. Paimon's identifier of a branch, ``db.name$branch_<branch>``, opens
        that branch (its own snapshots, schemas, tags and consumers under ``branch/branch-<branch>``,
        the table's data and manifests): reads, streams, change reads, time travel, its tags and
        expiry, and writes and compaction of a fixed-bucket table; what else writes or deletes is
        refused naming the branch (`lake_assets.store.branch_table`). A branch
        that does not exist raises `NoSuchTableError`."""
        name, root, branch = self._locate(identifier)
        return Table(name, self.file_io, root, branch=branch)

    def _locate(self, identifier: str) -> tuple[str, str, str | None]:
        """The full name, directory and branch (None: main) `get_table` opens for ``identifier``."""
        db, name = parse_identifier(identifier)
        path = self.table_path(identifier)
        if self.file_io.list_names(f"{path}/schema"):
            return f"{db}.{name}", path, None  # a table literally named so
        base, branch = split_branch(name)
        root = f"{self._db_path(db)}/{base}"
        if branch is None:  # a plain name, or `t$branch_main`
            return f"{db}.{base}", root, None
        if not self.file_io.list_names(f"{root}/schema"):
            raise NoSuchTableError(f"Table {db}.{base} does not exist (asked for its branch {branch!r})")
        if not self.file_io.list_names(f"{root}/branch/branch-{branch}/schema"):
            raise NoSuchTableError(f"Branch {branch!r} of {db}.{base} does not exist (no schema files under "
                                   f"{root}/branch/branch-{branch}/schema)")
        return f"{db}.{name}", root, branch

    def alter_table_options(self, identifier: str, *, set: Mapping[str, str] | None = None,
                            reset: Sequence[str] = ()) -> Table:
        """Set the options ``set`` and remove those named in ``reset`` in one new schema (Paimon's
        ``ALTER TABLE ... SET / RESET``) and return the table opened after the change.

        It also opens a table that `get_table` refuses for its options' values (a value out of range,
        contradictory options such as ``snapshot.num-retained.max`` below ``.min``, an option naming
        a column the table lacks), so that lake_assets can repair what another engine wrote: the
        change is checked as every schema change is, and the new schema must pass every check of
        the table's options, else `OptionError` (or `SchemaError`, `UnsupportedFeatureError`) names
        what is still wrong and nothing is written. Immutable options stay so, and a table refused
        for what it stores (its files, manifests, branch) stays refused:
        ``catalog.alter_table_options("db.t", reset=["snapshot.num-retained.max"])``.
        """
        from lake_assets.ops.schema_change import SchemaUpdate
        from lake_assets.store.file_store import FileStore

        args.mapping("set", set)
        if isinstance(reset, (str, bytes)) or not isinstance(reset, Sequence) or not all(
                isinstance(k, str) and k for k in reset):
            raise InvalidArgumentError(f"reset must be a list of option keys (e.g. ['snapshot.num-retained.max']), "
                                       f"got {reset!r}")
        changes = {str(k): v for k, v in (set or {}).items()}
        both = sorted(k for k in changes if k in reset)
        if both:
            raise InvalidArgumentError(f"Cannot alter {identifier}: options {both} are both set and reset")
        if not changes and not reset:
            raise InvalidArgumentError(f"Cannot alter {identifier}: no option to set or reset")
        name, root, branch = self._locate(identifier)
        store = FileStore(name, self.file_io, root, branch=branch, for_alter=True)
        store.require(Op.SCHEMA_CHANGE)
        update = SchemaUpdate(store)
        for key, value in changes.items():
            update.set_option(key, value)
        for key in reset:
            update.remove_option(key)
        try:
            update.commit()
        except (OptionError, UnsupportedFeatureError) as exc:
            if str(exc).startswith("Cannot "):
                raise
            # the options' own checks name the option, not the table
            raise type(exc)(f"Cannot alter {name}: {exc}") from exc
        return Table(name, self.file_io, root, branch=branch)

    def drop_table(self, identifier: str, *, ignore_if_not_exists: bool = False) -> None:
        """Delete a table's directory."""
        args.flag("ignore_if_not_exists", ignore_if_not_exists)
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise NoSuchTableError(f"Table {identifier} does not exist")
        self.file_io.delete_tree(self.table_path(identifier))

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema,
        *,
        primary_keys: tuple[str, ...] | list[str] = (),
        partition_keys: tuple[str, ...] | list[str] = (),
        options: dict[str, str] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> Table:
        """Create a table from an Arrow schema; primary-key columns become NOT NULL."""
        # Checked before anything is looked up: a string key would otherwise split into letters.
        args.names("primary_keys", primary_keys, optional=False)
        args.names("partition_keys", partition_keys, optional=False)
        args.mapping("options", options)
        args.text("comment", comment, empty=True)
        args.flag("ignore_if_exists", ignore_if_exists)
        db, name = parse_identifier(identifier)
        full = f"{db}.{name}"
        if not self.database_exists(db):
            raise NoSuchDatabaseError(f"Database {db} does not exist; create it first")
        if self.table_exists(identifier):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise AlreadyExistsError(f"Table {full} already exists")
        table_schema = build_schema(full, schema, tuple(primary_keys), tuple(partition_keys), options, comment)
        paths = TablePaths(self.table_path(identifier))
        self.file_io.confine_to_table(paths.root)  # its schema file is written through no link out of it
        if not self.file_io.try_create(paths.schema_file(0), table_schema.to_json().encode()):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise AlreadyExistsError(f"Table {full} already exists")
        return Table(full, self.file_io, paths.root, table_schema)


def build_schema(
    name: str,
    schema: pa.Schema,
    primary_keys: tuple[str, ...],
    partition_keys: tuple[str, ...],
    options: dict[str, str] | None,
    comment: str | None = None,
) -> TableSchema:
    """Validate a create-table request and build schema-0, rejecting what we cannot write."""
    if not isinstance(schema, pa.Schema):
        raise SchemaError(f"Cannot create {name}: schema must be a pyarrow.Schema, got {type(schema).__name__}")
    what = f"Cannot create {name}"
    names = schema.names
    check_column_names(what, names)
    fields, highest = fields_from_arrow_schema(schema)
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    check_keys(what, fields, primary_keys, partition_keys, opts)
    for k in ("primary-key", "partition"):
        if k in opts:
            raise OptionError(f"{what}: pass {k!r} as an argument, not as an option")
    # Every option's value first, all problems in one error, before the checks of the table's shape
    # that read single options (bucket), so that one bad option does not hide the others.
    CoreOptions({"bucket": "-1", **opts}, has_primary_key=bool(primary_keys)).validate(
        field_names=tuple(names), strict=True)
    opts.setdefault("bucket", "-1")
    shape = row_tracking_shape_problem(opts, primary_keys)
    if shape is not None:  # as Paimon's SchemaValidation.validateRowTracking
        raise OptionError(f"{what}: {shape}")
    opts.setdefault("file.format", "parquet")
    # Primary-key columns are NOT NULL, as Paimon makes them.
    fields = [f if f.name not in primary_keys else type(f)(f.id, f.name, f.type.copy(nullable=False),
                                                          f.description, f.default_value)
              for f in fields]
    check_fields(what, fields)
    table_schema = TableSchema(
        id=0,
        fields=tuple(fields),
        highest_field_id=highest,
        partition_keys=partition_keys,
        primary_keys=primary_keys,
        options=opts,
        comment=comment,
        time_millis=int(time.time() * 1000),
    )
    check_options(what, fields, primary_keys, partition_keys, opts)
    return table_schema
