"""Avro schemas of manifests, manifest lists and index manifests, and reading records by them.

The ``*_SCHEMA`` constants are the writer schemas (Java's names, field order and types). Files of
other writers (Java 0.9 and 1.x, pypaimon, paimon-rust) differ in record names, optional fields and
nullable wrappers; they are read by the rules of Avro schema resolution against a reader schema
derived from ours: fields match by name, writer fields we do not know are skipped, optional fields
a writer lacks read as None, and a missing or null required field fails. Resolution is worked out
once per writer schema (``avro_resolution``) where it needs no per-value work beyond null checks
and defaults; other writer schemas go through fastavro's per-record resolution, whose failure is
the error naming the file.

Two things fastavro's resolution cannot express, kept here as small custom parts:

* Avro matches records by name, Paimon by field names only (every writer names its records
  differently): both schemas get their records renamed by their path from the root
  (``record._FILE._KEY_STATS``), which also makes fastavro's messages name the field;
* its errors name types, not where a null met a required field: on failure the file is decoded
  once more without resolution to name the record and field.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
from fastavro.read import SchemaResolutionError

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.avro_container import AvroError, read_container, strip_logical_types
from lake_assets.formats.avro_resolution import UnexpectedNull, projection_for

__all__ = [
    "INDEX_MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_FILE_META_SCHEMA",
    "AvroSchema",
    "read_records",
]

# --------------------------------------------------------------------------------------- avro schemas

_RECORD = "org.apache.paimon.avro.generated.record"


def _opt(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None}


def _req(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": avro_type}


def _stats_schema(record_name: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": record_name,
        "fields": [
            _req("_MIN_VALUES", "bytes"),
            _req("_MAX_VALUES", "bytes"),
            _opt("_NULL_COUNTS", {"type": "array", "items": ["null", "long"]}),
        ],
    }


def _strings() -> dict[str, Any]:
    return {"type": "array", "items": "string"}


_FILE_RECORD = f"{_RECORD}__FILE"

MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": _RECORD,
    "fields": [
        _req("_VERSION", "int"),
        _req("_KIND", "int"),
        _req("_PARTITION", "bytes"),
        _req("_BUCKET", "int"),
        _req("_TOTAL_BUCKETS", "int"),
        _req(
            "_FILE",
            {
                "type": "record",
                "name": _FILE_RECORD,
                "fields": [
                    _req("_FILE_NAME", "string"),
                    _req("_FILE_SIZE", "long"),
                    _req("_ROW_COUNT", "long"),
                    _req("_MIN_KEY", "bytes"),
                    _req("_MAX_KEY", "bytes"),
                    _req("_KEY_STATS", _stats_schema(f"{_FILE_RECORD}__KEY_STATS")),
                    _req("_VALUE_STATS", _stats_schema(f"{_FILE_RECORD}__VALUE_STATS")),
                    _req("_MIN_SEQUENCE_NUMBER", "long"),
                    _req("_MAX_SEQUENCE_NUMBER", "long"),
                    _req("_SCHEMA_ID", "long"),
                    _req("_LEVEL", "int"),
                    _req("_EXTRA_FILES", _strings()),
                    _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
                    _opt("_DELETE_ROW_COUNT", "long"),
                    _opt("_EMBEDDED_FILE_INDEX", "bytes"),
                    _opt("_FILE_SOURCE", "int"),
                    _opt("_VALUE_STATS_COLS", _strings()),
                    _opt("_EXTERNAL_PATH", "string"),
                    _opt("_FIRST_ROW_ID", "long"),
                    _opt("_WRITE_COLS", _strings()),
                    _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
                ],
            },
        ),
    ],
}
"""Writer schema of a manifest (Java's names, field order and types)."""

MANIFEST_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": _RECORD,
    "fields": [
        _req("_VERSION", "int"),
        _req("_FILE_NAME", "string"),
        _req("_FILE_SIZE", "long"),
        _req("_NUM_ADDED_FILES", "long"),
        _req("_NUM_DELETED_FILES", "long"),
        _req("_PARTITION_STATS", _stats_schema(f"{_RECORD}__PARTITION_STATS")),
        _req("_SCHEMA_ID", "long"),
        _opt("_MIN_BUCKET", "int"),
        _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"),
        _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"),
        _opt("_MAX_ROW_ID", "long"),
    ],
}
"""Writer schema of a manifest list (the 13 Java fields, without pypaimon's two extras)."""

INDEX_MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": _RECORD,
    "fields": [
        _req("_VERSION", "int"),
        _req("_KIND", "int"),
        _req("_PARTITION", "bytes"),
        _req("_BUCKET", "int"),
        _req("_INDEX_TYPE", "string"),
        _req("_FILE_NAME", "string"),
        _req("_FILE_SIZE", "long"),
        _req("_ROW_COUNT", "long"),
        _opt(
            "_DELETIONS_VECTORS_RANGES",
            {
                "type": "array",
                "items": {
                    "type": "record",
                    # An array's element row takes the array field's row name, as in Java.
                    "name": f"{_RECORD}__DELETIONS_VECTORS_RANGES",
                    "fields": [
                        _req("f0", "string"),
                        _req("f1", "int"),
                        _req("f2", "int"),
                        _opt("_CARDINALITY", "long"),
                    ],
                },
            },
        ),
        _opt("_EXTERNAL_PATH", "string"),
        _opt(
            "_GLOBAL_INDEX",
            {
                "type": "record",
                "name": f"{_RECORD}__GLOBAL_INDEX",
                "fields": [
                    _req("_ROW_RANGE_START", "long"),
                    _req("_ROW_RANGE_END", "long"),
                    _req("_INDEX_FIELD_ID", "int"),
                    _opt("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
                    _opt("_INDEX_META", "bytes"),
                    _opt("_SOURCE_META", "bytes"),
                ],
            },
        ),
    ],
}
"""Writer schema of an index manifest."""


# ------------------------------------------------------------------------------- schema resolution

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


def _path_named(schema: Any, *, reader: bool = False) -> Any:
    return _by_path(schema, _ROOT, _named_types(schema, "", {}), reader=reader, seen=frozenset())


class AvroSchema:
    """One of the writer schemas above, prepared once for encoding and for reading."""

    def __init__(self, schema: dict[str, Any], version: int) -> None:
        #: Only version of the ``_VERSION`` field this reader accepts.
        self.version = version
        self.json = json.dumps(schema, separators=(",", ":")).encode()
        # Parsed once: encoding must not redo schema work per call or per entry.
        self.parsed: Any = fastavro.parse_schema(strip_logical_types(schema))
        reader = _path_named(schema, reader=True)
        self.reader_json = json.dumps(reader, sort_keys=True)
        self.reader: Any = fastavro.parse_schema(reader)


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


def _explain(plain: bytes, writer: Any, reader: Any, error: Exception) -> str:
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


class _Unreadable(Exception):
    """The writer schema or a record cannot be read as the reader schema (the message says why)."""


def _resolved(plain: bytes, writer: Any, schema: AvroSchema) -> list[Any]:
    """Records resolved one by one by fastavro against the reader schema (its messages explained)."""
    try:
        return list(fastavro.reader(io.BytesIO(plain), reader_schema=schema.reader))
    except SchemaResolutionError as exc:
        raise _Unreadable(_explain(plain, writer, schema.reader, exc)) from exc


def _decoded(plain: bytes, writer: Any, schema: AvroSchema, resolve_each_record: bool) -> list[Any]:
    if resolve_each_record:
        return _resolved(plain, writer, schema)
    projection = projection_for(writer, schema.reader_json)
    if projection is None:
        return _resolved(plain, writer, schema)
    # Decoded with the writer schema alone, then projected by a plan made once per writer schema:
    # fastavro's resolution per record costs as much as the decoding itself.
    records = list(fastavro.reader(io.BytesIO(plain)))
    try:
        return projection.apply(records)
    except UnexpectedNull:
        return _resolved(plain, writer, schema)  # fails, naming the record and the field


def read_records(
    data: bytes, name: str, schema: AvroSchema, *, resolve_each_record: bool = False
) -> list[dict[str, Any]]:
    """Records of a container read as ``schema``, with their ``_VERSION`` checked; ``name`` only
    labels errors (CorruptMetadataError). ``resolve_each_record`` reads through fastavro's
    per-record resolution instead of the plan (the reference the plan is tested against)."""
    records: list[Any]
    try:
        writer, plain = read_container(data, _path_named)
        records = _decoded(plain, _path_named(writer), schema, resolve_each_record)
    except _Unreadable as exc:
        raise CorruptMetadataError(f"Cannot decode Avro file {name}: {exc}") from exc
    except Exception as exc:  # fastavro, codecs and json raise many types; callers get one
        raise CorruptMetadataError(f"Cannot decode Avro file {name}: {exc}") from exc
    for rec in records:
        if rec["_VERSION"] != schema.version:
            raise CorruptMetadataError(
                f"Cannot decode Avro file {name}: unsupported _VERSION {rec['_VERSION']} (expected {schema.version})"
            )
    return records
