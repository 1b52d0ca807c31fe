"""Tests of the manifest model and Avro codec: pypaimon-written vectors, the model, the writer schema
and timestamps (other readers' files: test_manifest_compat.py; damage: test_manifest_corruption.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest

from lake_assets.errors import OptionError
from lake_assets.formats.manifest_codec import (
    avro_codec,
    decode_index_manifest,
    decode_manifest_entries,
    decode_manifest_list,
    encode_index_manifest,
    encode_manifest_entries,
    encode_manifest_list,
)
from lake_assets.formats.manifest_schemas import (
    INDEX_MANIFEST_ENTRY_SCHEMA,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
)
from lake_assets.spec.manifest import (
    EMPTY_ROW,
    DataFileMeta,
    EntryIdentifier,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    manifest_file_meta_for,
    summarize_entries,
)
from tests.unit.manifest_samples import (
    CODECS,
    EPOCH,
    JAVA_RECORD,
    as_list,
    sample_entry,
    sample_file,
    sample_index_entries,
    sample_meta,
    sample_stats,
)
from tests.vectors import VECTORS_DIR

# ------------------------------------------------------------------------------------------ vectors


def _manifest_files() -> list[tuple[str, Path, str]]:
    """(vector, path, kind) of every Avro file in every vector's manifest directory."""
    out = []
    for wh in sorted(VECTORS_DIR.glob("*/warehouse")):
        for path in sorted(wh.glob("*.db/*/manifest/*")):
            name = path.name
            if name.startswith("manifest-list-"):
                kind = "list"
            elif name.startswith("index-manifest-"):
                kind = "index"
            else:
                kind = "entries"
            out.append((wh.parent.name, path, kind))
    return out


VECTOR_FILES = _manifest_files()
DECODERS: dict[str, Callable[[bytes, str], list[Any]]] = {
    "entries": decode_manifest_entries,
    "list": decode_manifest_list,
    "index": decode_index_manifest,
}
ENCODERS: dict[str, Callable[..., bytes]] = {
    "entries": encode_manifest_entries,
    "list": encode_manifest_list,
    "index": encode_index_manifest,
}


def _dump_records(vector: str, name: str) -> list[dict[str, Any]]:
    dump = json.loads((VECTORS_DIR / vector / "metadata_dump.json").read_text())
    return dump[f"manifest/{name}"]["records"]


def _hex(b: bytes | None) -> str | None:
    return None if b is None else "hex:" + b.hex()


def _stats_json(s: SimpleStats) -> dict[str, Any]:
    return {
        "_MIN_VALUES": _hex(s.min_values),
        "_MAX_VALUES": _hex(s.max_values),
        "_NULL_COUNTS": as_list(s.null_counts),
    }


def _millis_iso(ms: int | None) -> str | None:
    # The dumps show fastavro's timestamp-millis datetime, i.e. epoch + ms in UTC.
    return None if ms is None else (EPOCH + dt.timedelta(milliseconds=ms)).isoformat()


def _file_json(f: DataFileMeta) -> dict[str, Any]:
    return {
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_MIN_KEY": _hex(f.min_key),
        "_MAX_KEY": _hex(f.max_key),
        "_KEY_STATS": _stats_json(f.key_stats),
        "_VALUE_STATS": _stats_json(f.value_stats),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id,
        "_LEVEL": f.level,
        "_EXTRA_FILES": list(f.extra_files),
        "_CREATION_TIME": _millis_iso(f.creation_time_ms),
        "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": _hex(f.embedded_file_index),
        "_FILE_SOURCE": f.file_source,
        "_VALUE_STATS_COLS": as_list(f.value_stats_cols),
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": as_list(f.write_cols),
        "_WRITE_COLS_SEQUENCES": as_list(f.write_cols_sequences),
    }


def _entry_json(e: ManifestEntry) -> dict[str, Any]:
    return {
        "_VERSION": 2,
        "_KIND": int(e.kind),
        "_PARTITION": _hex(e.partition),
        "_BUCKET": e.bucket,
        "_TOTAL_BUCKETS": e.total_buckets,
        "_FILE": _file_json(e.file),
    }


def _meta_json(m: ManifestFileMeta) -> dict[str, Any]:
    return {
        "_VERSION": 2,
        "_FILE_NAME": m.file_name,
        "_FILE_SIZE": m.file_size,
        "_NUM_ADDED_FILES": m.num_added_files,
        "_NUM_DELETED_FILES": m.num_deleted_files,
        "_PARTITION_STATS": _stats_json(m.partition_stats),
        "_SCHEMA_ID": m.schema_id,
        "_MIN_BUCKET": m.min_bucket,
        "_MAX_BUCKET": m.max_bucket,
        "_MIN_LEVEL": m.min_level,
        "_MAX_LEVEL": m.max_level,
        "_MIN_ROW_ID": m.min_row_id,
        "_MAX_ROW_ID": m.max_row_id,
    }


def _index_json(e: IndexManifestEntry) -> dict[str, Any]:
    g = e.global_index
    return {
        "_VERSION": 1,
        "_KIND": int(e.kind),
        "_PARTITION": _hex(e.partition),
        "_BUCKET": e.bucket,
        "_INDEX_TYPE": e.index_type,
        "_FILE_NAME": e.file_name,
        "_FILE_SIZE": e.file_size,
        "_ROW_COUNT": e.row_count,
        "_DELETIONS_VECTORS_RANGES": None
        if e.dv_ranges is None
        else [
            {"f0": d.data_file, "f1": d.offset, "f2": d.length, "_CARDINALITY": d.cardinality}
            for d in e.dv_ranges
        ],
        "_EXTERNAL_PATH": e.external_path,
        "_GLOBAL_INDEX": None
        if g is None
        else {
            "_ROW_RANGE_START": g["row_range_start"],
            "_ROW_RANGE_END": g["row_range_end"],
            "_INDEX_FIELD_ID": g["index_field_id"],
            "_EXTRA_FIELD_IDS": as_list(g["extra_field_ids"]),
            "_INDEX_META": _hex(g["index_meta"]),
            "_SOURCE_META": _hex(g["source_meta"]),
        },
    }


TO_JSON: dict[str, Callable[[Any], dict[str, Any]]] = {
    "entries": _entry_json,
    "list": _meta_json,
    "index": _index_json,
}
# pypaimon-only manifest-list fields that Java does not define and the model drops.
PYPAIMON_EXTRAS = {"_TOTAL_BUCKETS", "_EXTRA_FILES"}


def test_vectors_are_present() -> None:
    kinds = {k for _, _, k in VECTOR_FILES}
    assert {v for v, _, _ in VECTOR_FILES} >= {
        "01_append",
        "02_pk_partitioned",
        "03_pk_composite",
        "04_partial_update",
        "05_aggregation",
    }
    assert {"entries", "list"} <= kinds


@pytest.mark.parametrize(("vector", "path", "kind"), VECTOR_FILES, ids=lambda x: getattr(x, "name", str(x)))
def test_vector_decodes_like_dump(vector: str, path: Path, kind: str) -> None:
    decoded = DECODERS[kind](path.read_bytes(), path.name)
    expected = _dump_records(vector, path.name)
    assert len(decoded) == len(expected)
    for obj, want in zip(decoded, expected, strict=True):
        got = TO_JSON[kind](obj)
        if kind == "list":
            assert set(want) - set(got) <= PYPAIMON_EXTRAS
            want = {k: v for k, v in want.items() if k not in PYPAIMON_EXTRAS}
        # Field by field, so a failure names the field.
        assert set(got) == set(want)
        for field in want:
            assert got[field] == want[field], field


@pytest.mark.parametrize(("vector", "path", "kind"), VECTOR_FILES, ids=lambda x: getattr(x, "name", str(x)))
@pytest.mark.parametrize("codec", CODECS)
def test_vector_reencode_roundtrip(vector: str, path: Path, kind: str, codec: str) -> None:
    decoded = DECODERS[kind](path.read_bytes(), path.name)
    data = ENCODERS[kind](decoded, codec)
    assert DECODERS[kind](data, "re-" + path.name) == decoded
    header = fastavro.reader(io.BytesIO(data))
    assert header.codec == codec
    assert header.metadata["avro.codec"] == codec


def test_vector_snapshot_sizes_match_list_sizes() -> None:
    # The manifest-list sizes recorded in the vectors are the real file sizes (sanity of inputs).
    for vector, path, kind in VECTOR_FILES:
        if kind != "list":
            continue
        for meta in decode_manifest_list(path.read_bytes(), path.name):
            assert (path.parent / meta.file_name).stat().st_size == meta.file_size, vector


# ------------------------------------------------------------------------------------ model basics


def test_simple_stats_empty() -> None:
    empty = SimpleStats.EMPTY
    assert empty == SimpleStats(bytes(12), bytes(12), ())
    assert empty.min_values == bytes.fromhex("000000000000000000000000") == EMPTY_ROW


def test_upgrade_and_identifier() -> None:
    e = sample_entry(1, extra_files=("x.index",), external_path="s3://b/x")
    up = e.file.upgrade(3)
    assert up.level == 3 and e.file.level == 0
    assert up == sample_file(1, extra_files=("x.index",), external_path="s3://b/x", level=3)
    ident = e.identifier()
    assert isinstance(ident, EntryIdentifier)
    assert ident == (EMPTY_ROW, 0, 0, "data-1.parquet", ("x.index",), None, "s3://b/x")
    moved = ManifestEntry(FileKind.ADD, e.partition, e.bucket, e.total_buckets, up)
    assert moved.identifier() != ident  # the level is part of the identity
    delete = ManifestEntry(FileKind.DELETE, e.partition, e.bucket, 7, e.file)
    assert delete.identifier() == ident and hash(delete.identifier()) == hash(ident)


def test_summarize_and_manifest_file_meta_for() -> None:
    entries = [
        sample_entry(0, bucket=3, level=2, schema_id=1),
        sample_entry(1, FileKind.DELETE, bucket=1, level=0, schema_id=4),
        sample_entry(2, bucket=5, level=5, schema_id=2),
    ]
    s = summarize_entries(entries)
    assert s == {
        "num_added_files": 2,
        "num_deleted_files": 1,
        "schema_id": 4,
        "min_bucket": 1,
        "max_bucket": 5,
        "min_level": 0,
        "max_level": 5,
        "min_row_id": None,  # row ids are known only when every entry has a first row id
        "max_row_id": None,
    }
    meta = manifest_file_meta_for("manifest-x", 1234, entries, sample_stats(1))
    assert meta == ManifestFileMeta("manifest-x", 1234, 2, 1, sample_stats(1), 4, 1, 5, 0, 5)
    tracked = [dataclasses.replace(e, file=dataclasses.replace(e.file, first_row_id=10 * i, row_count=3))
               for i, e in enumerate(entries)]
    assert (summarize_entries(tracked)["min_row_id"], summarize_entries(tracked)["max_row_id"]) == (0, 22)
    assert summarize_entries([*tracked, entries[0]])["min_row_id"] is None
    with pytest.raises(ValueError):
        summarize_entries([])


def test_avro_codec_mapping() -> None:
    assert avro_codec("zstd") == "zstandard"
    assert avro_codec("ZSTD") == "zstandard"
    assert avro_codec("none") == "null"
    assert avro_codec("null") == "null"
    assert avro_codec("deflate") == "deflate"
    assert avro_codec("snappy") == "snappy"
    with pytest.raises(OptionError):
        avro_codec("lz4")


def test_unknown_codec_on_encode() -> None:
    with pytest.raises(ValueError, match="lz4"):
        encode_manifest_entries([sample_entry()], "lz4")


# ------------------------------------------------------------------------------------ writer schema


def _names(schema: Any, out: list[str]) -> list[str]:
    if isinstance(schema, list):
        for s in schema:
            _names(s, out)
    elif isinstance(schema, dict):
        if schema.get("type") == "record":
            out.append(schema["name"])
            for f in schema["fields"]:
                _names(f["type"], out)
        elif schema.get("type") == "array":
            _names(schema["items"], out)
    return out


@pytest.mark.parametrize(
    "schema", [MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_META_SCHEMA, INDEX_MANIFEST_ENTRY_SCHEMA]
)
def test_schema_record_names_are_java_style(schema: dict[str, Any]) -> None:
    names = _names(schema, [])
    assert names[0] == JAVA_RECORD
    assert len(set(names)) == len(names)
    assert all(n.startswith(JAVA_RECORD + "__") for n in names[1:])


def test_written_schemas_are_the_declared_ones() -> None:
    cases = [
        (encode_manifest_entries([sample_entry()]), MANIFEST_ENTRY_SCHEMA),
        (encode_manifest_list([sample_meta()]), MANIFEST_FILE_META_SCHEMA),
        (encode_index_manifest(sample_index_entries()), INDEX_MANIFEST_ENTRY_SCHEMA),
    ]
    for data, schema in cases:
        r = fastavro.reader(io.BytesIO(data))
        assert json.loads(r.metadata["avro.schema"]) == schema
    list_fields = [f["name"] for f in MANIFEST_FILE_META_SCHEMA["fields"]]
    assert list_fields == [
        "_VERSION",
        "_FILE_NAME",
        "_FILE_SIZE",
        "_NUM_ADDED_FILES",
        "_NUM_DELETED_FILES",
        "_PARTITION_STATS",
        "_SCHEMA_ID",
        "_MIN_BUCKET",
        "_MAX_BUCKET",
        "_MIN_LEVEL",
        "_MAX_LEVEL",
        "_MIN_ROW_ID",
        "_MAX_ROW_ID",
    ]
    file_fields = MANIFEST_ENTRY_SCHEMA["fields"][5]["type"]["fields"]
    assert len(file_fields) == 21
    creation = next(f for f in file_fields if f["name"] == "_CREATION_TIME")
    assert creation["type"] == ["null", {"type": "long", "logicalType": "timestamp-millis"}]


def test_entry_schema_matches_pypaimon_writer_schema_shape() -> None:
    """Same field names, order and types as the pypaimon vectors; only record names differ."""
    dump = json.loads((VECTORS_DIR / "02_pk_partitioned" / "metadata_dump.json").read_text())
    pyp = next(
        v["writer_schema"] for k, v in dump.items() if k.startswith("manifest/manifest-") and "list" not in k
    )

    def strip_names(s: Any) -> Any:
        if isinstance(s, list):
            return [strip_names(x) for x in s]
        if isinstance(s, dict):
            return {k: strip_names(v) for k, v in s.items() if k != "name" or "type" not in s}
        return s

    def field_shapes(s: dict[str, Any]) -> list[Any]:
        return [(f["name"], strip_names(f["type"])) for f in s["fields"]]

    assert field_shapes(MANIFEST_ENTRY_SCHEMA) == field_shapes(pyp)


# ----------------------------------------------------------------------------------- timestamps


@pytest.mark.parametrize("ms", [0, -1, 1, 1_795_343_651_616, 253_402_300_799_999, 2**63 - 1, -(2**63)])
def test_creation_time_roundtrips_exactly(ms: int) -> None:
    e = sample_entry(creation_time_ms=ms)
    assert decode_manifest_entries(encode_manifest_entries([e]), "t")[0].file.creation_time_ms == ms


def test_creation_time_is_timestamp_millis_for_other_readers() -> None:
    ms = 1_795_343_651_617
    data = encode_manifest_entries([sample_entry(creation_time_ms=ms)], "null")
    rec = next(iter(fastavro.reader(io.BytesIO(data))))
    assert rec["_FILE"]["_CREATION_TIME"] == EPOCH + dt.timedelta(milliseconds=ms)


def test_creation_time_of_vectors_matches_dump_exactly() -> None:
    for vector, path, kind in VECTOR_FILES:
        if kind != "entries":
            continue
        for e, rec in zip(
            decode_manifest_entries(path.read_bytes(), path.name),
            _dump_records(vector, path.name),
            strict=True,
        ):
            iso = rec["_FILE"]["_CREATION_TIME"]
            want = (dt.datetime.fromisoformat(iso) - EPOCH) // dt.timedelta(milliseconds=1)
            assert e.file.creation_time_ms == want
