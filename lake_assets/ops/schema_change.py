"""Schema evolution: committing ``schema-<id+1>``.

Changes are small frozen dataclasses (`lake_assets.ops.schema_change_model`); `apply_changes`
(`lake_assets.ops.schema_apply`) turns a schema plus changes into the next schema (or raises), and
`SchemaUpdate` commits that schema with put-if-absent, retrying against concurrent schema commits.
Data files are never rewritten: readers map old files to the current schema by field id
(docs/format.md §2.4), which is why only lossless type changes are allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets import arguments as args
from lake_assets.errors import CommitConflictError, InvalidArgumentError, LakeError, SchemaError
from lake_assets.ops.schema_apply import IMMUTABLE_OPTIONS, apply_changes
from lake_assets.ops.schema_change_model import (
    AddColumn,
    DropColumn,
    MoveColumn,
    Position,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    TypeLike,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnType,
    UpdateComment,
)
from lake_assets.options import CoreOptions
from lake_assets.spec.partition import names_depend_on_legacy_name
from lake_assets.spec.schema import TableSchema

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

# The change model and the evolution rules live in their own modules; callers import them from here too.
__all__ = [
    "IMMUTABLE_OPTIONS", "AddColumn", "DropColumn", "MoveColumn", "Position", "RemoveOption", "RenameColumn",
    "SchemaChange", "SchemaUpdate", "SetOption", "TypeLike", "UpdateColumnComment", "UpdateColumnNullability",
    "UpdateColumnType", "UpdateComment", "apply_changes",
]

MAX_COMMIT_ATTEMPTS = 10


# ------------------------------------------------------------------------------------------ builder
class SchemaUpdate:
    """Collects schema changes for one table and commits them as one new schema file.

    >>> SchemaUpdate(table).add_column("note", pa.string()).rename_column("amt", "amount").commit()
    """

    def __init__(self, store: FileStore) -> None:
        self.store = store
        self.changes: list[SchemaChange] = []

    def _add(self, change: SchemaChange) -> SchemaUpdate:
        self.changes.append(change)
        return self

    def add_column(
        self,
        name: str,
        arrow_type: TypeLike,
        *,
        nullable: bool = True,
        comment: str | None = None,
        position: Position | None = None,
    ) -> SchemaUpdate:
        args.text("name", name, optional=False)
        args.flag("nullable", nullable)
        args.text("comment", comment, empty=True)
        return self._add(AddColumn(name, arrow_type, nullable, comment, position))

    def rename_column(self, old: str, new: str) -> SchemaUpdate:
        args.text("old", old, optional=False)
        args.text("new", new, optional=False)
        return self._add(RenameColumn(old, new))

    def drop_column(self, name: str) -> SchemaUpdate:
        args.text("name", name, optional=False)
        return self._add(DropColumn(name))

    def update_column_type(self, name: str, arrow_type: TypeLike) -> SchemaUpdate:
        args.text("name", name, optional=False)
        return self._add(UpdateColumnType(name, arrow_type))

    def update_column_nullability(self, name: str, nullable: bool) -> SchemaUpdate:
        args.text("name", name, optional=False)
        args.flag("nullable", nullable)
        return self._add(UpdateColumnNullability(name, nullable))

    def update_column_comment(self, name: str, comment: str | None) -> SchemaUpdate:
        args.text("name", name, optional=False)
        args.text("comment", comment, empty=True)
        return self._add(UpdateColumnComment(name, comment))

    def move_column(self, name: str, position: Position) -> SchemaUpdate:
        args.text("name", name, optional=False)
        return self._add(MoveColumn(name, position))

    def set_option(self, key: str, value: str) -> SchemaUpdate:
        args.text("key", key, optional=False)
        if value is None or isinstance(value, (bytes, dict, list, tuple, set)):
            # str() of these would store "None" or a repr as the option's text
            raise InvalidArgumentError(f"value of option {key!r} must be text, got {value!r}")
        return self._add(SetOption(key, str(value)))

    def remove_option(self, key: str) -> SchemaUpdate:
        args.text("key", key, optional=False)
        return self._add(RemoveOption(key))

    def update_comment(self, comment: str | None) -> SchemaUpdate:
        args.text("comment", comment, empty=True)
        return self._add(UpdateComment(comment))

    def commit(self) -> TableSchema:
        """Write ``schema-<latest+1>`` and return it; with no changes, return the latest schema.

        Each attempt re-applies the changes to the latest schema, so a change that a concurrent
        schema commit made invalid (e.g. the column was renamed meanwhile) raises instead of landing.
        """
        store = self.store
        for _ in range(MAX_COMMIT_ATTEMPTS):
            store.refresh()
            if not self.changes:
                return store.schema
            new = apply_changes(store.schema, self.changes, table_name=store.name)
            _check_partition_names(store, new)
            if store.file_io.try_create(store.paths.schema_file(new.id), new.to_json().encode()):
                store.refresh()
                return new
        raise CommitConflictError(
            f"Cannot alter {store.name}: other schema changes kept winning for {MAX_COMMIT_ATTEMPTS} attempts"
        )


def _legacy_name(options: dict[str, str]) -> bool | None:
    """``partition.legacy-name`` of these options; None when its value does not parse (a table opened
    for ALTER only may carry such options: changing how its partitions are named is then refused
    once it has data, as no one can tell how they were named)."""
    key = "partition.legacy-name"
    try:
        return CoreOptions({key: options[key]} if key in options else {}).partition_legacy_name
    except LakeError:
        return None


def _check_partition_names(store: FileStore, new: TableSchema) -> None:
    """Refuse to change how a partitioned table with data names its partition directories:
    ``partition.default-name``, or ``partition.legacy-name`` when it changes a name of the table's
    partition types (`names_depend_on_legacy_name`).

    Data file paths are not stored: readers (Paimon's too) rebuild them from the partition values
    and the *current* names, so renaming would make every partition written so far (every null
    partition, for the default name) unreadable, and its live files would look like orphans.
    Paimon allows the ALTER; we refuse it once any snapshot, tag or long-lived changelog exists
    (set them before the first write).
    """
    if not store.schema.partition_keys:
        return
    changed: list[tuple[str, object, object, str]] = []
    key = "partition.default-name"
    old_value, new_value = store.schema.options.get(key), new.options.get(key)
    if old_value != new_value:
        changed.append((key, old_value, new_value, "files of null partitions live under the directory the "
                        "current name gives"))
    types = store.schema.types(list(store.schema.partition_keys))
    if (_legacy_name(store.schema.options) != _legacy_name(new.options)
            and names_depend_on_legacy_name(types)):
        changed.append(("partition.legacy-name", store.schema.options.get("partition.legacy-name"),
                        new.options.get("partition.legacy-name"), "its files live under the directories the "
                        "current naming gives (DATE, TIME, TIMESTAMP and BINARY values are named differently)"))
    if not changed:
        return
    has_data = (
        store.snapshot_manager.latest_id() is not None
        or bool(store.tag_manager().names())
        or bool(store.changelog_manager().ids())
    )
    if has_data:
        key, before, after, why = changed[0]
        raise SchemaError(
            f"Cannot change option {key!r} of {store.name} from {before!r} to {after!r}: the table "
            f"already has data, and {why}; set it before the first write"
        )
