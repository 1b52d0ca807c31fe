"""Rules every table schema must satisfy, for `Catalog.create_table` and for ALTER alike.

One module so that create and ALTER cannot drift: reserved column names, key columns, and the
types (nested types included) lake_assets can write the way Paimon readers read them.

Paimon Java 0.9 accepts ``TIMESTAMP(p)`` / ``TIMESTAMP_LTZ(p)`` with p > 6 anywhere, top level
or nested, and its Parquet writer stores them as INT96 (checked against the oracle: an
``ARRAY<TIMESTAMP(9)>`` element and a ``TIMESTAMP(9)`` column both become ``int96``). lake_assets
writes no INT96, so it refuses such a type wherever it appears, at create as on ALTER: writing
them another way would hand Paimon readers files they misread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from lake_assets.errors import SchemaError, UnsupportedFeatureError
from lake_assets.spec.data_types import (
    ArrayType,
    DataField,
    DataType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    TimestampType,
)

KEY_FIELD_PREFIX = "_KEY_"
SYSTEM_FIELD_NAMES = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND"})
MAX_TIMESTAMP_PRECISION = 6
NESTED_TYPES = (ArrayType, MapType, MultisetType, RowType)


def is_reserved(name: str) -> bool:
    """Whether ``name`` is one of the system columns of Paimon's key-value data files."""
    return name.startswith(KEY_FIELD_PREFIX) or name in SYSTEM_FIELD_NAMES


def check_column_name(what: str, name: object, existing: Iterable[str] = ()) -> None:
    """A new column's name: a non-empty string, not reserved, not already a column."""
    if not isinstance(name, str) or not name:
        raise SchemaError(f"{what}: a column name must be a non-empty string, got {name!r}")
    if is_reserved(name):
        raise SchemaError(f"{what}: column name {name!r} is reserved for Paimon system columns")
    if name in existing:
        raise SchemaError(f"{what}: a column named {name!r} already exists")


def check_column_names(what: str, names: Sequence[str]) -> None:
    """All columns of a new table: no duplicates, each name allowed."""
    if len(set(names)) != len(names):
        raise SchemaError(f"{what}: duplicate column names in {list(names)}")
    for name in names:
        check_column_name(what, name)


def max_timestamp_precision(dt: DataType) -> int:
    """The highest timestamp precision in ``dt``, nested types included (0 without timestamps)."""
    match dt:
        case TimestampType(precision=p) | LocalZonedTimestampType(precision=p):
            return p
        case RowType(fields=fs):
            return max((max_timestamp_precision(f.type) for f in fs), default=0)
        case ArrayType(element=e) | MultisetType(element=e):
            return max_timestamp_precision(e)
        case MapType(key=k, value=v):
            return max(max_timestamp_precision(k), max_timestamp_precision(v))
    return 0


def check_column_type(what: str, name: str, dt: DataType) -> None:
    """A column type lake_assets can write as Paimon does (see the module docs)."""
    if max_timestamp_precision(dt) > MAX_TIMESTAMP_PRECISION:
        raise UnsupportedFeatureError(
            f"{what}: column {name!r} is {dt}, with a timestamp precision above 6; nanosecond timestamps "
            "(stored as INT96 by Paimon) are not supported by lake_assets"
        )


def check_fields(what: str, fields: Iterable[DataField]) -> None:
    """`check_column_type` for every column."""
    for f in fields:
        check_column_type(what, f.name, f.type)


def check_keys(
    what: str, fields: Sequence[DataField], primary_keys: Sequence[str], partition_keys: Sequence[str],
    options: Mapping[str, str] | None = None,
) -> None:
    """Primary and partition keys: existing, distinct columns of flat types; a primary key holds
    at least one column that is not a partition key, and every partition key unless the table is
    a cross-partition upsert table: ``bucket = -1`` (the default) and no ``sequence.field``, as
    Paimon's SchemaValidation allows (``options`` None: the partition keys are required)."""
    by_name = {f.name: f for f in fields}
    for keys, kind in ((primary_keys, "primary key"), (partition_keys, "partition key")):
        missing = [k for k in keys if k not in by_name]
        if missing:
            raise SchemaError(f"{what}: {kind} columns {missing} are not in the schema")
        if len(set(keys)) != len(keys):
            raise SchemaError(f"{what}: duplicate {kind} columns {list(keys)}")
    if primary_keys:
        outside = [p for p in partition_keys if p not in primary_keys]
        if outside and options is None:
            raise SchemaError(
                f"{what}: primary key {list(primary_keys)} must include the partition keys {outside}")
        if outside and options is not None:
            if str(options.get("bucket", "-1")).strip() != "-1":
                raise SchemaError(
                    f"{what}: primary key {list(primary_keys)} lacks the partition keys {outside}, which needs "
                    "dynamic bucket mode (bucket = -1, cross-partition upsert), as in Paimon")
            if options.get("sequence.field"):
                raise SchemaError(
                    f"{what}: sequence.field cannot be used in cross-partition upsert tables (primary key "
                    f"{list(primary_keys)} lacks the partition keys {outside}), as in Paimon")
        if not [k for k in primary_keys if k not in partition_keys]:
            raise SchemaError(f"{what}: the primary key must have a column that is not a partition key")
    for k in (*primary_keys, *partition_keys):
        if isinstance(by_name[k].type, NESTED_TYPES):
            raise SchemaError(f"{what}: key column {k!r} has a nested type")


# Boolean options an ALTER may turn on but never off again (Paimon 1.x SchemaManager
# .checkAlterTableOption): rows dropped or kept while one was true cannot be brought back.
ONE_WAY_OPTIONS = ("ignore-delete", "ignore-update-before")
DV_ENABLED = "deletion-vectors.enabled"
DV_MODIFIABLE = "deletion-vectors.modifiable"


def _is_true(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def check_option_change(what: str, options: dict[str, str], key: str, old: str | None, new: str | None) -> None:
    """An ALTER that sets (``new``) or removes (``new`` None) option ``key`` of a table whose
    options are ``options``, refused as Paimon refuses it:

    * ``ignore-delete`` / ``ignore-update-before`` set from true to false (removing them is allowed,
      as in Paimon: only SET is checked);
    * ``deletion-vectors.enabled`` changed or removed unless ``deletion-vectors.modifiable`` is
      true (without a full compaction, files written in the other mode would be misread).

    Paimon 0.9 predates these rules (its ALTER accepts every such change)."""
    if key in ONE_WAY_OPTIONS and new is not None and _is_true(old) and not _is_true(new):
        raise SchemaError(f"{what}: cannot change {key} from true to false (rows it dropped cannot come back)")
    if key == DV_ENABLED and not _is_true(options.get(DV_MODIFIABLE)):
        before, after = _is_true(old), _is_true(new)
        if before != after:
            raise SchemaError(
                f"{what}: cannot change deletion vectors mode from {str(before).lower()} to {str(after).lower()} "
                f"without a full compaction (set {DV_MODIFIABLE} = 'true' to allow it)")
