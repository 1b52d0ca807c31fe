"""Paimon's logical type model, its JSON form in schema files and the mapping to Arrow.

JSON strings follow docs/format.md §2.3: atomic types are SQL-like strings (``"DECIMAL(10, 2) NOT NULL"``),
ARRAY / MAP / MULTISET / ROW are JSON objects.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, SchemaError, UnsupportedFeatureError

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
        return DataField(fid, name, parse_type(type_json), description, default_value)


def string_type(nullable: bool = True) -> VarCharType:
    """STRING, i.e. VARCHAR(2147483647)."""
    return VarCharType(STRING_LENGTH, nullable=nullable)


def bytes_type(nullable: bool = True) -> VarBinaryType:
    """BYTES, i.e. VARBINARY(2147483647)."""
    return VarBinaryType(STRING_LENGTH, nullable=nullable)


# ---------------------------------------------------------------------------------------------------------
# Parsing

_TOKEN_RE = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|([(),<>]))")


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            raise CorruptMetadataError(f"Cannot parse type {text!r}: unexpected text at offset {pos}")
        tokens.append((m.group(1) or m.group(2) or m.group(3)).upper())
        pos = m.end()
    return tokens


class _TypeParser:
    """Recursive-descent parser over the upper-cased tokens of one type string."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def fail(self, why: str) -> CorruptMetadataError:
        return CorruptMetadataError(f"Cannot parse type {self.text!r}: {why}")

    def peek(self, ahead: int = 0) -> str | None:
        i = self.pos + ahead
        return self.tokens[i] if i < len(self.tokens) else None

    def accept(self, *words: str) -> bool:
        """Consume ``words`` if they come next (all of them), else consume nothing."""
        if all(self.peek(i) == w for i, w in enumerate(words)):
            self.pos += len(words)
            return True
        return False

    def expect(self, word: str) -> None:
        if not self.accept(word):
            raise self.fail(f"expected {word!r} at token {self.pos}")

    def integer(self) -> int:
        tok = self.peek()
        if tok is None or not tok.isdigit():
            raise self.fail(f"expected a number at token {self.pos}")
        self.pos += 1
        return int(tok)

    def optional_args(self, max_args: int) -> list[int]:
        if not self.accept("("):
            return []
        args = [self.integer()]
        while len(args) < max_args and self.accept(","):
            args.append(self.integer())
        self.expect(")")
        return args

    def nullability(self) -> bool:
        if self.accept("NOT", "NULL"):
            return False
        self.accept("NULL")
        return True

    def parse_full(self) -> DataType:
        dt = self.parse_type()
        if self.pos != len(self.tokens):
            raise self.fail(f"unexpected {self.tokens[self.pos]!r}")
        return dt

    def parse_type(self) -> DataType:
        dt = self.parse_root()
        return dt.copy(nullable=self.nullability())

    def parse_root(self) -> DataType:
        word = self.peek()
        if word is None:
            raise self.fail("empty type")
        self.pos += 1
        simple = _SIMPLE_TYPES.get(word)
        if simple is not None:
            if word == "DOUBLE":
                self.accept("PRECISION")
            return simple()
        if word in ("DECIMAL", "NUMERIC", "DEC"):
            args = self.optional_args(2)
            precision = args[0] if args else 10
            scale = args[1] if len(args) > 1 else 0
            return DecimalType(precision, scale)
        if word in _LENGTH_TYPES:
            args = self.optional_args(1)
            return _LENGTH_TYPES[word](args[0] if args else 1)
        if word == "STRING":
            return string_type()
        if word == "BYTES":
            return bytes_type()
        if word == "TIME":
            args = self.optional_args(1)
            self.accept("WITHOUT", "TIME", "ZONE")
            return TimeType(args[0] if args else 0)
        if word == "TIMESTAMP":
            args = self.optional_args(1)
            precision = args[0] if args else 6
            if self.accept("WITH", "LOCAL", "TIME", "ZONE"):
                return LocalZonedTimestampType(precision)
            self.accept("WITHOUT", "TIME", "ZONE")
            return TimestampType(precision)
        if word == "TIMESTAMP_LTZ":
            args = self.optional_args(1)
            return LocalZonedTimestampType(args[0] if args else 6)
        if word in ("ARRAY", "MULTISET"):
            self.expect("<")
            element = self.parse_type()
            self.expect(">")
            return ArrayType(element) if word == "ARRAY" else MultisetType(element)
        if word == "MAP":
            self.expect("<")
            key = self.parse_type()
            self.expect(",")
            value = self.parse_type()
            self.expect(">")
            return MapType(key, value)
        _refuse_newer_type(word)
        raise self.fail(f"unknown type name {word!r}")


_SIMPLE_TYPES: dict[str, type[DataType]] = {
    "BOOLEAN": BooleanType,
    "TINYINT": TinyIntType,
    "SMALLINT": SmallIntType,
    "INT": IntType,
    "INTEGER": IntType,
    "BIGINT": BigIntType,
    "FLOAT": FloatType,
    "DOUBLE": DoubleType,
    "DATE": DateType,
}

_LENGTH_TYPES: dict[str, type[CharType | VarCharType | BinaryType | VarBinaryType]] = {
    "CHAR": CharType,
    "VARCHAR": VarCharType,
    "BINARY": BinaryType,
    "VARBINARY": VarBinaryType,
}


# Types newer Paimon versions write that lake_assets does not implement: a table using one is a
# valid table we cannot handle, not corrupt metadata.
NEWER_PAIMON_TYPES = frozenset({"VARIANT", "BLOB", "VECTOR", "GEOMETRY", "GEOGRAPHY"})


def _refuse_newer_type(word: str) -> None:
    if word.upper() in NEWER_PAIMON_TYPES:
        raise UnsupportedFeatureError(f"type {word.upper()} (a newer Paimon type) is not supported")


def _parse_string(text: str) -> DataType:
    try:
        return _TypeParser(text).parse_full()
    except SchemaError as e:
        # Out-of-range parameters in a schema file are corrupt metadata, not a user schema error.
        raise CorruptMetadataError(f"Cannot parse type {text!r}: {e}") from None


def _parse_object(obj: dict[str, Any]) -> DataType:
    head = obj.get("type")
    if not isinstance(head, str):
        raise CorruptMetadataError(f"Cannot parse type {obj!r}: missing 'type' string")
    parser = _TypeParser(head)
    kind = parser.peek()
    parser.pos += 1
    nullable = parser.nullability()
    if parser.pos != len(parser.tokens):
        raise CorruptMetadataError(f"Cannot parse type {obj!r}: malformed head {head!r}")
    try:
        if kind in ("ARRAY", "MULTISET"):
            element = parse_type(obj["element"])
            cls = ArrayType if kind == "ARRAY" else MultisetType
            return cls(element, nullable=nullable)
        if kind == "MAP":
            return MapType(parse_type(obj["key"]), parse_type(obj["value"]), nullable=nullable)
        if kind == "ROW":
            raw_fields = obj["fields"]
            if not isinstance(raw_fields, list):
                raise CorruptMetadataError(f"Cannot parse type {obj!r}: 'fields' must be a list")
            return RowType(tuple(DataField.from_json(f) for f in raw_fields), nullable=nullable)
    except KeyError as e:
        raise CorruptMetadataError(f"Cannot parse type {obj!r}: missing key {e.args[0]!r}") from None
    except SchemaError as e:
        raise CorruptMetadataError(f"Cannot parse type {obj!r}: {e}") from None
    _refuse_newer_type(str(kind))
    raise CorruptMetadataError(f"Cannot parse type {obj!r}: unknown type {kind!r}")


def parse_type(json_value: Any) -> DataType:
    """Parse a type as it appears in a schema file (string or object); raises CorruptMetadataError."""
    if isinstance(json_value, str):
        return _parse_string(json_value)
    if isinstance(json_value, dict):
        return _parse_object(json_value)
    raise CorruptMetadataError(f"Cannot parse type {json_value!r}: expected a string or an object")


# ---------------------------------------------------------------------------------------------------------
# Arrow mapping

FIELD_ID_KEY = b"PARQUET:field_id"
"""Arrow field metadata key that Parquet writers turn into the Parquet field id."""


def _timestamp_unit(precision: int) -> str:
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


def _to_arrow(dt: DataType, field_ids: bool) -> pa.DataType:
    match dt:
        case BooleanType():
            return pa.bool_()
        case TinyIntType():
            return pa.int8()
        case SmallIntType():
            return pa.int16()
        case IntType():
            return pa.int32()
        case BigIntType():
            return pa.int64()
        case FloatType():
            return pa.float32()
        case DoubleType():
            return pa.float64()
        case DecimalType(precision=p, scale=s):
            return pa.decimal128(p, s)
        case CharType() | VarCharType():
            return pa.string()
        case BinaryType() | VarBinaryType():
            return pa.binary()
        case DateType():
            return pa.date32()
        case TimeType():
            return pa.time32("ms")
        case TimestampType(precision=p):
            return pa.timestamp(_timestamp_unit(p))
        case LocalZonedTimestampType(precision=p):
            return pa.timestamp(_timestamp_unit(p), tz="UTC")
        case ArrayType(element=e):
            return pa.list_(pa.field("element", _to_arrow(e, field_ids), nullable=e.nullable))
        case MultisetType(element=e):
            return pa.map_(
                pa.field("key", _to_arrow(e, field_ids), nullable=False),
                pa.field("value", pa.int32(), nullable=False),
            )
        case MapType(key=k, value=v):
            # Arrow map keys are never null, whatever the Paimon key type says.
            return pa.map_(
                pa.field("key", _to_arrow(k, field_ids), nullable=False),
                pa.field("value", _to_arrow(v, field_ids), nullable=v.nullable),
            )
        case RowType(fields=fs):
            return pa.struct([_to_arrow_field(f, field_ids) for f in fs])
    raise SchemaError(f"Type {dt!r} has no Arrow mapping")


def _to_arrow_field(f: DataField, field_ids: bool) -> pa.Field:
    metadata = {FIELD_ID_KEY: str(f.id).encode()} if field_ids else None
    return pa.field(f.name, _to_arrow(f.type, field_ids), nullable=f.type.nullable, metadata=metadata)


def to_arrow(dt: DataType) -> pa.DataType:
    """The Arrow type users see for a Paimon type."""
    return _to_arrow(dt, False)


def to_arrow_field(f: DataField, field_ids: bool = False) -> pa.Field:
    """Arrow field with the type's nullability; ``field_ids`` adds ``PARQUET:field_id`` metadata."""
    return _to_arrow_field(f, field_ids)


def to_arrow_schema(fields: Any, field_ids: bool = False) -> pa.Schema:
    """Arrow schema of a sequence of DataFields."""
    return pa.schema([_to_arrow_field(f, field_ids) for f in fields])


class FieldIdCounter:
    """Hands out consecutive field ids; ``highest`` is the last id handed out."""

    def __init__(self, start: int = 0) -> None:
        self.next_id = start

    def take(self) -> int:
        """Return the next id and advance."""
        fid = self.next_id
        self.next_id += 1
        return fid

    @property
    def highest(self) -> int:
        return self.next_id - 1


def _time_precision(unit: str) -> int:
    return {"s": 0, "ms": 3, "us": 6, "ns": 9}[unit]


def from_arrow(pa_type: pa.DataType, nullable: bool = True, ids: FieldIdCounter | None = None) -> DataType:
    """Paimon type of an Arrow type; ROW fields take ids from ``ids`` (a fresh counter from 0 if None).

    Raises SchemaError for Arrow types Paimon cannot store (unsigned ints, float16, null, ...).
    """
    if ids is None:
        ids = FieldIdCounter()
    t = pa.types
    if t.is_dictionary(pa_type):
        return from_arrow(pa_type.value_type, nullable, ids)
    if t.is_boolean(pa_type):
        return BooleanType(nullable=nullable)
    if t.is_unsigned_integer(pa_type):
        raise SchemaError(f"Arrow type {pa_type} is unsigned; Paimon has no unsigned integers")
    simple = {
        pa.int8(): TinyIntType,
        pa.int16(): SmallIntType,
        pa.int32(): IntType,
        pa.int64(): BigIntType,
        pa.float32(): FloatType,
        pa.float64(): DoubleType,
    }.get(pa_type)
    if simple is not None:
        return simple(nullable=nullable)
    if t.is_decimal(pa_type):
        if pa_type.precision > MAX_DECIMAL_PRECISION:
            raise SchemaError(f"Arrow type {pa_type} exceeds Paimon's maximum decimal precision 38")
        return DecimalType(pa_type.precision, pa_type.scale, nullable=nullable)
    if t.is_string(pa_type) or t.is_large_string(pa_type) or t.is_string_view(pa_type):
        return string_type(nullable)
    if t.is_binary(pa_type) or t.is_large_binary(pa_type) or t.is_binary_view(pa_type):
        return bytes_type(nullable)
    if t.is_fixed_size_binary(pa_type):
        return BinaryType(pa_type.byte_width, nullable=nullable)
    if t.is_date(pa_type):
        return DateType(nullable=nullable)
    if t.is_time(pa_type):
        return TimeType(_time_precision(pa_type.unit), nullable=nullable)
    if t.is_timestamp(pa_type):
        precision = _time_precision(pa_type.unit)
        if pa_type.tz is not None:
            return LocalZonedTimestampType(precision, nullable=nullable)
        return TimestampType(precision, nullable=nullable)
    if t.is_list(pa_type) or t.is_large_list(pa_type) or t.is_fixed_size_list(pa_type):
        vf = pa_type.value_field
        return ArrayType(from_arrow(vf.type, vf.nullable, ids), nullable=nullable)
    if t.is_map(pa_type):
        kf, itf = pa_type.key_field, pa_type.item_field
        key = from_arrow(kf.type, kf.nullable, ids)
        return MapType(key, from_arrow(itf.type, itf.nullable, ids), nullable=nullable)
    if t.is_struct(pa_type):
        if pa_type.num_fields == 0:
            # Parquet cannot store a group without fields: refused here, not mid-write
            raise SchemaError(f"Arrow type {pa_type} has no fields; a ROW needs at least one")
        fields = []
        for child in pa_type:
            # Pre-order: the field takes its id before its own nested fields do (§2.2).
            fid = ids.take()
            fields.append(DataField(fid, child.name, from_arrow(child.type, child.nullable, ids)))
        return RowType(tuple(fields), nullable=nullable)
    raise SchemaError(f"Arrow type {pa_type} has no Paimon equivalent")


def fields_from_arrow_schema(schema: pa.Schema, start_id: int = 0) -> tuple[list[DataField], int]:
    """DataFields for an Arrow schema, ids depth-first from ``start_id``; also returns the highest id."""
    ids = FieldIdCounter(start_id)
    fields: list[DataField] = []
    for f in schema:
        fid = ids.take()
        fields.append(DataField(fid, f.name, from_arrow(f.type, f.nullable, ids)))
    return fields, ids.highest


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
