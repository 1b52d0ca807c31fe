"""The manifest codec on damaged files (truncated, flipped, wrong versions, kinds and types, random
bytes) and property round trips, up to ten thousand entries."""

from __future__ import annotations

import copy
import dataclasses
import io
import random
from collections.abc import Callable
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.manifest_codec import (
    MAX_LEVEL,
    decode_index_manifest,
    decode_manifest_entries,
    decode_manifest_list,
    encode_index_manifest,
    encode_manifest_entries,
    encode_manifest_list,
)
from lake_assets.formats.manifest_schemas import (
    INDEX_MANIFEST_ENTRY_SCHEMA,
)
from lake_assets.spec.manifest import (
    EMPTY_ROW,
    DataFileMeta,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from tests.unit.manifest_samples import (
    plain_entry_schema,
    raw_avro,
    raw_entry_record,
    sample_entry,
    sample_index_entries,
    sample_meta,
)

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
    entries = [sample_entry(i) for i in range(5)]
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
        (encode_manifest_list, decode_manifest_list, [sample_meta(1), sample_meta(2)]),
        (encode_index_manifest, decode_index_manifest, sample_index_entries()),
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
    entries = [sample_entry(i) for i in range(20)]
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
    schema = plain_entry_schema()
    _assert_corrupt(decode_manifest_entries, raw_avro(schema, [raw_entry_record(sample_entry(), version=1)]))
    _assert_corrupt(decode_manifest_entries, raw_avro(schema, [raw_entry_record(sample_entry(), version=3)]))
    list_data = encode_manifest_list([sample_meta()])
    assert decode_manifest_list(list_data, "ok") == [sample_meta()]
    # A data manifest is not an index manifest: _VERSION 2 is wrong there (and fields are missing).
    _assert_corrupt(decode_index_manifest, encode_manifest_entries([sample_entry()]))
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
    _assert_corrupt(decode_index_manifest, raw_avro(idx, [rec]))
    with pytest.raises(CorruptMetadataError, match="_VERSION 2"):
        decode_index_manifest(raw_avro(idx, [rec]), "index-manifest-v")


def test_wrong_kind_and_wrong_types_are_corrupt() -> None:
    schema = plain_entry_schema()
    rec = raw_entry_record(sample_entry())
    rec["_KIND"] = 7
    _assert_corrupt(decode_manifest_entries, raw_avro(schema, [rec]))

    bad = copy.deepcopy(schema)
    bad["fields"][3]["type"] = "string"  # _BUCKET
    rec = raw_entry_record(sample_entry())
    rec["_BUCKET"] = "zero"
    _assert_corrupt(decode_manifest_entries, raw_avro(bad, [rec]))

    missing = copy.deepcopy(schema)
    del missing["fields"][5]["type"]["fields"][0]  # _FILE_NAME
    rec = raw_entry_record(sample_entry())
    del rec["_FILE"]["_FILE_NAME"]
    with pytest.raises(CorruptMetadataError, match="_FILE_NAME"):
        decode_manifest_entries(raw_avro(missing, [rec]), "manifest-missing")

    nullable = copy.deepcopy(schema)
    nullable["fields"][5]["type"]["fields"][0]["type"] = ["null", "string"]
    rec = raw_entry_record(sample_entry())
    rec["_FILE"]["_FILE_NAME"] = None
    with pytest.raises(CorruptMetadataError, match=r"_FILE\._FILE_NAME"):
        decode_manifest_entries(raw_avro(nullable, [rec]), "manifest-nullname")
    # The same nullable schema with a value present is accepted.
    assert decode_manifest_entries(raw_avro(nullable, [raw_entry_record(sample_entry())]), "ok") == [sample_entry()]


def test_manifest_list_is_not_a_manifest() -> None:
    _assert_corrupt(decode_manifest_entries, encode_manifest_list([sample_meta()]))
    _assert_corrupt(decode_manifest_list, encode_manifest_entries([sample_entry()]))


def test_unknown_codec_in_header_is_corrupt() -> None:
    data = encode_manifest_entries([sample_entry()], "null")
    _assert_corrupt(decode_manifest_entries, data.replace(b"\x08null", b"\x08lzzz", 1))


def test_non_utf8_schema_is_corrupt() -> None:
    data = encode_manifest_entries([sample_entry()], "null")
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
        sample_entry(
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
