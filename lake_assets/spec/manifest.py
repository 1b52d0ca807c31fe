"""Manifest model and Avro codec: manifest lists, manifests and index manifests (docs/format.md §4).

Serialized BinaryRows (partition, min/max key, stats rows) stay opaque ``bytes`` here; another module
decodes them. Every codec function is pure: bytes in, bytes out, no filesystem.

The Avro object container framing (header, blocks, codecs) is handled here and only the record
encoding is delegated to fastavro. That keeps two things exact and dependency-free:

* ``_CREATION_TIME`` (timestamp-millis) is read and written as a raw epoch-millis ``int``: the
  decoder strips logical types from the writer schema, so no datetime or timezone conversion ever
  happens and every long round-trips;
* the ``zstandard`` and ``snappy`` codecs use pyarrow's built-in compressors, so no optional
  compression package is needed.
"""

from __future__ import annotations

import bz2
import io
import json
import lzma
import os
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any, ClassVar, NamedTuple

import fastavro
import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, OptionError, UnsafePathError
from lake_assets.paths import check_file_name

__all__ = [
    "EMPTY_ROW",
    "INDEX_MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_FILE_META_SCHEMA",
    "DataFileMeta",
    "DeletionVectorRange",
    "EntryIdentifier",
    "FileKind",
    "IndexManifestEntry",
    "ManifestEntry",
    "ManifestFileMeta",
    "SimpleStats",
    "avro_codec",
    "decode_index_manifest",
    "decode_manifest_entries",
    "decode_manifest_list",
    "encode_index_manifest",
    "encode_manifest_entries",
    "encode_manifest_list",
    "manifest_file_meta_for",
    "summarize_entries",
]

#: Serialized BinaryRow of arity 0: 4-byte big-endian arity 0 plus an 8-byte null bitset.
EMPTY_ROW = bytes(12)

MANIFEST_VERSION = 2
INDEX_MANIFEST_VERSION = 1


# ---------------------------------------------------------------------------------------------- model


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Min/max rows and per-column null counts (§4.5); rows are serialized BinaryRows."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    EMPTY: ClassVar[SimpleStats]


SimpleStats.EMPTY = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


class FileKind(IntEnum):
    """Kind of a manifest or index manifest entry."""

    ADD = 0
    DELETE = 1


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """One data file as described by the ``_FILE`` record (§4.4).

    ``creation_time_ms`` is the writer's local wall-clock time as epoch millis (as if UTC).
    """

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time_ms: int | None = None
    delete_row_count: int | None = None
    embedded_file_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    def upgrade(self, level: int) -> DataFileMeta:
        """The same file at another LSM level (an upgrade without rewrite)."""
        return replace(self, level=level)


class EntryIdentifier(NamedTuple):
    """Identity of a manifest entry (§4.3): a DELETE cancels the ADD with the same identity."""

    partition: bytes
    bucket: int
    level: int
    file_name: str
    extra_files: tuple[str, ...]
    embedded_file_index: bytes | None
    external_path: str | None


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One ADD or DELETE of a data file in a manifest (§4.3)."""

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def identifier(self) -> EntryIdentifier:
        """Hashable identity; the level is part of it, so upgrades are DELETE + ADD."""
        f = self.file
        return EntryIdentifier(
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_file_index,
            f.external_path,
        )


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One manifest file as listed in a manifest list (§4.2)."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None
    max_bucket: int | None
    min_level: int | None
    max_level: int | None
    min_row_id: int | None = None
    max_row_id: int | None = None


class DeletionVectorRange(NamedTuple):
    """Where one data file's deletion vector sits inside a deletion-vector index file."""

    data_file: str
    offset: int
    length: int
    cardinality: int | None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    """One index file of an index manifest (§4.6).

    ``global_index`` uses snake_case keys: ``row_range_start``, ``row_range_end``, ``index_field_id``,
    ``extra_field_ids`` (tuple or None), ``index_meta`` and ``source_meta`` (bytes or None).
    """

    kind: FileKind
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorRange, ...] | None = None
    external_path: str | None = None
    global_index: dict[str, Any] | None = None


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


def _strip_logical_types(schema: Any) -> Any:
    """A copy of an Avro schema without logicalType annotations (values stay raw ints)."""
    if isinstance(schema, list):
        return [_strip_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        return {k: _strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def _parse_plain(schema: dict[str, Any]) -> dict[str, Any]:
    return fastavro.parse_schema(_strip_logical_types(schema))


# Parsed once: encoding must not redo schema work per call or per entry.
_PARSED_ENTRY = _parse_plain(MANIFEST_ENTRY_SCHEMA)
_PARSED_LIST = _parse_plain(MANIFEST_FILE_META_SCHEMA)
_PARSED_INDEX = _parse_plain(INDEX_MANIFEST_ENTRY_SCHEMA)
_JSON_ENTRY = json.dumps(MANIFEST_ENTRY_SCHEMA, separators=(",", ":")).encode()
_JSON_LIST = json.dumps(MANIFEST_FILE_META_SCHEMA, separators=(",", ":")).encode()
_JSON_INDEX = json.dumps(INDEX_MANIFEST_ENTRY_SCHEMA, separators=(",", ":")).encode()


# ------------------------------------------------------------------------------------------- codecs

_OPTION_TO_CODEC = {
    "zstd": "zstandard",
    "zstandard": "zstandard",
    "none": "null",
    "null": "null",
    "deflate": "deflate",
    "snappy": "snappy",
    "bzip2": "bzip2",
    "xz": "xz",
}


def avro_codec(option_value: str) -> str:
    """Avro codec name for a ``manifest.compression`` option value (``zstd`` -> ``zstandard``)."""
    codec = _OPTION_TO_CODEC.get(option_value.strip().lower())
    if codec is None:
        supported = ", ".join(sorted(_OPTION_TO_CODEC))
        raise OptionError(f"Unsupported manifest.compression {option_value!r}; use one of {supported}")
    return codec


class _AvroError(Exception):
    """Internal: malformed container; turned into CorruptMetadataError naming the file."""


_SNAPPY = pa.Codec("snappy")
# Snappy cannot expand data by more than this; a larger claimed size means corrupt input.
_SNAPPY_MAX_RATIO = 64


def _zstd_decompress(data: bytes) -> bytes:
    # Streaming decompression: Java's frames do not record the decompressed size.
    return pa.CompressedInputStream(pa.BufferReader(data), "zstd").read()


def _snappy_decompress(data: bytes) -> bytes:
    # Avro snappy block: raw snappy data, then the CRC32 of the uncompressed bytes (big-endian).
    if len(data) < 5:
        raise _AvroError("snappy block too short")
    body, crc = data[:-4], struct.unpack(">I", data[-4:])[0]
    size, shift, pos = 0, 0, 0
    while True:
        if pos >= len(body) or shift > 28:
            raise _AvroError("bad snappy length preamble")
        b = body[pos]
        pos += 1
        size |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    if size > _SNAPPY_MAX_RATIO * len(body) + 64:
        raise _AvroError("snappy block claims an impossible size")
    out = _SNAPPY.decompress(body, decompressed_size=size, asbytes=True)
    if zlib.crc32(out) != crc:
        raise _AvroError("snappy block checksum mismatch")
    return out


def _snappy_compress(data: bytes) -> bytes:
    return _SNAPPY.compress(data, asbytes=True) + struct.pack(">I", zlib.crc32(data))


def _deflate_compress(data: bytes) -> bytes:
    c = zlib.compressobj(-1, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


_DECOMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "null": bytes,
    "deflate": lambda d: zlib.decompress(d, -15),
    "snappy": _snappy_decompress,
    "zstandard": _zstd_decompress,
    "bzip2": bz2.decompress,
    "xz": lzma.decompress,
}


def _compressor(codec: str, zstd_level: int) -> Callable[[bytes], bytes]:
    if codec == "null":
        return bytes
    if codec == "deflate":
        return _deflate_compress
    if codec == "snappy":
        return _snappy_compress
    if codec == "zstandard":
        zstd = pa.Codec("zstd", compression_level=zstd_level)
        return lambda d: zstd.compress(d, asbytes=True)
    if codec == "bzip2":
        return bz2.compress
    if codec == "xz":
        return lzma.compress
    raise ValueError(f"Unsupported Avro codec {codec!r}; use one of {', '.join(_DECOMPRESSORS)}")


# -------------------------------------------------------------------------------- container framing

_MAGIC = b"Obj\x01"
_SYNC_SIZE = 16
# Java's default block size (DataFileConstants.DEFAULT_SYNC_INTERVAL).
_SYNC_INTERVAL = 64000


def _read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint at ``pos``; returns (value, next position)."""
    acc = shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise _AvroError("unexpected end of data")
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if not b & 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7
        if shift > 63:
            raise _AvroError("malformed varint")


def _write_long(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _encode_header(meta: dict[str, bytes], sync: bytes) -> bytes:
    parts = [_MAGIC, _write_long(len(meta))]
    for key, value in meta.items():
        k = key.encode()
        parts += [_write_long(len(k)), k, _write_long(len(value)), value]
    parts += [_write_long(0), sync]
    return b"".join(parts)


def _parse_header(buf: bytes) -> tuple[dict[str, bytes], bytes, int]:
    """Returns (metadata, sync marker, offset of the first block)."""
    if len(buf) == 0:
        raise _AvroError("file is empty")
    if buf[:4] != _MAGIC:
        raise _AvroError("not an Avro object container file (bad magic)")
    pos = 4
    meta: dict[str, bytes] = {}
    while True:
        count, pos = _read_long(buf, pos)
        if count == 0:
            break
        if count < 0:  # a negative count is followed by the block's byte size
            count = -count
            _, pos = _read_long(buf, pos)
        for _ in range(count):
            items: list[bytes] = []
            for _part in range(2):
                size, pos = _read_long(buf, pos)
                if size < 0 or pos + size > len(buf):
                    raise _AvroError("truncated header")
                items.append(bytes(buf[pos : pos + size]))
                pos += size
            try:
                meta[items[0].decode()] = items[1]
            except UnicodeDecodeError as exc:
                raise _AvroError("bad header key") from exc
    if pos + _SYNC_SIZE > len(buf):
        raise _AvroError("truncated header")
    return meta, bytes(buf[pos : pos + _SYNC_SIZE]), pos + _SYNC_SIZE


def _iter_blocks(buf: bytes, pos: int, sync: bytes) -> Iterator[tuple[int, bytes]]:
    """Yields (record count, raw block bytes) of every block from ``pos`` to the end."""
    n = len(buf)
    while pos < n:
        count, pos = _read_long(buf, pos)
        size, pos = _read_long(buf, pos)
        if count < 0 or size < 0 or pos + size + _SYNC_SIZE > n:
            raise _AvroError("truncated data block")
        data = buf[pos : pos + size]
        pos += size
        if buf[pos : pos + _SYNC_SIZE] != sync:
            raise _AvroError("sync marker mismatch")
        pos += _SYNC_SIZE
        yield count, data


def _read_container(data: bytes) -> tuple[Any, list[Any]]:
    """Decode a container of any supported codec; returns (writer schema, records).

    The file is re-framed as an uncompressed container whose schema has no logical types and is
    then handed to fastavro, which only decodes records.
    """
    meta, sync, pos = _parse_header(data)
    if "avro.schema" not in meta:
        raise _AvroError("no avro.schema in header")
    codec = meta.get("avro.codec", b"null").decode("ascii", "replace") or "null"
    decompress = _DECOMPRESSORS.get(codec)
    if decompress is None:
        raise _AvroError(f"unsupported Avro codec {codec!r}")
    schema = json.loads(meta["avro.schema"])
    plain = json.dumps(_strip_logical_types(schema)).encode()
    parts = [_encode_header({"avro.schema": plain, "avro.codec": b"null"}, sync)]
    for count, raw in _iter_blocks(data, pos, sync):
        block = decompress(raw)
        parts += [_write_long(count), _write_long(len(block)), block, sync]
    return schema, list(fastavro.reader(io.BytesIO(b"".join(parts))))


def _write_container(
    parsed: dict[str, Any], schema_json: bytes, records: list[dict[str, Any]], codec: str, zstd_level: int
) -> bytes:
    compress = _compressor(codec, zstd_level)
    buf = io.BytesIO()
    fastavro.writer(
        buf,
        parsed,
        records,
        codec="null",
        sync_interval=_SYNC_INTERVAL,
        sync_marker=os.urandom(_SYNC_SIZE),
        disable_tuple_notation=True,
    )
    raw = buf.getvalue()
    _, sync, pos = _parse_header(raw)
    # The header carries the declared schema, logical types included, and the real codec.
    parts = [_encode_header({"avro.schema": schema_json, "avro.codec": codec.encode()}, sync)]
    for count, block in _iter_blocks(raw, pos, sync):
        packed = compress(block)
        parts += [_write_long(count), _write_long(len(packed)), packed, sync]
    return b"".join(parts)


# ------------------------------------------------------------------------- writer-schema validation

_PRIMITIVE_FAMILY = {
    "int": "integer",
    "long": "integer",
    "string": "string",
    "bytes": "bytes",
    "boolean": "boolean",
    "float": "float",
    "double": "float",
    "null": "null",
}


class _SchemaCheck:
    """Checks a writer schema against an expected one, matching fields by name.

    Records can be nullable unions in the writer schema (old Java writers wrap every row type in
    ``["null", record]``); for required fields those are remembered so that values can be checked.
    """

    def __init__(self, writer: Any) -> None:
        self.named: dict[str, Any] = {}
        self.nullable_required: list[tuple[str, ...]] = []
        self._collect(writer, "")

    def _collect(self, t: Any, namespace: str) -> None:
        """Register every named type, so references resolve wherever they were defined."""
        if isinstance(t, list):
            for branch in t:
                self._collect(branch, namespace)
        elif isinstance(t, dict):
            kind = t.get("type")
            if kind in ("record", "enum", "fixed"):
                name = str(t.get("name", ""))
                ns = str(t.get("namespace", namespace))
                full = name if "." in name or not ns else f"{ns}.{name}"
                self.named[full] = t
                self.named[full.rsplit(".", 1)[-1]] = t
                inner_ns = full.rsplit(".", 1)[0] if "." in full else ""
                for f in t.get("fields") or ():
                    if isinstance(f, dict):
                        self._collect(f.get("type"), inner_ns)
            elif kind == "array":
                self._collect(t.get("items"), namespace)
            elif kind == "map":
                self._collect(t.get("values"), namespace)

    def unwrap(self, t: Any) -> tuple[bool, Any]:
        """(nullable, the single non-null branch) with named references resolved."""
        nullable = False
        if isinstance(t, list):
            branches = [b for b in t if b != "null"]
            nullable = len(branches) < len(t)
            if len(branches) != 1:
                raise _AvroError(f"unsupported union {json.dumps(t)}")
            t = branches[0]
        if isinstance(t, str) and t not in _PRIMITIVE_FAMILY:
            ref = self.named.get(t) or self.named.get(t.rsplit(".", 1)[-1])
            if ref is None:
                raise _AvroError(f"unknown named type {t!r}")
            t = ref
        return nullable, t

    def family(self, t: Any) -> str:
        if isinstance(t, str):
            return _PRIMITIVE_FAMILY.get(t, t)
        if isinstance(t, dict):
            kind = t.get("type")
            if kind in ("record", "array", "map", "enum", "fixed"):
                return str(kind)
            return self.family(kind)
        return "union"

    def check(self, writer: Any, expected: Any, where: str, path: tuple[str, ...] | None) -> None:
        """``path`` locates the value from the record root; None where values may be absent."""
        _, w = self.unwrap(writer)
        e_nullable, e = self.unwrap(expected)
        wf, ef = self.family(w), self.family(e)
        if wf != ef:
            raise _AvroError(f"{where} has Avro type {wf}, expected {ef}")
        if ef == "array":
            self.check(w["items"], e["items"], f"{where}[]", None)
        elif ef == "record":
            self.check_record(w, e, where, None if e_nullable else path)

    def check_record(
        self,
        writer: dict[str, Any],
        expected: dict[str, Any],
        where: str,
        path: tuple[str, ...] | None,
    ) -> None:
        fields = writer.get("fields")
        if not isinstance(fields, list):
            raise _AvroError(f"{where} is a record without fields")
        by_name = {f.get("name"): f.get("type") for f in fields if isinstance(f, dict)}
        for ef in expected["fields"]:
            name = ef["name"]
            e_nullable, _ = self.unwrap(ef["type"])
            if name not in by_name:
                if not e_nullable:
                    raise _AvroError(f"required field {where}.{name} is missing")
                continue
            w_nullable, _ = self.unwrap(by_name[name])
            field_path = None if path is None else (*path, name)
            if w_nullable and not e_nullable and field_path is not None:
                self.nullable_required.append(field_path)
            self.check(by_name[name], ef["type"], f"{where}.{name}", field_path)


def _validated_records(
    data: bytes, name: str, expected: dict[str, Any], version: int
) -> list[dict[str, Any]]:
    """Decode a container and check its writer schema, nulls and ``_VERSION`` values."""
    try:
        writer, records = _read_container(data)
        check = _SchemaCheck(writer)
        _, top = check.unwrap(writer)
        if check.family(top) != "record":
            raise _AvroError("top-level schema is not a record")
        check.check_record(top, expected, "record", ())
    except CorruptMetadataError:
        raise
    except Exception as exc:  # fastavro, codecs and json raise many types; callers get one
        raise CorruptMetadataError(f"Cannot decode Avro file {name}: {exc}") from exc
    paths = check.nullable_required
    for i, rec in enumerate(records):
        if rec is None:
            raise CorruptMetadataError(f"Cannot decode Avro file {name}: record {i} is null")
        for path in paths:
            value: Any = rec
            for key in path:
                value = value[key]
            if value is None:
                raise CorruptMetadataError(
                    f"Cannot decode Avro file {name}: record {i} has null required field {'.'.join(path)}"
                )
        if rec["_VERSION"] != version:
            raise CorruptMetadataError(
                f"Cannot decode Avro file {name}: unsupported _VERSION {rec['_VERSION']} (expected {version})"
            )
    return records


# ----------------------------------------------------------------------------------------- records

_KINDS = {0: FileKind.ADD, 1: FileKind.DELETE}


def _kind(value: int) -> FileKind:
    kind = _KINDS.get(value)
    if kind is None:
        raise ValueError(f"unknown _KIND {value}")
    return kind


def _stats_from(rec: dict[str, Any]) -> SimpleStats:
    mins, maxs, nulls = rec["_MIN_VALUES"], rec["_MAX_VALUES"], rec.get("_NULL_COUNTS")
    if nulls is None:
        return SimpleStats(mins, maxs, None)
    if not nulls and mins == EMPTY_ROW and maxs == EMPTY_ROW:
        return SimpleStats.EMPTY  # shared: most files carry no value stats
    return SimpleStats(mins, maxs, tuple(nulls))


def _stats_to(s: SimpleStats) -> dict[str, Any]:
    return {"_MIN_VALUES": s.min_values, "_MAX_VALUES": s.max_values, "_NULL_COUNTS": s.null_counts}


def _opt_tuple(value: list[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _file_from(f: dict[str, Any]) -> DataFileMeta:
    g = f.get
    # File names become paths under the table's bucket directories: plain names only.
    for extra in f["_EXTRA_FILES"]:
        check_file_name(extra, "an extra file")
    return DataFileMeta(
        check_file_name(f["_FILE_NAME"], "a data file"),
        f["_FILE_SIZE"],
        f["_ROW_COUNT"],
        f["_MIN_KEY"],
        f["_MAX_KEY"],
        _stats_from(f["_KEY_STATS"]),
        _stats_from(f["_VALUE_STATS"]),
        f["_MIN_SEQUENCE_NUMBER"],
        f["_MAX_SEQUENCE_NUMBER"],
        f["_SCHEMA_ID"],
        f["_LEVEL"],
        tuple(f["_EXTRA_FILES"]),
        g("_CREATION_TIME"),
        g("_DELETE_ROW_COUNT"),
        g("_EMBEDDED_FILE_INDEX"),
        g("_FILE_SOURCE"),
        _opt_tuple(g("_VALUE_STATS_COLS")),
        g("_EXTERNAL_PATH"),
        g("_FIRST_ROW_ID"),
        _opt_tuple(g("_WRITE_COLS")),
        _opt_tuple(g("_WRITE_COLS_SEQUENCES")),
    )


def _file_to(f: DataFileMeta) -> dict[str, Any]:
    return {
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key,
        "_MAX_KEY": f.max_key,
        "_KEY_STATS": _stats_to(f.key_stats),
        "_VALUE_STATS": _stats_to(f.value_stats),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id,
        "_LEVEL": f.level,
        "_EXTRA_FILES": f.extra_files,
        "_CREATION_TIME": f.creation_time_ms,
        "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_file_index,
        "_FILE_SOURCE": f.file_source,
        "_VALUE_STATS_COLS": f.value_stats_cols,
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": f.write_cols,
        "_WRITE_COLS_SEQUENCES": f.write_cols_sequences,
    }


def _convert(records: list[dict[str, Any]], name: str, fn: Callable[[dict[str, Any]], Any]) -> list[Any]:
    try:
        return [fn(r) for r in records]
    except UnsafePathError as exc:
        raise CorruptMetadataError(f"Cannot decode Avro file {name}: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadataError(f"Cannot decode Avro file {name}: bad record: {exc!r}") from exc


# ----------------------------------------------------------------------------------- public codecs


def encode_manifest_entries(
    entries: Sequence[ManifestEntry], codec: str = "zstandard", *, zstd_level: int = 1
) -> bytes:
    """Avro bytes of a manifest holding ``entries`` in order (``codec`` is an Avro codec name)."""
    records = [
        {
            "_VERSION": MANIFEST_VERSION,
            "_KIND": int(e.kind),
            "_PARTITION": e.partition,
            "_BUCKET": e.bucket,
            "_TOTAL_BUCKETS": e.total_buckets,
            "_FILE": _file_to(e.file),
        }
        for e in entries
    ]
    return _write_container(_PARSED_ENTRY, _JSON_ENTRY, records, codec, zstd_level)


def _entry_from(r: dict[str, Any]) -> ManifestEntry:
    return ManifestEntry(
        _kind(r["_KIND"]), r["_PARTITION"], r["_BUCKET"], r["_TOTAL_BUCKETS"], _file_from(r["_FILE"])
    )


def decode_manifest_entries(data: bytes, name: str) -> list[ManifestEntry]:
    """Entries of a manifest file; ``name`` only labels errors (CorruptMetadataError)."""
    records = _validated_records(data, name, MANIFEST_ENTRY_SCHEMA, MANIFEST_VERSION)
    return _convert(records, name, _entry_from)


def encode_manifest_list(
    metas: Sequence[ManifestFileMeta], codec: str = "zstandard", *, zstd_level: int = 1
) -> bytes:
    """Avro bytes of a manifest list (Java's 13 fields)."""
    records = [
        {
            "_VERSION": MANIFEST_VERSION,
            "_FILE_NAME": m.file_name,
            "_FILE_SIZE": m.file_size,
            "_NUM_ADDED_FILES": m.num_added_files,
            "_NUM_DELETED_FILES": m.num_deleted_files,
            "_PARTITION_STATS": _stats_to(m.partition_stats),
            "_SCHEMA_ID": m.schema_id,
            "_MIN_BUCKET": m.min_bucket,
            "_MAX_BUCKET": m.max_bucket,
            "_MIN_LEVEL": m.min_level,
            "_MAX_LEVEL": m.max_level,
            "_MIN_ROW_ID": m.min_row_id,
            "_MAX_ROW_ID": m.max_row_id,
        }
        for m in metas
    ]
    return _write_container(_PARSED_LIST, _JSON_LIST, records, codec, zstd_level)


def _meta_from(r: dict[str, Any]) -> ManifestFileMeta:
    g = r.get
    return ManifestFileMeta(
        check_file_name(r["_FILE_NAME"], "a manifest"),
        r["_FILE_SIZE"],
        r["_NUM_ADDED_FILES"],
        r["_NUM_DELETED_FILES"],
        _stats_from(r["_PARTITION_STATS"]),
        r["_SCHEMA_ID"],
        g("_MIN_BUCKET"),
        g("_MAX_BUCKET"),
        g("_MIN_LEVEL"),
        g("_MAX_LEVEL"),
        g("_MIN_ROW_ID"),
        g("_MAX_ROW_ID"),
    )


def decode_manifest_list(data: bytes, name: str) -> list[ManifestFileMeta]:
    """Records of a manifest list; pypaimon's extra fields are ignored."""
    records = _validated_records(data, name, MANIFEST_FILE_META_SCHEMA, MANIFEST_VERSION)
    return _convert(records, name, _meta_from)


def _global_index_to(g: dict[str, Any] | None) -> dict[str, Any] | None:
    if g is None:
        return None
    return {
        "_ROW_RANGE_START": g["row_range_start"],
        "_ROW_RANGE_END": g["row_range_end"],
        "_INDEX_FIELD_ID": g["index_field_id"],
        "_EXTRA_FIELD_IDS": g.get("extra_field_ids"),
        "_INDEX_META": g.get("index_meta"),
        "_SOURCE_META": g.get("source_meta"),
    }


def _global_index_from(r: dict[str, Any] | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "row_range_start": r["_ROW_RANGE_START"],
        "row_range_end": r["_ROW_RANGE_END"],
        "index_field_id": r["_INDEX_FIELD_ID"],
        "extra_field_ids": _opt_tuple(r.get("_EXTRA_FIELD_IDS")),
        "index_meta": r.get("_INDEX_META"),
        "source_meta": r.get("_SOURCE_META"),
    }


def encode_index_manifest(
    entries: Sequence[IndexManifestEntry], codec: str = "zstandard", *, zstd_level: int = 1
) -> bytes:
    """Avro bytes of an index manifest (``_VERSION`` 1)."""
    records = [
        {
            "_VERSION": INDEX_MANIFEST_VERSION,
            "_KIND": int(e.kind),
            "_PARTITION": e.partition,
            "_BUCKET": e.bucket,
            "_INDEX_TYPE": e.index_type,
            "_FILE_NAME": e.file_name,
            "_FILE_SIZE": e.file_size,
            "_ROW_COUNT": e.row_count,
            "_DELETIONS_VECTORS_RANGES": None
            if e.dv_ranges is None
            else [{"f0": d[0], "f1": d[1], "f2": d[2], "_CARDINALITY": d[3]} for d in e.dv_ranges],
            "_EXTERNAL_PATH": e.external_path,
            "_GLOBAL_INDEX": _global_index_to(e.global_index),
        }
        for e in entries
    ]
    return _write_container(_PARSED_INDEX, _JSON_INDEX, records, codec, zstd_level)


def _index_entry_from(r: dict[str, Any]) -> IndexManifestEntry:
    ranges = r.get("_DELETIONS_VECTORS_RANGES")
    return IndexManifestEntry(
        _kind(r["_KIND"]),
        r["_PARTITION"],
        r["_BUCKET"],
        r["_INDEX_TYPE"],
        check_file_name(r["_FILE_NAME"], "an index file"),
        r["_FILE_SIZE"],
        r["_ROW_COUNT"],
        None
        if ranges is None
        # Java declares nullable elements; a null element carries nothing, so it is dropped.
        else tuple(
            DeletionVectorRange(d["f0"], d["f1"], d["f2"], d.get("_CARDINALITY")) for d in ranges if d
        ),
        r.get("_EXTERNAL_PATH"),
        _global_index_from(r.get("_GLOBAL_INDEX")),
    )


def decode_index_manifest(data: bytes, name: str) -> list[IndexManifestEntry]:
    """Entries of an index manifest file."""
    records = _validated_records(data, name, INDEX_MANIFEST_ENTRY_SCHEMA, INDEX_MANIFEST_VERSION)
    return _convert(records, name, _index_entry_from)


# -------------------------------------------------------------------------------------- summaries


def summarize_entries(entries: Iterable[ManifestEntry]) -> dict[str, int]:
    """Counts and ranges of one manifest's entries, keyed like ManifestFileMeta's fields.

    Keys: num_added_files, num_deleted_files, schema_id (max), min_bucket, max_bucket, min_level,
    max_level. Partition stats need BinaryRow decoding and are computed by the caller.
    """
    added = deleted = 0
    schema_id = min_bucket = max_bucket = min_level = max_level = None
    for e in entries:
        if e.kind == FileKind.ADD:
            added += 1
        else:
            deleted += 1
        f = e.file
        if schema_id is None:
            schema_id, min_bucket, max_bucket, min_level, max_level = (
                f.schema_id, e.bucket, e.bucket, f.level, f.level,
            )  # fmt: skip
            continue
        schema_id = max(schema_id, f.schema_id)
        min_bucket = min(min_bucket, e.bucket)  # type: ignore[type-var]
        max_bucket = max(max_bucket, e.bucket)  # type: ignore[type-var]
        min_level = min(min_level, f.level)  # type: ignore[type-var]
        max_level = max(max_level, f.level)  # type: ignore[type-var]
    if schema_id is None:
        raise ValueError("Cannot summarize a manifest without entries")
    return {
        "num_added_files": added,
        "num_deleted_files": deleted,
        "schema_id": schema_id,
        "min_bucket": min_bucket,  # type: ignore[dict-item]
        "max_bucket": max_bucket,  # type: ignore[dict-item]
        "min_level": min_level,  # type: ignore[dict-item]
        "max_level": max_level,  # type: ignore[dict-item]
    }


def manifest_file_meta_for(
    name: str, size: int, entries: Iterable[ManifestEntry], partition_stats: SimpleStats
) -> ManifestFileMeta:
    """The manifest-list record of a written manifest file."""
    return ManifestFileMeta(
        file_name=name, file_size=size, partition_stats=partition_stats, **summarize_entries(entries)
    )
