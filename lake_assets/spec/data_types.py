"""Paimon's logical type model (docs/format.md §2.3): one frozen dataclass per type, `DataField`,
and each type's JSON form in schema files (``to_json``; parsing is `lake_assets.spec.type_parser`).

Atomic types serialise to SQL-like strings (``"DECIMAL(10, 2) NOT NULL"``), ARRAY / MAP / MULTISET /
ROW to JSON objects. The Arrow mapping is `lake_assets.spec.arrow_types`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from lake_assets.errors import CorruptMetadataError, SchemaError

STRING_LENGTH = 2147483647
"""Length of VARCHAR / VARBINARY that Paimon spells ``STRING`` / ``BYTES``."""

MAX_DECIMAL_PRECISION = 38
MAX_COMPACT_DECIMAL_PRECISION = 18
MAX_COMPACT_TIMESTAMP_PRECISION = 3
MAX_TIME_PRECISION = 9

_NOT_NULL = " NOT NULL"


@dataclass(frozen=True)
class DataType:
    """Base of every Paimon logical type; ``nullable`` is keyword-only so subclasses keep positional args."""

    nullable: bool = field(default=True, kw_only=True)

    def copy(self, nullable: bool | None = None) -> DataType:
        """Return the same type with ``nullable`` replaced (an unchanged copy when None)."""
        if nullable is None:
            return self
        return dataclasses.replace(self, nullable=nullable)

    def _base(self) -> str:
        raise NotImplementedError

    def _suffix(self) -> str:
        return "" if self.nullable else _NOT_NULL

    def to_json(self) -> Any:
        """The JSON value Paimon writes for this type in schema files."""
        return self._base() + self._suffix()

    def __str__(self) -> str:
        return str(self.to_json())


@dataclass(frozen=True)
class BooleanType(DataType):
    """BOOLEAN."""

    def _base(self) -> str:
        return "BOOLEAN"


@dataclass(frozen=True)
class TinyIntType(DataType):
    """TINYINT: signed 8-bit."""

    def _base(self) -> str:
        return "TINYINT"


@dataclass(frozen=True)
class SmallIntType(DataType):
    """SMALLINT: signed 16-bit."""

    def _base(self) -> str:
        return "SMALLINT"


@dataclass(frozen=True)
class IntType(DataType):
    """INT: signed 32-bit."""

    def _base(self) -> str:
        return "INT"


@dataclass(frozen=True)
class BigIntType(DataType):
    """BIGINT: signed 64-bit."""

    def _base(self) -> str:
        return "BIGINT"


@dataclass(frozen=True)
class FloatType(DataType):
    """FLOAT: IEEE-754 binary32."""

    def _base(self) -> str:
        return "FLOAT"


@dataclass(frozen=True)
class DoubleType(DataType):
    """DOUBLE: IEEE-754 binary64."""

    def _base(self) -> str:
        return "DOUBLE"


@dataclass(frozen=True)
class DecimalType(DataType):
    """DECIMAL(precision, scale), precision 1..38."""

    precision: int = 10
    scale: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.precision <= MAX_DECIMAL_PRECISION:
            raise SchemaError(f"DECIMAL precision must be in 1..38, got {self.precision}")
        if not 0 <= self.scale <= self.precision:
            raise SchemaError(f"DECIMAL scale must be in 0..{self.precision}, got {self.scale}")

    def _base(self) -> str:
        return f"DECIMAL({self.precision}, {self.scale})"


def _check_length(kind: str, length: int) -> None:
    if not 1 <= length <= STRING_LENGTH:
        raise SchemaError(f"{kind} length must be in 1..{STRING_LENGTH}, got {length}")


@dataclass(frozen=True)
class CharType(DataType):
    """CHAR(length)."""

    length: int = 1

    def __post_init__(self) -> None:
        _check_length("CHAR", self.length)

    def _base(self) -> str:
        return f"CHAR({self.length})"


@dataclass(frozen=True)
class VarCharType(DataType):
    """VARCHAR(length); length 2147483647 is STRING."""

    length: int

    def __post_init__(self) -> None:
        _check_length("VARCHAR", self.length)

    def _base(self) -> str:
        return "STRING" if self.length == STRING_LENGTH else f"VARCHAR({self.length})"


@dataclass(frozen=True)
class BinaryType(DataType):
    """BINARY(length)."""

    length: int = 1

    def __post_init__(self) -> None:
        _check_length("BINARY", self.length)

    def _base(self) -> str:
        return f"BINARY({self.length})"


@dataclass(frozen=True)
class VarBinaryType(DataType):
    """VARBINARY(length); length 2147483647 is BYTES."""

    length: int

    def __post_init__(self) -> None:
        _check_length("VARBINARY", self.length)

    def _base(self) -> str:
        return "BYTES" if self.length == STRING_LENGTH else f"VARBINARY({self.length})"


@dataclass(frozen=True)
class DateType(DataType):
    """DATE: days since 1970-01-01."""

    def _base(self) -> str:
        return "DATE"


def _check_precision(kind: str, precision: int) -> None:
    if not 0 <= precision <= MAX_TIME_PRECISION:
        raise SchemaError(f"{kind} precision must be in 0..9, got {precision}")


@dataclass(frozen=True)
class TimeType(DataType):
    """TIME(precision); values are stored as millis of day whatever the precision."""

    precision: int = 0

    def __post_init__(self) -> None:
        _check_precision("TIME", self.precision)

    def _base(self) -> str:
        return f"TIME({self.precision})"


@dataclass(frozen=True)
class TimestampType(DataType):
    """TIMESTAMP(precision) without time zone (a wall-clock date-time)."""

    precision: int = 6

    def __post_init__(self) -> None:
        _check_precision("TIMESTAMP", self.precision)

    def _base(self) -> str:
        return f"TIMESTAMP({self.precision})"


@dataclass(frozen=True)
class LocalZonedTimestampType(DataType):
    """TIMESTAMP(precision) WITH LOCAL TIME ZONE (a UTC instant)."""

    precision: int = 6

    def __post_init__(self) -> None:
        _check_precision("TIMESTAMP_LTZ", self.precision)

    def _base(self) -> str:
        return f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"


@dataclass(frozen=True)
class ArrayType(DataType):
    """ARRAY<element>."""

    element: DataType

    def _base(self) -> str:
        return "ARRAY"

    def to_json(self) -> dict[str, Any]:
        return {"type": self._base() + self._suffix(), "element": self.element.to_json()}

    def __str__(self) -> str:
        return f"ARRAY<{self.element}>{self._suffix()}"


@dataclass(frozen=True)
class MapType(DataType):
    """MAP<key, value>."""

    key: DataType
    value: DataType

    def _base(self) -> str:
        return "MAP"

    def to_json(self) -> dict[str, Any]:
        head = self._base() + self._suffix()
        return {"type": head, "key": self.key.to_json(), "value": self.value.to_json()}

    def __str__(self) -> str:
        return f"MAP<{self.key}, {self.value}>{self._suffix()}"


@dataclass(frozen=True)
class MultisetType(DataType):
    """MULTISET<element>: a bag, stored like MAP<element, INT NOT NULL>."""

    element: DataType

    def _base(self) -> str:
        return "MULTISET"

    def to_json(self) -> dict[str, Any]:
        return {"type": self._base() + self._suffix(), "element": self.element.to_json()}

    def __str__(self) -> str:
        return f"MULTISET<{self.element}>{self._suffix()}"


@dataclass(frozen=True)
class RowType(DataType):
    """ROW<fields>; nested fields carry their own ids."""

    fields: tuple[DataField, ...]

    def __post_init__(self) -> None:
        # Accept lists for convenience but store a tuple so the type stays hashable.
        object.__setattr__(self, "fields", tuple(self.fields))
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise SchemaError(f"ROW field names must be unique, got {names}")

    def _base(self) -> str:
        return "ROW"

    def to_json(self) -> dict[str, Any]:
        return {"type": self._base() + self._suffix(), "fields": [f.to_json() for f in self.fields]}

    def __str__(self) -> str:
        inner = ", ".join(f"`{f.name}` {f.type}" for f in self.fields)
        return f"ROW<{inner}>{self._suffix()}"


@dataclass(frozen=True)
class DataField:
    """One column (or nested ROW field) of a schema."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object Paimon writes; optional keys only when set."""
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            out["description"] = self.description
        if self.default_value is not None:
            out["defaultValue"] = self.default_value
        return out

    @staticmethod
    def from_json(d: Any) -> DataField:
        """Parse a DataField JSON object; raises CorruptMetadataError when malformed."""
        if not isinstance(d, dict):
            raise CorruptMetadataError(f"DataField must be a JSON object, got {d!r}")
        try:
            fid, name, type_json = d["id"], d["name"], d["type"]
        except KeyError as e:
            raise CorruptMetadataError(f"DataField {d!r} lacks key {e.args[0]!r}") from None
        if not isinstance(fid, int) or isinstance(fid, bool) or not isinstance(name, str):
            raise CorruptMetadataError(f"DataField {d!r} has a malformed id or name")
        description = d.get("description")
        default_value = d.get("defaultValue")
        for key, value in (("description", description), ("defaultValue", default_value)):
            if value is not None and not isinstance(value, str):
                raise CorruptMetadataError(f"DataField {name!r}: {key} must be a string, got {value!r}")
        # The parser builds on this module's classes: imported here, not at the top, to avoid a cycle.
        from lake_assets.spec.type_parser import parse_type

        return DataField(fid, name, parse_type(type_json), description, default_value)


def string_type(nullable: bool = True) -> VarCharType:
    """STRING, i.e. VARCHAR(2147483647)."""
    return VarCharType(STRING_LENGTH, nullable=nullable)


def bytes_type(nullable: bool = True) -> VarBinaryType:
    """BYTES, i.e. VARBINARY(2147483647)."""
    return VarBinaryType(STRING_LENGTH, nullable=nullable)


def is_fixed_length(dt: DataType) -> bool:
    """True when a value fits entirely in its 8-byte BinaryRow slot (no variable part)."""
    match dt:
        case (
            BooleanType()
            | TinyIntType()
            | SmallIntType()
            | IntType()
            | BigIntType()
            | FloatType()
            | DoubleType()
            | DateType()
            | TimeType()
        ):
            return True
        case DecimalType(precision=p):
            return p <= MAX_COMPACT_DECIMAL_PRECISION
        case TimestampType(precision=p) | LocalZonedTimestampType(precision=p):
            return p <= MAX_COMPACT_TIMESTAMP_PRECISION
    return False
