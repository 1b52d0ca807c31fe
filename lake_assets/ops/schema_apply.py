"""Schema evolution: `apply_changes` turns a schema plus changes into the next schema (pure), or
raises. Data files are never rewritten: readers map old files to the current schema by field id
(docs/format.md §2.4), which is why only lossless type changes are allowed
(`schema_column_types`) and why some options may not change (`schema_option_change`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

from lake_assets.errors import OptionError, SchemaError
from lake_assets.ops.schema_change_model import (
    AddColumn,
    DropColumn,
    MoveColumn,
    Position,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnType,
    UpdateComment,
)
from lake_assets.ops.schema_column_types import WIDENINGS, is_lossless_widening, reassign_ids, to_data_type
from lake_assets.ops.schema_option_change import IMMUTABLE_OPTIONS, check_option_mutable, option_references
from lake_assets.schema_rules import NESTED_TYPES, check_column_name, check_column_type, check_keys
from lake_assets.spec.arrow_types import FieldIdCounter
from lake_assets.spec.data_types import DataField
from lake_assets.spec.schema import SCHEMA_VERSION, TableSchema
from lake_assets.table_rules import check_options


class _Draft:
    """The mutable schema being built while changes are applied in order."""

    def __init__(self, schema: TableSchema, table_name: str) -> None:
        self.table = table_name
        self.fields: list[DataField] = list(schema.fields)
        self.highest = schema.highest_field_id
        self.partition_keys = tuple(schema.partition_keys)
        self.primary_keys = list(schema.primary_keys)
        self.options = dict(schema.options)
        self.comment = schema.comment
        self.original_options = dict(schema.options)
        self.original_fields = tuple(schema.fields)

    # --------------------------------------------------------------- lookup
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def index(self, name: str, what: str) -> int:
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise SchemaError(f"{what}: table {self.table} has no column {name!r} (columns: {self.names()})")

    def insert_index(self, position: Position | None, what: str, moving: str | None = None) -> int:
        """Index to insert at, computed on ``self.fields`` with the moved column already removed."""
        if position is None or position == "last":
            return len(self.fields)
        if position == "first":
            return 0
        if isinstance(position, tuple) and len(position) == 2 and position[0] in ("after", "before"):
            anchor = position[1]
            if anchor == moving:
                raise SchemaError(f"{what}: cannot place column {anchor!r} relative to itself")
            i = self.index(anchor, what)
            return i + 1 if position[0] == "after" else i
        raise SchemaError(
            f"{what}: position must be 'first', 'last', ('after', col) or ('before', col), got {position!r}"
        )

    def references(self, name: str) -> list[str]:
        return option_references(self.options).get(name, [])

    # -------------------------------------------------------------- changes
    def apply(self, change: SchemaChange) -> None:
        handler = {
            AddColumn: self.add_column,
            RenameColumn: self.rename_column,
            DropColumn: self.drop_column,
            UpdateColumnType: self.update_column_type,
            UpdateColumnNullability: self.update_column_nullability,
            MoveColumn: self.move_column,
            UpdateColumnComment: self.update_column_comment,
            SetOption: self.set_option,
            RemoveOption: self.remove_option,
            UpdateComment: self.update_comment,
        }.get(type(change))
        if handler is None:
            raise SchemaError(f"Cannot alter {self.table}: unknown schema change {change!r}")
        handler(change)  # type: ignore[operator]

    def add_column(self, c: AddColumn) -> None:
        what = f"Cannot add column {c.name!r} to {self.table}"
        check_column_name(what, c.name, self.names())
        if not c.nullable:
            raise SchemaError(f"{what}: a new column must be nullable, because rows already written have no value")
        dt = to_data_type(c.arrow_type, what)
        if not dt.nullable:
            raise SchemaError(f"{what}: a new column must be nullable, because rows already written have no value")
        check_column_type(what, c.name, dt)
        at = self.insert_index(c.position, what)
        ids = FieldIdCounter(self.highest + 1)
        fid = ids.take()
        # The column takes its id before its nested ROW fields, as Paimon numbers them.
        dt = reassign_ids(dt, ids)
        self.highest = ids.highest
        self.fields.insert(at, DataField(fid, c.name, dt, c.comment))

    def rename_column(self, c: RenameColumn) -> None:
        what = f"Cannot rename column {c.old!r} of {self.table} to {c.new!r}"
        i = self.index(c.old, what)
        if c.old == c.new:
            return
        check_column_name(what, c.new, self.names())
        if c.old in self.partition_keys:
            raise SchemaError(f"{what}: it is a partition column (partition directories are named after it)")
        refs = self.references(c.old)
        if refs:
            raise SchemaError(f"{what}: options {refs} refer to it; change those options first")
        self.fields[i] = dataclasses.replace(self.fields[i], name=c.new)
        # Paimon renames primary-key columns in the key list too: the key keeps its field ids.
        self.primary_keys = [c.new if k == c.old else k for k in self.primary_keys]

    def drop_column(self, c: DropColumn) -> None:
        what = f"Cannot drop column {c.name!r} of {self.table}"
        i = self.index(c.name, what)
        if c.name in self.partition_keys:
            raise SchemaError(f"{what}: it is a partition column")
        if c.name in self.primary_keys:
            raise SchemaError(f"{what}: it is a primary-key column")
        refs = self.references(c.name)
        if refs:
            raise SchemaError(f"{what}: options {refs} refer to it; remove those options first")
        if len(self.fields) == 1:
            raise SchemaError(f"{what}: it is the table's only column")
        del self.fields[i]

    def update_column_type(self, c: UpdateColumnType) -> None:
        what = f"Cannot change the type of column {c.name!r} of {self.table}"
        i = self.index(c.name, what)
        old = self.fields[i].type
        if c.name in self.partition_keys:
            raise SchemaError(f"{what}: it is a partition column")
        if c.name in self.primary_keys:
            raise SchemaError(f"{what}: it is a primary-key column")
        new = to_data_type(c.arrow_type, what).copy(nullable=old.nullable)
        check_column_type(what, c.name, new)
        if isinstance(old, NESTED_TYPES) or isinstance(new, NESTED_TYPES):
            if old == new:
                return
            raise SchemaError(f"{what} from {old} to {new}: nested types cannot be changed")
        if not is_lossless_widening(old, new):
            raise SchemaError(
                f"{what} from {old} to {new}: not a lossless widening, so old files could not be read "
                f"as the new type (allowed: {WIDENINGS})"
            )
        self.fields[i] = dataclasses.replace(self.fields[i], type=new)

    def update_column_nullability(self, c: UpdateColumnNullability) -> None:
        what = f"Cannot change the nullability of column {c.name!r} of {self.table}"
        i = self.index(c.name, what)
        old = self.fields[i].type
        if old.nullable == c.nullable:
            return
        if c.nullable and c.name in self.primary_keys:
            raise SchemaError(f"{what}: primary-key columns are NOT NULL")
        if not c.nullable:
            raise SchemaError(
                f"{what} to NOT NULL: rows already written may hold nulls (Paimon rejects this by default)"
            )
        self.fields[i] = dataclasses.replace(self.fields[i], type=old.copy(nullable=c.nullable))

    def move_column(self, c: MoveColumn) -> None:
        what = f"Cannot move column {c.name!r} of {self.table}"
        i = self.index(c.name, what)
        moved = self.fields.pop(i)
        try:
            at = self.insert_index(c.position, what, moving=c.name)
        except SchemaError:
            self.fields.insert(i, moved)
            raise
        self.fields.insert(at, moved)

    def update_column_comment(self, c: UpdateColumnComment) -> None:
        i = self.index(c.name, f"Cannot update the comment of column {c.name!r} of {self.table}")
        self.fields[i] = dataclasses.replace(self.fields[i], description=c.comment)

    def set_option(self, c: SetOption) -> None:
        if not isinstance(c.key, str) or not c.key or not isinstance(c.value, str):
            raise OptionError(f"Cannot set option on {self.table}: key and value must be strings, got {c!r}")
        check_option_mutable(self.table, self.original_options, c.key, c.value)
        self.options[c.key] = c.value

    def remove_option(self, c: RemoveOption) -> None:
        check_option_mutable(self.table, self.original_options, c.key, None)
        self.options.pop(c.key, None)

    def update_comment(self, c: UpdateComment) -> None:
        self.comment = c.comment

    # --------------------------------------------------------------- result
    def validate_options(self) -> None:
        """The final schema must satisfy the rules `create_table` applies: keys and options (column
        types are checked where a change introduces them, so that a table another engine created
        with a type lake_assets cannot write can still have its options changed)."""
        what = f"Cannot alter {self.table}"
        check_keys(what, self.fields, self.primary_keys, self.partition_keys, self.options)
        check_options(what, self.fields, self.primary_keys, self.partition_keys, self.options,
                      before=(self.original_fields, self.original_options))



def apply_changes(schema: TableSchema, changes: Iterable[SchemaChange], *, table_name: str) -> TableSchema:
    """The schema after ``changes`` (applied in order): id + 1, a new timeMillis; raises, writes nothing.

    Raises SchemaError for changes old data files could not follow, OptionError for invalid
    options and UnsupportedFeatureError for changes Paimon allows but lake_assets cannot honour.
    """
    draft = _Draft(schema, table_name)
    for change in changes:
        draft.apply(change)
    draft.validate_options()
    return TableSchema(
        id=schema.id + 1,
        fields=tuple(draft.fields),
        highest_field_id=draft.highest,
        partition_keys=draft.partition_keys,
        primary_keys=tuple(draft.primary_keys),
        options=draft.options,
        comment=draft.comment,
        time_millis=int(time.time() * 1000),
        version=SCHEMA_VERSION,
    )


__all__ = ["IMMUTABLE_OPTIONS", "apply_changes"]
