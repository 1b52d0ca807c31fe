"""Tests of the manifest model and Avro codec against pypaimon-written vectors and corrupt inputs."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import io
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets.errors import CorruptMetadataError, OptionError
from lake_assets.formats.manifest_codec import (
    MAX_LEVEL,
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
    DeletionVectorRange,
    EntryIdentifier,
    FileKind,
    FileSource,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    manifest_file_meta_for,
    summarize_entries,
)
from tests.vectors import VECTORS_DIR

CODECS = ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"]
JAVA_RECORD = "org.apache.paimon.avro.generated.record"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


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


def _list(t: tuple[Any, ...] | None) -> list[Any] | None:
    return None if t is None else list(t)


def _stats_json(s: SimpleStats) -> dict[str, Any]:
    return {
        "_MIN_VALUES": _hex(s.min_values),
        "_MAX_VALUES": _hex(s.max_values),
        "_NULL_COUNTS": _list(s.null_counts),
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
        "_VALUE_STATS_COLS": _list(f.value_stats_cols),
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": _list(f.write_cols),
        "_WRITE_COLS_SEQUENCES": _list(f.write_cols_sequences),
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
            "_EXTRA_FIELD_IDS": _list(g["extra_field_ids"]),
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


# ----------------------------------------------------------------------------------- sample values


def _stats(n: int) -> SimpleStats:
    return SimpleStats(
        bytes([0, 0, 0, n]) + bytes(8 * (n + 1)), bytes([0, 0, 0, n]) + bytes(8 * (n + 2)), (0,) * n
    )


def _file(i: int = 0, **kw: Any) -> DataFileMeta:
    base: dict[str, Any] = {
        "file_name": f"data-{i}.parquet",
        "file_size": 1000 + i,
        "row_count": 10 + i,
        "min_key": EMPTY_ROW,
        "max_key": EMPTY_ROW,
        "key_stats": _stats(1),
        "value_stats": SimpleStats.EMPTY,
        "min_sequence_number": i,
        "max_sequence_number": i + 9,
        "schema_id": 0,
        "level": 0,
        "extra_files": (),
        "creation_time_ms": 1_700_000_000_123 + i,
        "delete_row_count": 0,
        "embedded_file_index": None,
        "file_source": 0,
        "value_stats_cols": (),
        "external_path": None,
        "first_row_id": None,
        "write_cols": None,
        "write_cols_sequences": None,
    }
    base.update(kw)
    return DataFileMeta(**base)


def _entry(i: int = 0, kind: FileKind = FileKind.ADD, bucket: int = 0, **kw: Any) -> ManifestEntry:
    return ManifestEntry(kind, EMPTY_ROW, bucket, 2, _file(i, **kw))


def _meta(i: int = 0) -> ManifestFileMeta:
    return ManifestFileMeta(f"manifest-{i}", 2000 + i, 3, 1, _stats(1), 0, 0, 1, 0, 5, None, None)


def _index_entries() -> list[IndexManifestEntry]:
    return [
        IndexManifestEntry(FileKind.ADD, EMPTY_ROW, 0, "HASH", "index-a-0", 40, 10),
        IndexManifestEntry(
            FileKind.DELETE,
            EMPTY_ROW,
            1,
            "DELETION_VECTORS",
            "index-b-0",
            77,
            2,
            (
                DeletionVectorRange("data-1.parquet", 1, 30, 3),
                DeletionVectorRange("data-2.parquet", 31, 40, None),
            ),
            "s3://bucket/ext/index-b-0",
        ),
        IndexManifestEntry(
            FileKind.ADD,
            EMPTY_ROW,
            0,
            "btree",
            "index-c-0",
            500,
            100,
            None,
            None,
            {
                "row_range_start": 0,
                "row_range_end": 99,
                "index_field_id": 3,
                "extra_field_ids": (4, 5),
                "index_meta": b"\x01\x02",
                "source_meta": None,
            },
        ),
    ]


def _raw_avro(schema: Any, records: list[Any], codec: str = "null") -> bytes:
    """A container written by plain fastavro with an arbitrary writer schema."""
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
    return buf.getvalue()


def _raw_entry_record(e: ManifestEntry, version: int = 2) -> dict[str, Any]:
    f = e.file

    def stats(s: SimpleStats) -> dict[str, Any]:
        return {
            "_MIN_VALUES": s.min_values,
            "_MAX_VALUES": s.max_values,
            "_NULL_COUNTS": _list(s.null_counts),
        }

    return {
        "_VERSION": version,
        "_KIND": int(e.kind),
        "_PARTITION": e.partition,
        "_BUCKET": e.bucket,
        "_TOTAL_BUCKETS": e.total_buckets,
        "_FILE": {
            "_FILE_NAME": f.file_name,
            "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count,
            "_MIN_KEY": f.min_key,
            "_MAX_KEY": f.max_key,
            "_KEY_STATS": stats(f.key_stats),
            "_VALUE_STATS": stats(f.value_stats),
            "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
            "_SCHEMA_ID": f.schema_id,
            "_LEVEL": f.level,
            "_EXTRA_FILES": list(f.extra_files),
            "_CREATION_TIME": f.creation_time_ms,
            "_DELETE_ROW_COUNT": f.delete_row_count,
            "_EMBEDDED_FILE_INDEX": f.embedded_file_index,
            "_FILE_SOURCE": f.file_source,
            "_VALUE_STATS_COLS": _list(f.value_stats_cols),
            "_EXTERNAL_PATH": f.external_path,
            "_FIRST_ROW_ID": f.first_row_id,
            "_WRITE_COLS": _list(f.write_cols),
            "_WRITE_COLS_SEQUENCES": _list(f.write_cols_sequences),
        },
    }


def _plain_entry_schema() -> dict[str, Any]:
    """MANIFEST_ENTRY_SCHEMA without the timestamp logical type (so fastavro takes raw ints)."""
    s = copy.deepcopy(MANIFEST_ENTRY_SCHEMA)
    for f in s["fields"][5]["type"]["fields"]:
        if f["name"] == "_CREATION_TIME":
            f["type"] = ["null", "long"]
    return s


# ------------------------------------------------------------------------------------ model basics


def test_simple_stats_empty() -> None:
    empty = SimpleStats.EMPTY
    assert empty == SimpleStats(bytes(12), bytes(12), ())
    assert empty.min_values == bytes.fromhex("000000000000000000000000") == EMPTY_ROW


def test_upgrade_and_identifier() -> None:
    e = _entry(1, extra_files=("x.index",), external_path="s3://b/x")
    up = e.file.upgrade(3)
    assert up.level == 3 and e.file.level == 0
    assert up == _file(1, extra_files=("x.index",), external_path="s3://b/x", level=3)
    ident = e.identifier()
    assert isinstance(ident, EntryIdentifier)
    assert ident == (EMPTY_ROW, 0, 0, "data-1.parquet", ("x.index",), None, "s3://b/x")
    moved = ManifestEntry(FileKind.ADD, e.partition, e.bucket, e.total_buckets, up)
    assert moved.identifier() != ident  # the level is part of the identity
    delete = ManifestEntry(FileKind.DELETE, e.partition, e.bucket, 7, e.file)
    assert delete.identifier() == ident and hash(delete.identifier()) == hash(ident)


def test_summarize_and_manifest_file_meta_for() -> None:
    entries = [
        _entry(0, bucket=3, level=2, schema_id=1),
        _entry(1, FileKind.DELETE, bucket=1, level=0, schema_id=4),
        _entry(2, bucket=5, level=5, schema_id=2),
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
    meta = manifest_file_meta_for("manifest-x", 1234, entries, _stats(1))
    assert meta == ManifestFileMeta("manifest-x", 1234, 2, 1, _stats(1), 4, 1, 5, 0, 5)
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
        encode_manifest_entries([_entry()], "lz4")


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
        (encode_manifest_entries([_entry()]), MANIFEST_ENTRY_SCHEMA),
        (encode_manifest_list([_meta()]), MANIFEST_FILE_META_SCHEMA),
        (encode_index_manifest(_index_entries()), INDEX_MANIFEST_ENTRY_SCHEMA),
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
    e = _entry(creation_time_ms=ms)
    assert decode_manifest_entries(encode_manifest_entries([e]), "t")[0].file.creation_time_ms == ms


def test_creation_time_is_timestamp_millis_for_other_readers() -> None:
    ms = 1_795_343_651_617
    data = encode_manifest_entries([_entry(creation_time_ms=ms)], "null")
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


# ------------------------------------------------------------------------------- compatibility


def test_plain_fastavro_reads_our_files() -> None:
    entries = [_entry(i) for i in range(3)]
    for codec in ("null", "deflate"):
        recs = list(fastavro.reader(io.BytesIO(encode_manifest_entries(entries, codec))))
        assert [r["_FILE"]["_FILE_NAME"] for r in recs] == [e.file.file_name for e in entries]
        assert all(r["_VERSION"] == 2 for r in recs)


def _java_union_style(schema: dict[str, Any]) -> list[Any]:
    """The shape old Java writers produce: top-level and nested rows as ["null", record] unions."""
    s = copy.deepcopy(schema)

    def wrap(rec: dict[str, Any]) -> None:
        for f in rec["fields"]:
            t = f["type"]
            if isinstance(t, dict) and t.get("type") == "record":
                wrap(t)
                f["type"] = ["null", t]
                f["default"] = None

    wrap(s)
    return ["null", s]


def test_decodes_java_union_wrapped_records() -> None:
    entries = [_entry(i, value_stats_cols=None, delete_row_count=None) for i in range(4)]
    data = _raw_avro(
        _java_union_style(_plain_entry_schema()), [_raw_entry_record(e) for e in entries], "deflate"
    )
    assert decode_manifest_entries(data, "java-style") == entries


def test_null_record_in_java_union_is_corrupt() -> None:
    rec = _raw_entry_record(_entry())
    rec["_FILE"]["_KEY_STATS"] = None
    data = _raw_avro(_java_union_style(_plain_entry_schema()), [rec])
    with pytest.raises(CorruptMetadataError, match=r"manifest-n.*_FILE\._KEY_STATS"):
        decode_manifest_entries(data, "manifest-n")
    data = _raw_avro(_java_union_style(_plain_entry_schema()), [None])
    with pytest.raises(CorruptMetadataError, match="manifest-n"):
        decode_manifest_entries(data, "manifest-n")


def test_decodes_older_writer_without_new_fields() -> None:
    schema = _plain_entry_schema()
    newer = {"_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS"}
    newer |= {"_WRITE_COLS_SEQUENCES", "_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX"}
    file_schema = schema["fields"][5]["type"]
    file_schema["fields"] = [f for f in file_schema["fields"] if f["name"] not in newer]
    rec = _raw_entry_record(_entry(value_stats_cols=("a",), first_row_id=5))
    for k in newer:
        del rec["_FILE"][k]
    (got,) = decode_manifest_entries(_raw_avro(schema, [rec]), "old")
    assert got.file == _file(
        creation_time_ms=None,
        delete_row_count=None,
        file_source=None,
        value_stats_cols=None,
        first_row_id=None,
    )

    list_schema = copy.deepcopy(MANIFEST_FILE_META_SCHEMA)
    list_schema["fields"] = list_schema["fields"][:7]  # Paimon 0.8 lists stop at _SCHEMA_ID
    m = _meta()
    rec2 = {
        "_VERSION": 2,
        "_FILE_NAME": m.file_name,
        "_FILE_SIZE": m.file_size,
        "_NUM_ADDED_FILES": 3,
        "_NUM_DELETED_FILES": 1,
        "_PARTITION_STATS": {"_MIN_VALUES": EMPTY_ROW, "_MAX_VALUES": EMPTY_ROW},
        "_SCHEMA_ID": 0,
    }
    (meta,) = decode_manifest_list(_raw_avro(list_schema, [rec2]), "old-list")
    assert meta == ManifestFileMeta(
        m.file_name, m.file_size, 3, 1, SimpleStats(EMPTY_ROW, EMPTY_ROW, None), 0, *[None] * 6
    )


def test_ignores_unknown_fields_and_record_names() -> None:
    schema = _plain_entry_schema()
    schema["name"] = "SomethingElse"
    schema["fields"].insert(2, {"name": "_FUTURE", "type": ["null", "string"], "default": None})
    schema["fields"][6]["type"]["fields"].append({"name": "_FUTURE_TOO", "type": "long"})
    e = _entry(7)
    rec = _raw_entry_record(e)
    rec["_FUTURE"] = "x"
    rec["_FILE"]["_FUTURE_TOO"] = 9
    assert decode_manifest_entries(_raw_avro(schema, [rec]), "future") == [e]


def test_decodes_named_type_references() -> None:
    """A writer may define the stats record once and refer to it by name for the second field."""
    schema = _plain_entry_schema()
    schema["namespace"] = "some.ns"
    schema["name"] = "Entry"
    schema["fields"][5]["type"]["name"] = "File"
    file_fields = schema["fields"][5]["type"]["fields"]
    file_fields[5]["type"]["name"] = "Stats"
    file_fields[6]["type"] = "some.ns.Stats"
    e = _entry(3, value_stats=_stats(2))
    assert decode_manifest_entries(_raw_avro(schema, [_raw_entry_record(e)]), "refs") == [e]


def test_long_written_for_an_int_field_decodes() -> None:
    """Writers differ in int/long widths; both read as Python ints (reader-schema resolution)."""
    schema = _plain_entry_schema()
    schema["fields"][3]["type"] = "long"  # _BUCKET
    schema["fields"][5]["type"]["fields"][10]["type"] = "long"  # _FILE._LEVEL
    e = _entry(2, bucket=3, level=4)
    assert decode_manifest_entries(_raw_avro(schema, [_raw_entry_record(e)]), "wide") == [e]


def test_missing_nested_required_field_names_its_path() -> None:
    schema = _plain_entry_schema()
    stats = schema["fields"][5]["type"]["fields"][5]["type"]  # _FILE._KEY_STATS
    stats["fields"] = [f for f in stats["fields"] if f["name"] != "_MAX_VALUES"]
    rec = _raw_entry_record(_entry())
    del rec["_FILE"]["_KEY_STATS"]["_MAX_VALUES"]
    with pytest.raises(CorruptMetadataError, match=r"manifest-nomax.*_MAX_VALUES.*_FILE\._KEY_STATS"):
        decode_manifest_entries(_raw_avro(schema, [rec]), "manifest-nomax")


def test_wrong_field_type_names_the_field() -> None:
    schema = _plain_entry_schema()
    schema["fields"][5]["type"]["fields"][11]["type"] = {"type": "array", "items": "long"}  # _EXTRA_FILES
    rec = _raw_entry_record(_entry())
    rec["_FILE"]["_EXTRA_FILES"] = [1]
    with pytest.raises(CorruptMetadataError, match=r"manifest-t.*_FILE\._EXTRA_FILES\[\] has Avro type long"):
        decode_manifest_entries(_raw_avro(schema, [rec]), "manifest-t")


def test_file_source_is_an_enum_and_unknown_sources_are_corrupt() -> None:
    data = encode_manifest_entries([_entry(file_source=FileSource.COMPACT), _entry(1, file_source=None)])
    first, second = decode_manifest_entries(data, "sources")
    assert first.file.file_source is FileSource.COMPACT and second.file.file_source is None
    rec = _raw_entry_record(_entry())
    rec["_FILE"]["_FILE_SOURCE"] = 5  # Java's FileSource.fromByteValue rejects it too
    with pytest.raises(CorruptMetadataError, match=r"manifest-src.*_FILE_SOURCE 5"):
        decode_manifest_entries(_raw_avro(_plain_entry_schema(), [rec]), "manifest-src")


def test_decodes_pypaimon_named_index_manifest() -> None:
    schema = copy.deepcopy(INDEX_MANIFEST_ENTRY_SCHEMA)
    schema["name"] = "IndexManifestEntry"
    # Java declares nullable array elements; accept both shapes.
    dv = schema["fields"][8]["type"][1]
    dv["items"] = ["null", dv["items"]]
    records = [
        {
            "_VERSION": 1,
            "_KIND": 0,
            "_PARTITION": EMPTY_ROW,
            "_BUCKET": 0,
            "_INDEX_TYPE": "DELETION_VECTORS",
            "_FILE_NAME": "index-1",
            "_FILE_SIZE": 35,
            "_ROW_COUNT": 1,
            "_DELETIONS_VECTORS_RANGES": [{"f0": "data-a.parquet", "f1": 1, "f2": 26, "_CARDINALITY": 3}],
        }
    ]
    (got,) = decode_index_manifest(_raw_avro(schema, records), "index-manifest-x")
    assert got == IndexManifestEntry(
        FileKind.ADD,
        EMPTY_ROW,
        0,
        "DELETION_VECTORS",
        "index-1",
        35,
        1,
        (DeletionVectorRange("data-a.parquet", 1, 26, 3),),
    )


@pytest.mark.parametrize("codec", CODECS)
def test_index_manifest_roundtrip(codec: str) -> None:
    entries = _index_entries()
    assert decode_index_manifest(encode_index_manifest(entries, codec), "idx") == entries


@pytest.mark.parametrize("codec", CODECS)
def test_manifest_list_roundtrip(codec: str) -> None:
    metas = [_meta(i) for i in range(5)] + [
        ManifestFileMeta("m", 1, 0, 0, SimpleStats.EMPTY, 0, None, None, None, None, 1, 9)
    ]
    assert decode_manifest_list(encode_manifest_list(metas, codec), "list") == metas


def test_empty_manifest_list() -> None:
    assert decode_manifest_list(encode_manifest_list([]), "empty-list") == []


def test_large_manifest_spans_several_blocks() -> None:
    entries = [_entry(i, bucket=i % 7) for i in range(3000)]
    data = encode_manifest_entries(entries)
    assert sum(1 for _ in fastavro.block_reader(io.BytesIO(encode_manifest_entries(entries, "null")))) > 1
    assert decode_manifest_entries(data, "big") == entries


# ----------------------------------------------------------------------------------- corruption


def _assert_corrupt(fn: Callable[[bytes, str], Any], data: bytes, name: str = "manifest-bad-0") -> None:
    with pytest.raises(CorruptMetadataError) as info:
        fn(data, name)
    assert name in str(info.value)


def _header_end(data: bytes) -> int:
    """Offset of the first block (right after the 16-byte sync marker)."""
    r = fastavro.reader(io.BytesIO(data))
    return data.index(r._header["sync"]) + 16


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard"])
def test_truncated_files_are_corrupt(codec: str) -> None:
    entries = [_entry(i) for i in range(5)]
    data = encode_manifest_entries(entries, codec)
    header_end = _header_end(data)
    for cut in range(len(data)):
        if cut == header_end:
            # A container cut exactly between blocks is a valid, shorter container: Avro has no
            # footer. Readers compare with the _FILE_SIZE of the manifest list for that case.
            assert decode_manifest_entries(data[:cut], "x") == []
            continue
        _assert_corrupt(decode_manifest_entries, data[:cut])


def test_truncated_manifest_list_and_index_manifest() -> None:
    for enc, dec, items in [
        (encode_manifest_list, decode_manifest_list, [_meta(1), _meta(2)]),
        (encode_index_manifest, decode_index_manifest, _index_entries()),
    ]:
        data = enc(items)
        for cut in (0, 3, 10, _header_end(data) - 1, len(data) - 17, len(data) - 1):
            _assert_corrupt(dec, data[:cut], "list-or-index-0")


def test_empty_file_is_corrupt() -> None:
    for dec in (decode_manifest_entries, decode_manifest_list, decode_index_manifest):
        _assert_corrupt(dec, b"", "empty-file-0")


def test_random_bytes_are_corrupt() -> None:
    rng = random.Random(1234)
    for n in (1, 4, 16, 100, 4096):
        _assert_corrupt(decode_manifest_entries, rng.randbytes(n))
        _assert_corrupt(decode_manifest_list, b"Obj\x01" + rng.randbytes(n))


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard"])
def test_flipped_bytes_in_block_are_corrupt_or_detected(codec: str) -> None:
    """Damage inside a data block must never escape as anything but CorruptMetadataError."""
    entries = [_entry(i) for i in range(20)]
    data = encode_manifest_entries(entries, codec)
    start = _header_end(data)
    rng = random.Random(99)
    for _ in range(200):
        pos = rng.randrange(start, len(data))
        damaged = bytearray(data)
        damaged[pos] ^= 1 << rng.randrange(8)
        try:
            decode_manifest_entries(bytes(damaged), "manifest-flip-0")
        except CorruptMetadataError as exc:
            assert "manifest-flip-0" in str(exc)


def test_wrong_version_is_corrupt() -> None:
    schema = _plain_entry_schema()
    _assert_corrupt(decode_manifest_entries, _raw_avro(schema, [_raw_entry_record(_entry(), version=1)]))
    _assert_corrupt(decode_manifest_entries, _raw_avro(schema, [_raw_entry_record(_entry(), version=3)]))
    list_data = encode_manifest_list([_meta()])
    assert decode_manifest_list(list_data, "ok") == [_meta()]
    # A data manifest is not an index manifest: _VERSION 2 is wrong there (and fields are missing).
    _assert_corrupt(decode_index_manifest, encode_manifest_entries([_entry()]))
    idx = copy.deepcopy(INDEX_MANIFEST_ENTRY_SCHEMA)
    rec = {
        "_VERSION": 2,
        "_KIND": 0,
        "_PARTITION": EMPTY_ROW,
        "_BUCKET": 0,
        "_INDEX_TYPE": "HASH",
        "_FILE_NAME": "i",
        "_FILE_SIZE": 4,
        "_ROW_COUNT": 1,
    }
    _assert_corrupt(decode_index_manifest, _raw_avro(idx, [rec]))
    with pytest.raises(CorruptMetadataError, match="_VERSION 2"):
        decode_index_manifest(_raw_avro(idx, [rec]), "index-manifest-v")


def test_wrong_kind_and_wrong_types_are_corrupt() -> None:
    schema = _plain_entry_schema()
    rec = _raw_entry_record(_entry())
    rec["_KIND"] = 7
    _assert_corrupt(decode_manifest_entries, _raw_avro(schema, [rec]))

    bad = copy.deepcopy(schema)
    bad["fields"][3]["type"] = "string"  # _BUCKET
    rec = _raw_entry_record(_entry())
    rec["_BUCKET"] = "zero"
    _assert_corrupt(decode_manifest_entries, _raw_avro(bad, [rec]))

    missing = copy.deepcopy(schema)
    del missing["fields"][5]["type"]["fields"][0]  # _FILE_NAME
    rec = _raw_entry_record(_entry())
    del rec["_FILE"]["_FILE_NAME"]
    with pytest.raises(CorruptMetadataError, match="_FILE_NAME"):
        decode_manifest_entries(_raw_avro(missing, [rec]), "manifest-missing")

    nullable = copy.deepcopy(schema)
    nullable["fields"][5]["type"]["fields"][0]["type"] = ["null", "string"]
    rec = _raw_entry_record(_entry())
    rec["_FILE"]["_FILE_NAME"] = None
    with pytest.raises(CorruptMetadataError, match=r"_FILE\._FILE_NAME"):
        decode_manifest_entries(_raw_avro(nullable, [rec]), "manifest-nullname")
    # The same nullable schema with a value present is accepted.
    assert decode_manifest_entries(_raw_avro(nullable, [_raw_entry_record(_entry())]), "ok") == [_entry()]


def test_manifest_list_is_not_a_manifest() -> None:
    _assert_corrupt(decode_manifest_entries, encode_manifest_list([_meta()]))
    _assert_corrupt(decode_manifest_list, encode_manifest_entries([_entry()]))


def test_unknown_codec_in_header_is_corrupt() -> None:
    data = encode_manifest_entries([_entry()], "null")
    _assert_corrupt(decode_manifest_entries, data.replace(b"\x08null", b"\x08lzzz", 1))


def test_non_utf8_schema_is_corrupt() -> None:
    data = encode_manifest_entries([_entry()], "null")
    _assert_corrupt(decode_manifest_entries, data.replace(b'"record"', b'"rec\xffrd"', 1))


# ------------------------------------------------------------------------------------ properties

i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(min_size=0, max_size=20)
# File names are decoded only when plain (paths.check_file_name): no separators, control
# characters, surrogates, "." or "..".
file_names = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="/\\\x7f"), min_size=1, max_size=20
).filter(lambda n: n not in (".", ".."))
blobs = st.binary(max_size=40)
stats_st = st.builds(
    SimpleStats,
    blobs,
    blobs,
    st.none() | st.lists(st.none() | i64, max_size=5).map(tuple),
)
# sizes, counts, levels and ids are never negative (the decoder refuses them as damage)
u63 = st.integers(0, 2**63 - 1)
files_st = st.builds(
    DataFileMeta,
    file_name=file_names,
    file_size=u63,
    row_count=u63,
    min_key=blobs,
    max_key=blobs,
    key_stats=stats_st,
    value_stats=stats_st,
    min_sequence_number=i64,
    max_sequence_number=i64,
    schema_id=u63,
    level=st.integers(0, MAX_LEVEL),
    extra_files=st.lists(file_names, max_size=3).map(tuple),
    creation_time_ms=st.none() | i64,
    delete_row_count=st.none() | u63,
    embedded_file_index=st.none() | blobs,
    file_source=st.none() | st.sampled_from([0, 1]),
    value_stats_cols=st.none() | st.lists(names, max_size=3).map(tuple),
    external_path=st.none() | names,
    first_row_id=st.none() | u63,
    write_cols=st.none() | st.lists(names, max_size=3).map(tuple),
    write_cols_sequences=st.none() | st.lists(i64, max_size=3).map(tuple),
) .map(
    # a delete count is a share of the file's rows (the decoder refuses more)
    lambda f: f if f.delete_row_count is None else dataclasses.replace(
        f, delete_row_count=f.delete_row_count % (f.row_count + 1)))
entries_st = st.builds(ManifestEntry, st.sampled_from(FileKind), blobs, i32, i32, files_st)
metas_st = st.builds(
    ManifestFileMeta,
    file_names,
    i64,
    i64,
    i64,
    stats_st,
    i64,
    st.none() | i32,
    st.none() | i32,
    st.none() | i32,
    st.none() | i32,
    st.none() | i64,
    st.none() | i64,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(entries_st, max_size=8), st.sampled_from(["null", "deflate", "snappy", "zstandard"]))
def test_property_manifest_entries_roundtrip(entries: list[ManifestEntry], codec: str) -> None:
    assert decode_manifest_entries(encode_manifest_entries(entries, codec), "prop") == entries


@settings(max_examples=100, deadline=None)
@given(st.lists(metas_st, max_size=6), st.sampled_from(["null", "zstandard"]))
def test_property_manifest_list_roundtrip(metas: list[ManifestFileMeta], codec: str) -> None:
    assert decode_manifest_list(encode_manifest_list(metas, codec), "prop-list") == metas


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_property_garbage_after_magic_is_corrupt(tail: bytes) -> None:
    for dec in (decode_manifest_entries, decode_manifest_list, decode_index_manifest):
        try:
            dec(b"Obj\x01" + tail, "garbage-0")
        except CorruptMetadataError as exc:
            assert "garbage-0" in str(exc)


# ----------------------------------------------------------------------------------- many entries


def test_ten_thousand_entries_round_trip() -> None:
    # Speed is measured in bench/, never asserted here (a busy CI machine is no measure).
    entries = [
        _entry(
            i,
            FileKind.ADD if i % 4 else FileKind.DELETE,
            bucket=i % 16,
            min_key=bytes(20) + i.to_bytes(8, "little"),
            max_key=bytes(20) + (i + 5).to_bytes(8, "little"),
            key_stats=SimpleStats(bytes(28), bytes(28), (0,)),
        )
        for i in range(10_000)
    ]
    assert decode_manifest_entries(encode_manifest_entries(entries), "many") == entries
