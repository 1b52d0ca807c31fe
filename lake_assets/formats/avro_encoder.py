"""Avro binary encoding of records by a schema compiled once into nested encoder functions.

fastavro's generic writer resolves every union by checking the value against each branch and
walks the schema per record: about 20 µs per manifest entry, most of a small commit's encoding.
The manifest schemas (`manifest_schemas`) use a small part of Avro: records, arrays, primitives and
``["null", X]`` unions, so each is compiled once into closures that append a value's bytes to a
buffer. The bytes are the Avro binary encoding fastavro writes for the same records
(`tests/unit/test_avro_encoder.py` compares them, blocks and sync markers included). A schema
using anything else is refused by `compile_schema` (`UnsupportedSchema`): its callers keep
fastavro for it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Encoder", "UnsupportedSchema", "compile_schema", "write_long"]

# Appends the encoding of one value to the buffer.
Encoder = Callable[[bytearray, Any], None]


class UnsupportedSchema(Exception):
    """The schema uses an Avro feature the compiled encoders do not cover."""


def write_long(out: bytearray, value: int) -> None:
    """Zigzag varint of an int or long (Avro's ``long`` and ``int`` encoding)."""
    n = (value << 1) ^ (value >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _long(out: bytearray, value: Any) -> None:
    if not isinstance(value, int) or not -(2**63) <= value < 2**63:
        raise TypeError(f"{value!r} is not an Avro long")
    write_long(out, value)


def _int(out: bytearray, value: Any) -> None:
    if not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise TypeError(f"{value!r} is not an Avro int")
    write_long(out, value)


def _bytes(out: bytearray, value: Any) -> None:
    if not isinstance(value, bytes | bytearray):
        raise TypeError(f"{value!r} is not Avro bytes")
    write_long(out, len(value))
    out += value


def _string(out: bytearray, value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not an Avro string")
    raw = value.encode()
    write_long(out, len(raw))
    out += raw


def _null(out: bytearray, value: Any) -> None:
    if value is not None:
        raise TypeError(f"{value!r} is not Avro null")


def _boolean(out: bytearray, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{value!r} is not an Avro boolean")
    out.append(1 if value else 0)


_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")


def _float(out: bytearray, value: Any) -> None:
    out += _FLOAT.pack(value)


def _double(out: bytearray, value: Any) -> None:
    out += _DOUBLE.pack(value)


_PRIMITIVES: dict[str, Encoder] = {
    "null": _null, "boolean": _boolean, "int": _int, "long": _long, "float": _float, "double": _double,
    "bytes": _bytes, "string": _string,
}


def _array(items: Encoder) -> Encoder:
    def enc(out: bytearray, value: Any) -> None:
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            raise TypeError(f"{value!r} is not an Avro array")
        if value:  # one block of every item, then the empty block that ends the array
            write_long(out, len(value))
            for item in value:
                items(out, item)
        out.append(0)
    return enc


def _nullable(inner: Encoder) -> Encoder:
    # ["null", X]: branch 0 for None, else branch 1 and the value (as fastavro picks them)
    def enc(out: bytearray, value: Any) -> None:
        if value is None:
            out.append(0)
        else:
            out.append(2)  # zigzag of branch index 1
            inner(out, value)
    return enc


def _record(fields: list[tuple[str, bool, Any, Encoder]]) -> Encoder:
    def enc(out: bytearray, value: Any) -> None:
        for name, has_default, default, field in fields:
            # a field the record lacks takes its default, as fastavro's writer does
            field(out, value.get(name, default) if has_default else value[name])
    return enc


def compile_schema(schema: Any) -> Encoder:
    """The encoder of values of ``schema`` (parsed JSON, logical types ignored)."""
    if isinstance(schema, str):
        enc = _PRIMITIVES.get(schema)
        if enc is None:
            raise UnsupportedSchema(f"named type reference {schema!r}")
        return enc
    if isinstance(schema, list):
        if len(schema) == 2 and schema[0] == "null":
            return _nullable(compile_schema(schema[1]))
        raise UnsupportedSchema(f"union {schema!r}")
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "record":
            fields = [(f["name"], "default" in f, f.get("default"), compile_schema(f["type"]))
                      for f in schema["fields"]]
            return _record(fields)
        if kind == "array":
            return _array(compile_schema(schema["items"]))
        if isinstance(kind, str) and kind in _PRIMITIVES:
            return _PRIMITIVES[kind]  # {"type": "long", "logicalType": ...}: the plain encoding
        if isinstance(kind, list | dict):
            return compile_schema(kind)
    raise UnsupportedSchema(f"schema {schema!r}")
