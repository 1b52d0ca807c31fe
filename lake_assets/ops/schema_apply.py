"""Schema evolution rules: `apply_changes` turns a schema plus changes into the next schema (pure), or
raises. Data files are never rewritten: readers map old files to the current schema by field id
(docs/format.md §2.4), which is why only lossless type changes are allowed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

import pyarrow as pa

from lake_assets.errors import (
    CorruptMetadataError,
    OptionError,
    SchemaError,
    UnsupportedFeatureError,
)
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
from lake_assets.options import FIELD_OPTION
from lake_assets.schema_rules import (
    NESTED_TYPES,
    check_column_name,
    check_column_type,
    check_keys,
    check_option_change,
)
from lake_assets.spec.arrow_types import FieldIdCounter, from_arrow
from lake_assets.spec.data_types import (
    ArrayType,
    BigIntType,
    CharType,
    DataField,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarCharType,
)
from lake_assets.spec.schema import SCHEMA_VERSION, TableSchema
from lake_assets.spec.type_parser import parse_type
from lake_assets.table_rules import check_options

IMMUTABLE_OPTIONS: frozenset[str] = frozenset(
    {
        "bucket-key",
        "merge-engine",
        "sequence.snapshot-ordering",
        "rowkind.field",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "aggregation.remove-record-on-delete",
        "primary-key",
        "partition",
        "data-file.path-directory",
        "row-tracking.enabled",
        "data-evolution.enabled",
    }
)
"""Options Paimon never lets ALTER change (docs/format.md §2.3)."""

_INT_RANK = {TinyIntType: 0, SmallIntType: 1, IntType: 2, BigIntType: 3}


# ------------------------------------------------------------------------------------------ helpers
def _to_data_type(t: TypeLike, what: str) -> DataType:
    """Paimon type of a user-given type; nested ROW ids are placeholders, reassigned by the caller."""
    if isinstance(t, DataType):
        return t
    if isinstance(t, pa.DataType):
        return from_arrow(t)
    if isinstance(t, str):
        try:
            return parse_type(t)
        except CorruptMetadataError as exc:
            raise SchemaError(f"{what}: {exc}") from None
    raise SchemaError(f"{what}: expected a pyarrow type, a Paimon DataType or type text, got {t!r}")


def _reassign_ids(dt: DataType, ids: FieldIdCounter) -> DataType:
    """Give every nested ROW field a fresh id, pre-order (a field before its own children)."""
    match dt:
        case RowType(fields=fs):
            out = []
            for f in fs:
                fid = ids.take()
                out.append(dataclasses.replace(f, id=fid, type=_reassign_ids(f.type, ids)))
            return dataclasses.replace(dt, fields=tuple(out))
        case ArrayType(element=e):
            return dataclasses.replace(dt, element=_reassign_ids(e, ids))
        case MultisetType(element=e):
            return dataclasses.replace(dt, element=_reassign_ids(e, ids))
        case MapType(key=k, value=v):
            key = _reassign_ids(k, ids)
            return dataclasses.replace(dt, key=key, value=_reassign_ids(v, ids))
    return dt


def _split_list(value: str | None) -> list[str]:
    return [s.strip() for s in (value or "").split(",") if s.strip()]


def _option_references(options: dict[str, str]) -> dict[str, list[str]]:
    """Column name → option keys that name it (renaming or dropping it would orphan them)."""
    refs: dict[str, list[str]] = {}
    for key, value in options.items():
        cols: list[str] = []
        if key in ("sequence.field", "bucket-key"):
            cols = _split_list(value)
        elif key == "rowkind.field":
            cols = [value.strip()] if value and value.strip() else []
        else:
            m = FIELD_OPTION.match(key)
            if m:
                cols = m.group("field").split(",")
                if m.group("suffix") == "sequence-group":
                    cols += _split_list(value)
        for c in cols:
            refs.setdefault(c, []).append(key)
    return refs


def _is_lossless_widening(old: DataType, new: DataType) -> bool:
    """True for the type changes every old value survives exactly (see module docs)."""
    old_n, new_n = old.copy(nullable=True), new.copy(nullable=True)
    if old_n == new_n:
        return True
    old_rank, new_rank = _INT_RANK.get(type(old_n)), _INT_RANK.get(type(new_n))
    if old_rank is not None:
        if new_rank is not None:
            return new_rank > old_rank
        # A double's 53-bit mantissa holds every INT exactly, but not every BIGINT.
        return isinstance(new_n, DoubleType) and old_rank <= _INT_RANK[IntType]
    if isinstance(old_n, FloatType):
        return isinstance(new_n, DoubleType)
    if isinstance(old_n, DecimalType) and isinstance(new_n, DecimalType):
        # Neither the integer digits nor the fraction digits may shrink.
        return new_n.scale >= old_n.scale and new_n.precision - new_n.scale >= old_n.precision - old_n.scale
    if isinstance(old_n, CharType):
        return isinstance(new_n, CharType | VarCharType) and new_n.length >= old_n.length
    if isinstance(old_n, VarCharType):
        return isinstance(new_n, VarCharType) and new_n.length >= old_n.length
    if isinstance(old_n, TimestampType | LocalZonedTimestampType):
        return type(new_n) is type(old_n) and new_n.precision >= old_n.precision
    return False


_WIDENINGS = (
    "TINYINT→SMALLINT→INT→BIGINT, TINYINT/SMALLINT/INT→DOUBLE, FLOAT→DOUBLE, DECIMAL(p,s)→DECIMAL(p',s') "
    "with s'≥s and p'-s'≥p-s, CHAR/VARCHAR length up (CHAR→VARCHAR too), TIMESTAMP precision up to 6"
)


# ----------------------------------------------------------------------------------------- applying
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
        return _option_references(self.options).get(name, [])

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
        dt = _to_data_type(c.arrow_type, what)
        if not dt.nullable:
            raise SchemaError(f"{what}: a new column must be nullable, because rows already written have no value")
        check_column_type(what, c.name, dt)
        at = self.insert_index(c.position, what)
        ids = FieldIdCounter(self.highest + 1)
        fid = ids.take()
        # The column takes its id before its nested ROW fields, as Paimon numbers them.
        dt = _reassign_ids(dt, ids)
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
        new = _to_data_type(c.arrow_type, what).copy(nullable=old.nullable)
        check_column_type(what, c.name, new)
        if isinstance(old, NESTED_TYPES) or isinstance(new, NESTED_TYPES):
            if old == new:
                return
            raise SchemaError(f"{what} from {old} to {new}: nested types cannot be changed")
        if not _is_lossless_widening(old, new):
            raise SchemaError(
                f"{what} from {old} to {new}: not a lossless widening, so old files could not be read "
                f"as the new type (allowed: {_WIDENINGS})"
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

    def _check_mutable(self, key: str, new: str | None) -> None:
        old = self.original_options.get(key)
        if key in IMMUTABLE_OPTIONS and new != old:
            raise SchemaError(
                f"Cannot change option {key!r} of {self.table} from {old!r} to {new!r}: it is immutable"
            )
        if key == "bucket" and not _same_int(old, new) and not _fixed_to_fixed(old, new):
            # Paimon allows N -> M (partitions keep their count until overwritten, see
            # ops/bucket_count.py), not to or from dynamic / unaware / postpone modes
            raise UnsupportedFeatureError(
                f"Cannot change option 'bucket' of {self.table} from {old!r} to {new!r}: that needs a rescale "
                "(rewriting every bucket), which lake_assets does not implement"
            )
        if key == "file.format" and new is None:
            raise SchemaError(f"Cannot remove option 'file.format' of {self.table}: it is always written explicitly")
        check_option_change(f"Cannot alter {self.table}", self.original_options, key, old, new)

    def set_option(self, c: SetOption) -> None:
        if not isinstance(c.key, str) or not c.key or not isinstance(c.value, str):
            raise OptionError(f"Cannot set option on {self.table}: key and value must be strings, got {c!r}")
        self._check_mutable(c.key, c.value)
        self.options[c.key] = c.value

    def remove_option(self, c: RemoveOption) -> None:
        self._check_mutable(c.key, None)
        self.options.pop(c.key, None)

    def update_comment(self, c: UpdateComment) -> None:
        self.comment = c.comment

    # --------------------------------------------------------------- result
    def validate_options(self) -> None:
        """The final schema must satisfy the rules `create_table` applies: keys and options (column
        types are checked where a change introduces them, so that a table another engine created
        with a type lake_assets cannot write can still have its options changed)."""
        what = f"Cannot alter {self.table}"
        check_keys(what, self.fields, self.primary_keys, self.partition_keys)
        check_options(what, self.fields, self.primary_keys, self.partition_keys, self.options)


def _fixed_to_fixed(a: str | None, b: str | None) -> bool:
    try:
        return a is not None and b is not None and int(a.strip()) > 0 and int(b.strip()) > 0
    except ValueError:
        return False


def _same_int(a: str | None, b: str | None) -> bool:
    try:
        return a is not None and b is not None and int(a.strip()) == int(b.strip())
    except ValueError:
        return a == b


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
