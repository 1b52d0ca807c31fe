"""The compiled Avro encoders write manifests, manifest lists and index manifests byte for byte as
fastavro's writer did (same sync marker): optional fields set and unset, nulls inside arrays,
empty and several-block files, every codec."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.formats import avro_container, manifest_codec
from lake_assets.formats.avro_encoder import UnsupportedSchema, compile_schema
from lake_assets.spec.manifest import (
    DataFileMeta,
    DeletionVectorRange,
    FileKind,
    FileSource,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)

SYNC = bytes(range(16))
CODECS = ["null", "zstandard", "deflate", "snappy"]

_LONG = st.integers(-(2**63), 2**63 - 1)
_INT = st.integers(-(2**31), 2**31 - 1)
_NAME = st.text(min_size=1, max_size=20)
_STRINGS = st.lists(st.text(max_size=10), max_size=3).map(tuple)
_STATS = st.builds(SimpleStats, st.binary(max_size=40), st.binary(max_size=40),
                   st.none() | st.lists(st.none() | _LONG, max_size=4).map(tuple))
_FILES = st.builds(
    DataFileMeta,
    _NAME, _LONG, _LONG, st.binary(max_size=30), st.binary(max_size=30), _STATS, _STATS, _LONG, _LONG, _LONG,
    _INT, _STRINGS, st.none() | _LONG, st.none() | _LONG, st.none() | st.binary(max_size=8),
    st.none() | st.sampled_from(list(FileSource)), st.none() | _STRINGS, st.none() | _NAME, st.none() | _LONG,
    st.none() | _STRINGS, st.none() | st.lists(_LONG, max_size=3).map(tuple),
)
_ENTRIES = st.builds(ManifestEntry, st.sampled_from(list(FileKind)), st.binary(max_size=30), _INT, _INT, _FILES)
_METAS = st.builds(ManifestFileMeta, _NAME, _LONG, _LONG, _LONG, _STATS, _LONG, st.none() | _INT,
                   st.none() | _INT, st.none() | _INT, st.none() | _INT, st.none() | _LONG, st.none() | _LONG)
_GLOBAL = st.none() | st.fixed_dictionaries({
    "row_range_start": _LONG, "row_range_end": _LONG, "index_field_id": _INT,
    "extra_field_ids": st.none() | st.lists(_INT, max_size=3).map(tuple),
    "index_meta": st.none() | st.binary(max_size=5), "source_meta": st.none() | st.binary(max_size=5),
})
_INDEX = st.builds(
    IndexManifestEntry, st.sampled_from(list(FileKind)), st.binary(max_size=20), _INT, _NAME, _NAME, _LONG, _LONG,
    st.none() | st.lists(st.builds(DeletionVectorRange, _NAME, _INT, _INT, st.none() | _LONG), max_size=3).map(tuple),
    st.none() | _NAME, _GLOBAL,
)


def _fastavro_bytes(fn: Any, items: list[Any], codec: str, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """What ``fn`` wrote before the compiled encoders: the same call with fastavro's writer."""
    real = avro_container.write_container

    def without_encoder(parsed: Any, schema_json: bytes, records: list[Any], c: str, level: int,
                        encoder: Any = None) -> bytes:
        return real(parsed, schema_json, records, c, level, None)

    with monkeypatch.context() as m:
        m.setattr(manifest_codec, "write_container", without_encoder)
        return bytes(fn(items, codec))


def _check(fn: Any, items: list[Any], codec: str) -> None:
    # both writers take their sync marker from os.urandom: fixed, so the bytes compare
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(avro_container.os, "urandom", lambda n: SYNC[:n])
        expected = _fastavro_bytes(fn, items, codec, mp)
        assert fn(items, codec) == expected


@settings(max_examples=60, deadline=None)
@given(st.lists(_ENTRIES, max_size=6), st.sampled_from(CODECS))
def test_manifest_entries_encode_as_fastavro_did(entries: list[ManifestEntry], codec: str) -> None:
    _check(manifest_codec.encode_manifest_entries, entries, codec)


@settings(max_examples=60, deadline=None)
@given(st.lists(_METAS, max_size=6), st.sampled_from(CODECS))
def test_manifest_lists_encode_as_fastavro_did(metas: list[ManifestFileMeta], codec: str) -> None:
    _check(manifest_codec.encode_manifest_list, metas, codec)


@settings(max_examples=60, deadline=None)
@given(st.lists(_INDEX, max_size=6), st.sampled_from(CODECS))
def test_index_manifests_encode_as_fastavro_did(entries: list[IndexManifestEntry], codec: str) -> None:
    _check(manifest_codec.encode_index_manifest, entries, codec)


def test_big_manifests_cut_their_blocks_where_fastavro_did() -> None:
    # ~100 bytes an entry: blocks of ~64 KB end after the entry that reaches the sync interval
    stats = SimpleStats(b"\x00\x00\x00\x01" + bytes(16), b"\x00\x00\x00\x01" + bytes(16), (0,))
    entries = [
        ManifestEntry(FileKind.ADD, b"\x00\x00\x00\x01" + bytes(16), i % 4, 4, DataFileMeta(
            f"data-{i:08d}-0.parquet", 1000 + i, 10 * i, bytes(20), bytes(20), stats, stats, i, i + 5, 0, 0, (),
            1_700_000_000_000 + i, 0, None, FileSource.APPEND, None, None, None, None, None))
        for i in range(3000)
    ]
    for codec in ("null", "zstandard"):
        _check(manifest_codec.encode_manifest_entries, entries, codec)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(avro_container.os, "urandom", lambda n: SYNC[:n])
        data = manifest_codec.encode_manifest_entries(entries, "null")
    assert data.count(SYNC) > 3  # several blocks
    assert manifest_codec.decode_manifest_entries(data, "m") == entries


def test_unsupported_schemas_are_refused_at_compile_time() -> None:
    for schema in (["null", "int", "long"], {"type": "map", "values": "long"}, "some.Named",
                   {"type": "enum", "name": "e", "symbols": ["A"]}):
        with pytest.raises(UnsupportedSchema):
            compile_schema(schema)


def test_values_of_the_wrong_type_are_refused() -> None:
    enc = compile_schema({"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]})
    for bad in ("1", 2**31, 1.5, None):
        with pytest.raises(TypeError):
            enc(bytearray(), {"a": bad})
