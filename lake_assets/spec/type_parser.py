"""Parsing Paimon's type JSON (docs/format.md §2.3) into the `lake_assets.spec.data_types` model.

Atomic types are SQL-like strings (``"DECIMAL(10, 2) NOT NULL"``, read by a small recursive-descent
parser); ARRAY / MAP / MULTISET / ROW are JSON objects. Malformed input is `CorruptMetadataError`
(it comes from a schema file); types of newer Paimon versions are `UnsupportedFeatureError`.
"""

from __future__ import annotations

import re
from typing import Any

from lake_assets.errors import CorruptMetadataError, SchemaError, UnsupportedFeatureError
from lake_assets.spec.data_types import (
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataField,
    DataType,
    DateType,
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
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    bytes_type,
    string_type,
)

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


# What some of them are, for the refusal: data-evolution tables keep them in files of their own.
_NEWER_TYPE_NOTES = {
    "BLOB": "a newer Paimon type kept in blob files (.blob) of a data-evolution table",
    "VECTOR": "a newer Paimon type kept in vector-store files of a data-evolution table",
}


def _refuse_newer_type(word: str) -> None:
    name = word.upper()
    if name in NEWER_PAIMON_TYPES:
        note = _NEWER_TYPE_NOTES.get(name, "a newer Paimon type")
        raise UnsupportedFeatureError(
            f"type {name} ({note}) is not supported; use Paimon Java HEAD or pypaimon for a table with such a "
            "column")


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
