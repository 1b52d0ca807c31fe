"""The manifest codec and other writers' and readers' files: plain fastavro, Java's union-wrapped
records, older writers, unknown fields, named types, pypaimon's index manifest, round trips."""

from __future__ import annotations

import copy
import io
from typing import Any

import fastavro
import pytest

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.manifest_codec import (
    decode_index_manifest,
    decode_manifest_entries,
    decode_manifest_list,
    encode_index_manifest,
    encode_manifest_entries,
    encode_manifest_list,
)
from lake_assets.formats.manifest_schemas import (
    INDEX_MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
)
from lake_assets.spec.manifest import (
    EMPTY_ROW,
    DeletionVectorRange,
    FileKind,
    FileSource,
    IndexManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from tests.unit.manifest_samples import (
    CODECS,
    plain_entry_schema,
    raw_avro,
    raw_entry_record,
    sample_entry,
    sample_file,
    sample_index_entries,
    sample_meta,
    sample_stats,
)

# ------------------------------------------------------------------------------- compatibility


def test_plain_fastavro_reads_our_files() -> None:
    entries = [sample_entry(i) for i in range(3)]
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
    entries = [sample_entry(i, value_stats_cols=None, delete_row_count=None) for i in range(4)]
    data = raw_avro(
        _java_union_style(plain_entry_schema()), [raw_entry_record(e) for e in entries], "deflate"
    )
    assert decode_manifest_entries(data, "java-style") == entries


def test_null_record_in_java_union_is_corrupt() -> None:
    rec = raw_entry_record(sample_entry())
    rec["_FILE"]["_KEY_STATS"] = None
    data = raw_avro(_java_union_style(plain_entry_schema()), [rec])
    with pytest.raises(CorruptMetadataError, match=r"manifest-n.*_FILE\._KEY_STATS"):
        decode_manifest_entries(data, "manifest-n")
    data = raw_avro(_java_union_style(plain_entry_schema()), [None])
    with pytest.raises(CorruptMetadataError, match="manifest-n"):
        decode_manifest_entries(data, "manifest-n")


def test_decodes_older_writer_without_new_fields() -> None:
    schema = plain_entry_schema()
    newer = {"_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS"}
    newer |= {"_WRITE_COLS_SEQUENCES", "_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX"}
    file_schema = schema["fields"][5]["type"]
    file_schema["fields"] = [f for f in file_schema["fields"] if f["name"] not in newer]
    rec = raw_entry_record(sample_entry(value_stats_cols=("a",), first_row_id=5))
    for k in newer:
        del rec["_FILE"][k]
    (got,) = decode_manifest_entries(raw_avro(schema, [rec]), "old")
    assert got.file == sample_file(
        creation_time_ms=None,
        delete_row_count=None,
        file_source=None,
        value_stats_cols=None,
        first_row_id=None,
    )

    list_schema = copy.deepcopy(MANIFEST_FILE_META_SCHEMA)
    list_schema["fields"] = list_schema["fields"][:7]  # Paimon 0.8 lists stop at _SCHEMA_ID
    m = sample_meta()
    rec2 = {
        "_VERSION": 2,
        "_FILE_NAME": m.file_name,
        "_FILE_SIZE": m.file_size,
        "_NUM_ADDED_FILES": 3,
        "_NUM_DELETED_FILES": 1,
        "_PARTITION_STATS": {"_MIN_VALUES": EMPTY_ROW, "_MAX_VALUES": EMPTY_ROW},
        "_SCHEMA_ID": 0,
    }
    (meta,) = decode_manifest_list(raw_avro(list_schema, [rec2]), "old-list")
    assert meta == ManifestFileMeta(
        m.file_name, m.file_size, 3, 1, SimpleStats(EMPTY_ROW, EMPTY_ROW, None), 0, *[None] * 6
    )


def test_ignores_unknown_fields_and_record_names() -> None:
    schema = plain_entry_schema()
    schema["name"] = "SomethingElse"
    schema["fields"].insert(2, {"name": "_FUTURE", "type": ["null", "string"], "default": None})
    schema["fields"][6]["type"]["fields"].append({"name": "_FUTURE_TOO", "type": "long"})
    e = sample_entry(7)
    rec = raw_entry_record(e)
    rec["_FUTURE"] = "x"
    rec["_FILE"]["_FUTURE_TOO"] = 9
    assert decode_manifest_entries(raw_avro(schema, [rec]), "future") == [e]


def test_decodes_named_type_references() -> None:
    """A writer may define the stats record once and refer to it by name for the second field."""
    schema = plain_entry_schema()
    schema["namespace"] = "some.ns"
    schema["name"] = "Entry"
    schema["fields"][5]["type"]["name"] = "File"
    file_fields = schema["fields"][5]["type"]["fields"]
    file_fields[5]["type"]["name"] = "Stats"
    file_fields[6]["type"] = "some.ns.Stats"
    e = sample_entry(3, value_stats=sample_stats(2))
    assert decode_manifest_entries(raw_avro(schema, [raw_entry_record(e)]), "refs") == [e]


def test_long_written_for_an_int_field_decodes() -> None:
    """Writers differ in int/long widths; both read as Python ints (reader-schema resolution)."""
    schema = plain_entry_schema()
    schema["fields"][3]["type"] = "long"  # _BUCKET
    schema["fields"][5]["type"]["fields"][10]["type"] = "long"  # _FILE._LEVEL
    e = sample_entry(2, bucket=3, level=4)
    assert decode_manifest_entries(raw_avro(schema, [raw_entry_record(e)]), "wide") == [e]


def test_missing_nested_required_field_names_its_path() -> None:
    schema = plain_entry_schema()
    stats = schema["fields"][5]["type"]["fields"][5]["type"]  # _FILE._KEY_STATS
    stats["fields"] = [f for f in stats["fields"] if f["name"] != "_MAX_VALUES"]
    rec = raw_entry_record(sample_entry())
    del rec["_FILE"]["_KEY_STATS"]["_MAX_VALUES"]
    with pytest.raises(CorruptMetadataError, match=r"manifest-nomax.*_MAX_VALUES.*_FILE\._KEY_STATS"):
        decode_manifest_entries(raw_avro(schema, [rec]), "manifest-nomax")


def test_wrong_field_type_names_the_field() -> None:
    schema = plain_entry_schema()
    schema["fields"][5]["type"]["fields"][11]["type"] = {"type": "array", "items": "long"}  # _EXTRA_FILES
    rec = raw_entry_record(sample_entry())
    rec["_FILE"]["_EXTRA_FILES"] = [1]
    with pytest.raises(CorruptMetadataError, match=r"manifest-t.*_FILE\._EXTRA_FILES\[\] has Avro type long"):
        decode_manifest_entries(raw_avro(schema, [rec]), "manifest-t")


def test_file_source_is_an_enum_and_unknown_sources_are_corrupt() -> None:
    data = encode_manifest_entries([sample_entry(file_source=FileSource.COMPACT), sample_entry(1, file_source=None)])
    first, second = decode_manifest_entries(data, "sources")
    assert first.file.file_source is FileSource.COMPACT and second.file.file_source is None
    rec = raw_entry_record(sample_entry())
    rec["_FILE"]["_FILE_SOURCE"] = 5  # Java's FileSource.fromByteValue rejects it too
    with pytest.raises(CorruptMetadataError, match=r"manifest-src.*_FILE_SOURCE 5"):
        decode_manifest_entries(raw_avro(plain_entry_schema(), [rec]), "manifest-src")


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
    (got,) = decode_index_manifest(raw_avro(schema, records), "index-manifest-x")
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
    entries = sample_index_entries()
    assert decode_index_manifest(encode_index_manifest(entries, codec), "idx") == entries


@pytest.mark.parametrize("codec", CODECS)
def test_manifest_list_roundtrip(codec: str) -> None:
    metas = [sample_meta(i) for i in range(5)] + [
        ManifestFileMeta("m", 1, 0, 0, SimpleStats.EMPTY, 0, None, None, None, None, 1, 9)
    ]
    assert decode_manifest_list(encode_manifest_list(metas, codec), "list") == metas


def test_empty_manifest_list() -> None:
    assert decode_manifest_list(encode_manifest_list([]), "empty-list") == []


def test_large_manifest_spans_several_blocks() -> None:
    entries = [sample_entry(i, bucket=i % 7) for i in range(3000)]
    data = encode_manifest_entries(entries)
    assert sum(1 for _ in fastavro.block_reader(io.BytesIO(encode_manifest_entries(entries, "null")))) > 1
    assert decode_manifest_entries(data, "big") == entries
