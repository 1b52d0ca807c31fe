"""Why a manifest cannot be read as our reader schema, naming the field (fastavro names only types).

Either a writer field's type cannot resolve to ours (a string where we read a number: the field
and both types are named) or a record holds a null where we require a value (the file is decoded
once more without resolution to name the record and field).
"""

from __future__ import annotations

import io
from typing import Any

import fastavro

__all__ = ["explain_mismatch"]


def _first_null(value: Any, schema: Any, path: tuple[str, ...]) -> tuple[str, ...] | None:
    """Path of the first null where the reader schema requires a value (None if there is none)."""
    if isinstance(schema, list):
        if value is None:
            return None
        schema = next(b for b in schema if b != "null")
    if value is None:
        return path
    if isinstance(schema, dict) and schema["type"] == "record" and isinstance(value, dict):
        for field in schema["fields"]:
            if field["name"] in value:
                found = _first_null(value[field["name"]], field["type"], (*path, field["name"]))
                if found is not None:
                    return found
    elif isinstance(schema, dict) and schema["type"] == "array" and isinstance(value, list):
        for item in value:
            found = _first_null(item, schema["items"], (*path, "[]"))
            if found is not None:
                return found
    return None


# Writer/reader types fastavro resolves into each other, by family (for messages only).
_FAMILY = {"int": "number", "long": "number", "float": "number", "double": "number", "string": "text",
           "bytes": "text"}


def _type_name(schema: Any) -> str:
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return _type_name(branches[0]) if len(branches) == 1 else "union"
    return str(schema["type"] if isinstance(schema, dict) else schema)


def _family(schema: Any) -> str:
    kind = _type_name(schema)
    return _FAMILY.get(kind, kind)


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path).replace(".[]", "[]")


def _first_type_mismatch(writer: Any, reader: Any, path: tuple[str, ...]) -> str | None:
    """Where the writer's type cannot resolve to the reader's, as "field has X, expected Y"."""
    wf, rf = _family(writer), _family(reader)
    if "union" in (wf, rf):
        return None  # several branches: fastavro's own message says which
    if wf != rf:
        where = _dotted(path) or "the top-level record"
        return f"{where} has Avro type {_type_name(writer)}, expected {_type_name(reader)}"
    w = next(b for b in writer if b != "null") if isinstance(writer, list) else writer
    r = next(b for b in reader if b != "null") if isinstance(reader, list) else reader
    if rf == "record":
        by_name = {f["name"]: f["type"] for f in w["fields"]}
        for field in r["fields"]:
            if field["name"] in by_name:
                found = _first_type_mismatch(by_name[field["name"]], field["type"], (*path, field["name"]))
                if found is not None:
                    return found
    elif rf in ("array", "map"):
        key = "items" if rf == "array" else "values"
        return _first_type_mismatch(w[key], r[key], (*path, "[]"))
    return None


def explain_mismatch(plain: bytes, writer: Any, reader: Any, error: Exception) -> str:
    """Why resolution failed, naming the field whose type differs or where a null met a required
    field (fastavro's messages name only types)."""
    mismatch = _first_type_mismatch(writer, reader, ())
    if mismatch is not None:
        return mismatch
    try:
        for i, rec in enumerate(fastavro.reader(io.BytesIO(plain))):
            where = _first_null(rec, reader, ())
            if where == ():
                return f"record {i} is null"
            if where is not None:
                return f"record {i} has null required field {_dotted(where)}"
    except Exception:  # the resolution error below says enough
        pass
    return f"writer schema does not match: {error}"
