"""Avro object container files: header, blocks, sync markers and block codecs (docs/format.md §4).

The framing is hand-written and only the record encoding is delegated to fastavro. That keeps two
things exact and dependency-free:

* logical types are stripped from the schema fastavro sees, so ``timestamp-millis`` values stay raw
  epoch-millis ``int``\\ s: fastavro would turn them into datetimes (with a timezone conversion) even
  when told ``long``, and overflow past year 9999, while every long must round-trip;
* the ``zstandard`` and ``snappy`` codecs use pyarrow's built-in compressors, so no optional
  compression package is needed.

Every function is pure: bytes in, bytes out, no filesystem.
"""

from __future__ import annotations

import bz2
import io
import json
import lzma
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import fastavro
import pyarrow as pa

from lake_assets.errors import OptionError
from lake_assets.formats.avro_encoder import Encoder

__all__ = ["AvroError", "avro_codec", "read_container", "strip_logical_types", "write_container"]

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


class AvroError(Exception):
    """Malformed container; callers turn it into CorruptMetadataError naming the file."""


_SNAPPY = pa.Codec("snappy")
# Snappy cannot expand data by more than this; a larger claimed size means corrupt input.
_SNAPPY_MAX_RATIO = 64


def _zstd_decompress(data: bytes) -> bytes:
    # Streaming decompression: Java's frames do not record the decompressed size.
    return pa.CompressedInputStream(pa.BufferReader(data), "zstd").read()


def _snappy_decompress(data: bytes) -> bytes:
    # Avro snappy block: raw snappy data, then the CRC32 of the uncompressed bytes (big-endian).
    if len(data) < 5:
        raise AvroError("snappy block too short")
    body, crc = data[:-4], struct.unpack(">I", data[-4:])[0]
    size, shift, pos = 0, 0, 0
    while True:
        if pos >= len(body) or shift > 28:
            raise AvroError("bad snappy length preamble")
        b = body[pos]
        pos += 1
        size |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    if size > _SNAPPY_MAX_RATIO * len(body) + 64:
        raise AvroError("snappy block claims an impossible size")
    out = _SNAPPY.decompress(body, decompressed_size=size, asbytes=True)
    if zlib.crc32(out) != crc:
        raise AvroError("snappy block checksum mismatch")
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
            raise AvroError("unexpected end of data")
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if not b & 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7
        if shift > 63:
            raise AvroError("malformed varint")


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
        raise AvroError("file is empty")
    if buf[:4] != _MAGIC:
        raise AvroError("not an Avro object container file (bad magic)")
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
                    raise AvroError("truncated header")
                items.append(bytes(buf[pos : pos + size]))
                pos += size
            try:
                meta[items[0].decode()] = items[1]
            except UnicodeDecodeError as exc:
                raise AvroError("bad header key") from exc
    if pos + _SYNC_SIZE > len(buf):
        raise AvroError("truncated header")
    return meta, bytes(buf[pos : pos + _SYNC_SIZE]), pos + _SYNC_SIZE


def _iter_blocks(buf: bytes, pos: int, sync: bytes) -> Iterator[tuple[int, bytes]]:
    """Yields (record count, raw block bytes) of every block from ``pos`` to the end."""
    n = len(buf)
    while pos < n:
        count, pos = _read_long(buf, pos)
        size, pos = _read_long(buf, pos)
        if count < 0 or size < 0 or pos + size + _SYNC_SIZE > n:
            raise AvroError("truncated data block")
        data = buf[pos : pos + size]
        pos += size
        if buf[pos : pos + _SYNC_SIZE] != sync:
            raise AvroError("sync marker mismatch")
        pos += _SYNC_SIZE
        yield count, data


def strip_logical_types(schema: Any) -> Any:
    """A copy of an Avro schema without logicalType annotations (values stay raw ints)."""
    if isinstance(schema, list):
        return [strip_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        return {k: strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def read_container(data: bytes, plain_schema: Callable[[Any], Any]) -> tuple[Any, bytes]:
    """Decompress a container of any supported codec; returns (writer schema, plain container).

    The plain container is uncompressed and its header carries ``plain_schema(writer schema)``
    (which must keep the binary encoding unchanged: e.g. drop logical types, rename records), so
    fastavro only ever decodes records. Raises AvroError for a malformed container.
    """
    meta, sync, pos = _parse_header(data)
    if "avro.schema" not in meta:
        raise AvroError("no avro.schema in header")
    codec = meta.get("avro.codec", b"null").decode("ascii", "replace") or "null"
    decompress = _DECOMPRESSORS.get(codec)
    if decompress is None:
        raise AvroError(f"unsupported Avro codec {codec!r}")
    try:
        schema = json.loads(meta["avro.schema"])
    except ValueError as exc:
        raise AvroError(f"bad avro.schema: {exc}") from exc
    plain = json.dumps(plain_schema(schema)).encode()
    parts = [_encode_header({"avro.schema": plain, "avro.codec": b"null"}, sync)]
    for count, raw in _iter_blocks(data, pos, sync):
        block = decompress(raw)
        parts += [_write_long(count), _write_long(len(block)), block, sync]
    return schema, b"".join(parts)


def write_container(
    parsed: Any, schema_json: bytes, records: list[dict[str, Any]], codec: str, zstd_level: int,
    encoder: Encoder | None = None,
) -> bytes:
    """Container bytes of ``records``: ``parsed`` is the fastavro-parsed schema without logical
    types, ``schema_json`` the declared schema the header carries; ``codec`` is an Avro codec name.

    ``encoder`` (`avro_encoder.compile_schema` of the same schema) encodes the records instead of
    fastavro's writer: the same bytes, blocks cut where fastavro cuts them (after the record that
    brings a block to the sync interval)."""
    compress = _compressor(codec, zstd_level)
    sync = os.urandom(_SYNC_SIZE)
    if encoder is None:
        blocks = list(_fastavro_blocks(parsed, records, sync))
    else:
        blocks = list(_encoded_blocks(encoder, records))
    # The header carries the declared schema, logical types included, and the real codec.
    parts = [_encode_header({"avro.schema": schema_json, "avro.codec": codec.encode()}, sync)]
    for count, block in blocks:
        packed = compress(block)
        parts += [_write_long(count), _write_long(len(packed)), packed, sync]
    return b"".join(parts)


def _encoded_blocks(encoder: Encoder, records: list[dict[str, Any]]) -> Iterator[tuple[int, bytes]]:
    buf = bytearray()
    count = 0
    for record in records:
        encoder(buf, record)
        count += 1
        if len(buf) >= _SYNC_INTERVAL:
            yield count, bytes(buf)
            buf = bytearray()
            count = 0
    if count:
        yield count, bytes(buf)


def _fastavro_blocks(parsed: Any, records: list[dict[str, Any]], sync: bytes) -> Iterator[tuple[int, bytes]]:
    buf = io.BytesIO()
    fastavro.writer(
        buf,
        parsed,
        records,
        codec="null",
        sync_interval=_SYNC_INTERVAL,
        sync_marker=sync,
        disable_tuple_notation=True,
    )
    raw = buf.getvalue()
    _, _, pos = _parse_header(raw)
    yield from _iter_blocks(raw, pos, sync)
