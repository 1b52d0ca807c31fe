"""Manifests of other writers' schemas: the resolution plan decodes what per-record resolution does.

Writer schemas are real ones: Paimon Java 0.9's (``tests/data/java09_manifest_schemas.json``, the
headers of files the Java oracle wrote) and pypaimon 2.1's (the checked-in vectors). Every file is
decoded both through the plan and through fastavro's per-record resolution
(``resolve_each_record=True``), records and model objects compared.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats import manifest_codec as codec
from lake_assets.formats.avro_container import read_container, strip_logical_types, write_container
from lake_assets.formats.avro_record_paths import path_named
from lake_assets.formats.avro_resolution import projection_for
from lake_assets.formats.manifest_schemas import AvroSchema, read_records
from lake_assets.spec.manifest import (
    DataFileMeta,
    FileKind,
    FileSource,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from tests.vectors import VECTORS_DIR

JAVA = json.loads((Path(__file__).resolve().parents[1] / "data" / "java09_manifest_schemas.json").read_text())

_STATS = SimpleStats(b"\x00" * 8, b"\x01" * 8, (0, None))


def _entries(n: int = 6) -> list[ManifestEntry]:
    return [
        ManifestEntry(
            FileKind.ADD if i % 2 else FileKind.DELETE, bytes([i]) * 8, i % 3, 3,
            DataFileMeta(
                f"data-{i}.parquet", 100 + i, 10 + i, b"a", b"z", _STATS, SimpleStats.EMPTY, i, i + 9, 0, i % 5,
                (f"data-{i}.parquet.index",) if i == 3 else (), 1_700_000_000_000 + i, i % 2, None,
                FileSource.COMPACT if i % 2 else FileSource.APPEND, None, None, None, None, None,
            ),
        )
        for i in range(n)
    ]


def _metas(n: int = 5) -> list[ManifestFileMeta]:
    return [ManifestFileMeta(f"manifest-{i}", 2000 + i, 3, 1, _STATS, 0, None, None, None, None, None, None)
            for i in range(n)]


def _schema_of(decode: Callable[..., Any]) -> AvroSchema:
    return codec._ENTRY if decode is codec.decode_manifest_entries else codec._LIST


def _as_writer(ours: bytes, schema: AvroSchema, writer_schema: Any) -> bytes:
    """``ours`` rewritten under ``writer_schema`` (fields it lacks left out, as that writer would)."""
    raw = read_records(ours, "ours", schema)
    parsed = fastavro.parse_schema(strip_logical_types(writer_schema))
    return write_container(parsed, json.dumps(writer_schema).encode(), raw, "deflate", 1)


def _both_ways(data: bytes, name: str, schema: AvroSchema, convert: Callable[[dict[str, Any]], Any]) -> list[Any]:
    """Records of ``data`` decoded by the plan, after checking that per-record resolution decodes
    the same records and the same model objects."""
    fast = read_records(data, name, schema)
    reference = read_records(data, name, schema, resolve_each_record=True)
    assert fast == reference
    assert codec._convert(fast, name, convert) == codec._convert(reference, name, convert)
    return fast


def _planned(data: bytes, schema: AvroSchema) -> bool:
    """Whether ``data``'s writer schema is read by a plan (not by per-record resolution)."""
    writer, _ = read_container(data, path_named)
    return projection_for(path_named(writer), schema.reader_json) is not None


# ---------------------------------------------------------------------------------- Paimon Java 0.9


def test_java09_manifest_decodes_through_a_plan() -> None:
    entries = _entries()
    data = _as_writer(codec.encode_manifest_entries(entries), codec._ENTRY, JAVA["manifest"])
    assert _planned(data, codec._ENTRY)
    _both_ways(data, "manifest-java", codec._ENTRY, codec._entry_from)
    # Java 0.9 has no _VALUE_STATS_COLS .. _WRITE_COLS_SEQUENCES: they read as None (all None here).
    assert codec.decode_manifest_entries(data, "manifest-java") == entries


def test_java09_manifest_list_decodes_through_a_plan() -> None:
    metas = _metas()
    data = _as_writer(codec.encode_manifest_list(metas), codec._LIST, JAVA["manifest_list"])
    assert _planned(data, codec._LIST)
    records = _both_ways(data, "manifest-list-java", codec._LIST, codec._meta_from)
    assert all(r["_MIN_BUCKET"] is None and r["_MAX_ROW_ID"] is None for r in records)
    assert codec.decode_manifest_list(data, "manifest-list-java") == metas


# ------------------------------------------------------------------------------------ pypaimon 2.1


def _vector_files() -> list[tuple[Path, AvroSchema, Callable[[dict[str, Any]], Any]]]:
    out: list[tuple[Path, AvroSchema, Callable[[dict[str, Any]], Any]]] = []
    for path in sorted(VECTORS_DIR.glob("*/warehouse/*.db/*/manifest/*")):
        if path.name.startswith("manifest-list-"):
            out.append((path, codec._LIST, codec._meta_from))
        elif path.name.startswith("index-manifest-"):
            out.append((path, codec._INDEX, codec._index_entry_from))
        else:
            out.append((path, codec._ENTRY, codec._entry_from))
    return out


VECTOR_FILES = _vector_files()


def test_pypaimon_vectors_include_manifest_lists() -> None:
    assert sum(1 for _, s, _ in VECTOR_FILES if s is codec._LIST) >= 4


@pytest.mark.parametrize(("path", "schema", "convert"), VECTOR_FILES, ids=lambda v: getattr(v, "name", ""))
def test_pypaimon_files_decode_like_resolution(
    path: Path, schema: AvroSchema, convert: Callable[[dict[str, Any]], Any]
) -> None:
    data = path.read_bytes()
    # pypaimon's manifest lists carry two fields Java's lack (_TOTAL_BUCKETS, _EXTRA_FILES): a plan
    # drops them, so these files no longer take the per-record resolution.
    assert _planned(data, schema)
    records = _both_ways(data, path.name, schema, convert)
    assert all("_TOTAL_BUCKETS" not in r for r in records) or schema is codec._ENTRY


# ---------------------------------------------------------------------- other writer schema shapes


def _java_entry() -> dict[str, Any]:
    schema: dict[str, Any] = copy.deepcopy(JAVA["manifest"])
    return schema


def _file_field(schema: dict[str, Any]) -> dict[str, Any]:
    field: dict[str, Any] = next(f for f in schema["fields"] if f["name"] == "_FILE")
    return field


def _file_fields(schema: dict[str, Any]) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = _file_field(schema)["type"]["fields"]
    return fields


def _reordered(schema: dict[str, Any]) -> dict[str, Any]:
    schema["fields"].reverse()
    _file_fields(schema).reverse()
    return schema


def _extra_fields(schema: dict[str, Any]) -> dict[str, Any]:
    schema["fields"].insert(1, {"name": "_FUTURE", "type": ["null", "string"], "default": None})
    _file_fields(schema).append({"name": "_FUTURE_LIST", "type": {"type": "array", "items": "long"}, "default": [7]})
    return schema


def _nullable_records(schema: dict[str, Any]) -> dict[str, Any]:
    """Old Java's shape: nested rows and array items as ["null", T] unions."""
    fields = _file_fields(schema)
    _file_field(schema)["type"] = ["null", _file_field(schema)["type"]]
    for f in fields:
        if f["name"] in ("_KEY_STATS", "_VALUE_STATS"):
            f["type"] = ["null", f["type"]]
        if f["name"] == "_EXTRA_FILES":
            f["type"]["items"] = ["null", "string"]
    return schema


def _renamed(schema: dict[str, Any]) -> dict[str, Any]:
    schema["name"], schema["namespace"] = "ManifestEntry", "org.apache.paimon.manifest"
    _file_field(schema)["type"]["name"] = "DataFileMeta"
    return schema


SHAPES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "reordered": _reordered,
    "extra-fields": _extra_fields,
    "nullable-records": _nullable_records,
    "renamed": _renamed,
}


@pytest.mark.parametrize("shape", SHAPES)
def test_writer_schema_shapes_decode_like_resolution(shape: str) -> None:
    entries = _entries()
    data = _as_writer(codec.encode_manifest_entries(entries), codec._ENTRY, SHAPES[shape](_java_entry()))
    assert _planned(data, codec._ENTRY)
    _both_ways(data, f"manifest-{shape}", codec._ENTRY, codec._entry_from)
    assert codec.decode_manifest_entries(data, f"manifest-{shape}") == entries


def test_plan_is_made_once_per_writer_schema() -> None:
    data = _as_writer(codec.encode_manifest_entries(_entries()), codec._ENTRY, _extra_fields(_java_entry()))
    writer, _ = read_container(data, path_named)
    first = projection_for(path_named(writer), codec._ENTRY.reader_json)
    assert first is not None and not first.identity
    assert projection_for(path_named(writer), codec._ENTRY.reader_json) is first


# --------------------------------------------------------------------------- refused, file named


def _raw(schema: dict[str, Any], records: list[dict[str, Any]]) -> bytes:
    parsed = fastavro.parse_schema(strip_logical_types(schema))
    return write_container(parsed, json.dumps(schema).encode(), records, "null", 1)


def _java_records() -> list[dict[str, Any]]:
    return read_records(codec.encode_manifest_entries(_entries(2)), "ours", codec._ENTRY)


def test_incompatible_field_type_is_refused_naming_file_and_field() -> None:
    schema = _java_entry()
    _file_fields(schema)[1]["type"] = "string"  # _FILE_SIZE
    records = _java_records()
    for r in records:
        r["_FILE"]["_FILE_SIZE"] = str(r["_FILE"]["_FILE_SIZE"])
    with pytest.raises(CorruptMetadataError, match=r"manifest-bad-type: _FILE\._FILE_SIZE has Avro type string"):
        codec.decode_manifest_entries(_raw(schema, records), "manifest-bad-type")


def test_missing_required_field_is_refused_naming_file_and_field() -> None:
    schema = _java_entry()
    _file_field(schema)["type"]["fields"] = [f for f in _file_fields(schema) if f["name"] != "_ROW_COUNT"]
    data = _raw(schema, _java_records())
    assert not _planned(data, codec._ENTRY)
    with pytest.raises(CorruptMetadataError, match=r"manifest-no-rows: .*_ROW_COUNT"):
        codec.decode_manifest_entries(data, "manifest-no-rows")


@pytest.mark.parametrize("where", ["_FILE", "_KEY_STATS", "_EXTRA_FILES[]"])
def test_null_in_a_required_place_is_refused_naming_record_and_field(where: str) -> None:
    schema = _nullable_records(_java_entry())
    records = _java_records()
    f = records[1]["_FILE"]
    if where == "_FILE":
        records[1]["_FILE"] = None
    elif where == "_KEY_STATS":
        f["_KEY_STATS"] = None
    else:
        f["_EXTRA_FILES"] = ["x.index", None]
    data = _raw(schema, records)
    assert _planned(data, codec._ENTRY)  # the plan's null check finds it; resolution names it
    expected = "_FILE" if where == "_FILE" else f"_FILE.{where}"
    message = f"manifest-null: record 1 has null required field {re.escape(expected)}"
    with pytest.raises(CorruptMetadataError, match=message):
        codec.decode_manifest_entries(data, "manifest-null")
