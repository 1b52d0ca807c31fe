"""Avro schemas with their records named by their path from the root, for matching by field names.

Avro resolution matches records by name, Paimon by field names only: every writer names its
records differently (Java's ``org.apache.paimon.avro.generated.record__FILE``, pypaimon's and
paimon-rust's own). `path_named` renames every record (enum, fixed) of a schema after its path
(``record._FILE._KEY_STATS``), inlines named references and drops logical types, keeping the
binary encoding: a writer schema and our reader schema then resolve field by field, and
fastavro's messages name the field.
"""

from __future__ import annotations

import json
from typing import Any

from lake_assets.formats.avro_container import AvroError, strip_logical_types

__all__ = ["path_named"]

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_ROOT = "record"


def _named_types(schema: Any, namespace: str, out: dict[str, Any]) -> dict[str, Any]:
    """Every named type of ``schema`` by full and by short name, so references resolve anywhere."""
    if isinstance(schema, list):
        for branch in schema:
            _named_types(branch, namespace, out)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "enum", "fixed"):
            name = str(schema.get("name", ""))
            ns = str(schema.get("namespace", namespace))
            full = name if "." in name or not ns else f"{ns}.{name}"
            out[full] = out[full.rsplit(".", 1)[-1]] = schema
            inner = full.rsplit(".", 1)[0] if "." in full else ""
            for field in schema.get("fields") or ():
                if isinstance(field, dict):
                    _named_types(field.get("type"), inner, out)
        elif kind == "array":
            _named_types(schema.get("items"), namespace, out)
        elif kind == "map":
            _named_types(schema.get("values"), namespace, out)
    return out


def _by_path(schema: Any, path: str, named: dict[str, Any], *, reader: bool, seen: frozenset[str]) -> Any:
    """``schema`` with the same binary encoding, records (enums, fixed) named by ``path``, named
    references inlined and logical types dropped. ``reader``: keep field defaults and widen ``int``
    to ``long`` (a writer's int or long reads as a Python int either way)."""
    if isinstance(schema, list):
        return [_by_path(b, path, named, reader=reader, seen=seen) for b in schema]
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return "long" if reader and schema == "int" else schema
        ref = named.get(schema)
        if ref is None or schema in seen:  # manifests have no recursive types
            raise AvroError(f"unknown or recursive named type {schema!r} at {path}")
        return _by_path(ref, path, named, reader=reader, seen=seen | {schema})
    if not isinstance(schema, dict):
        raise AvroError(f"bad Avro type {json.dumps(schema)} at {path}")
    kind = schema.get("type")
    if kind == "record":
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise AvroError(f"{path} is a record without fields")
        out_fields = []
        for f in fields:
            name = f["name"]
            field = {"name": name, "type": _by_path(f["type"], f"{path}.{name}", named, reader=reader, seen=seen)}
            if reader and "default" in f:
                field["default"] = f["default"]
            out_fields.append(field)
        return {"type": "record", "name": path, "fields": out_fields}
    if kind == "array":
        return {"type": "array", "items": _by_path(schema["items"], f"{path}.item", named, reader=reader, seen=seen)}
    if kind == "map":
        return {"type": "map", "values": _by_path(schema["values"], f"{path}.value", named, reader=reader, seen=seen)}
    if kind in ("enum", "fixed"):
        return {**strip_logical_types(schema), "name": path, "namespace": ""}
    return _by_path(kind, path, named, reader=reader, seen=seen)  # {"type": "long", "logicalType": ...}


def path_named(schema: Any, *, reader: bool = False) -> Any:
    """``schema`` with every record named by its path from the root (see the module docs);
    ``reader``: keep field defaults and read ``int`` as ``long``."""
    return _by_path(schema, _ROOT, _named_types(schema, "", {}), reader=reader, seen=frozenset())
