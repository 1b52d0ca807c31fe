"""Avro writer schemas of manifests, manifest lists and index manifests, prepared for reading.

The ``*_SCHEMA`` constants are the writer schemas (Java's names, field order and types). Each is
prepared once as an `AvroSchema`: parsed for encoding, and turned into the reader schema that
files of other writers are resolved against (`manifest_records.read_records`, re-exported here:
records named by path, fields matched by name, ``int`` read as ``long``).
"""

from __future__ import annotations

import json
from typing import Any

import fastavro

from lake_assets.formats.avro_container import strip_logical_types
from lake_assets.formats.avro_record_paths import path_named
from lake_assets.formats.manifest_records import read_records

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


class AvroSchema:
    """One of the writer schemas above, prepared once for encoding and for reading."""

    def __init__(self, schema: dict[str, Any], version: int) -> None:
        #: Only version of the ``_VERSION`` field this reader accepts.
        self.version = version
        self.json = json.dumps(schema, separators=(",", ":")).encode()
        # Parsed once: encoding must not redo schema work per call or per entry.
        self.parsed: Any = fastavro.parse_schema(strip_logical_types(schema))
        reader = path_named(schema, reader=True)
        self.reader_json = json.dumps(reader, sort_keys=True)
        self.reader: Any = fastavro.parse_schema(reader)

