"""Avro data files in Paimon's layout (`lake_assets.formats.avro_schema`), encoded and decoded in
bulk by fastavro.

A write turns each chunk into raw columns (`avro_arrow.to_raw`), lets fastavro encode the rows
into uncompressed blocks and compresses each block with pyarrow's codecs (no optional Python
compression packages); a read reverses that. The Avro object container framing is shared with
manifests. Codec: ``avro.codec`` when the table sets it, else what Paimon Java 0.9 picks from
``file.compression``: ``zstandard`` for ``zstd``, ``snappy`` for every other value.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

import fastavro
import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.formats.avro_arrow import from_raw, to_raw
from lake_assets.formats.avro_schema import arrow_types, file_schema, strip_logical_types
from lake_assets.formats.file_format import FileFormat, FormatWriter, WriteOptions, register, sliced

# The container framing lives with the manifest codec (one implementation of the Avro blocks).
from lake_assets.spec.manifest import (
    _DECOMPRESSORS,
    _AvroError,
    _compressor,
    _encode_header,
    _iter_blocks,
    _parse_header,
    _write_long,
)
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.types import DataType

AVRO_CODECS = ("null", "deflate", "snappy", "zstandard")
_SYNC_SIZE = 16
# rows fastavro encodes per block: about Java's 64 KB sync interval for narrow rows
_BLOCK_ROWS = 4096


def avro_codec_of(schema: TableSchema) -> str:
    """The Avro codec Paimon Java writes data files of this table with."""
    explicit = schema.options.get("avro.codec")
    if explicit is not None:
        return explicit.strip().lower()
    return "zstandard" if schema.core_options.file_compression == "zstd" else "snappy"


def layout_types(schema: TableSchema, arrow_schema: pa.Schema) -> list[tuple[str, DataType]]:
    """(column, Paimon type) of every column of the file layout: keys NOT NULL, system columns."""
    from lake_assets.formats.data_file import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
    from lake_assets.spec.types import BigIntType, TinyIntType

    out: list[tuple[str, DataType]] = []
    for f in arrow_schema:
        if f.name == SEQUENCE_NUMBER:
            out.append((f.name, BigIntType(nullable=False)))
        elif f.name == VALUE_KIND:
            out.append((f.name, TinyIntType(nullable=False)))
        elif f.name.startswith(KEY_PREFIX) and f.name not in schema.field_names:
            out.append((f.name, schema.field(f.name[len(KEY_PREFIX):]).type.copy(nullable=False)))
        else:
            out.append((f.name, schema.field(f.name).type))
    return out


class _AvroWriter(FormatWriter):
    def __init__(self, sink: Any, arrow_schema: pa.Schema, schema: TableSchema, options: WriteOptions) -> None:
        self._sink = sink
        declared = file_schema(layout_types(schema, arrow_schema))
        self._plain = fastavro.parse_schema(strip_logical_types(declared))
        self._codec = avro_codec_of(schema)
        self._compress = _compressor(self._codec, options.zstd_level)
        self._sync = os.urandom(_SYNC_SIZE)
        self._types = [f.type for f in arrow_schema]
        sink.write(_encode_header({"avro.schema": json.dumps(declared).encode(),
                                   "avro.codec": self._codec.encode()}, self._sync))

    def write(self, chunk: pa.Table) -> None:
        for start in range(0, chunk.num_rows, _BLOCK_ROWS):
            piece = chunk.slice(start, _BLOCK_ROWS)
            raw = pa.table([to_raw(c.combine_chunks(), t) for c, t in zip(piece.columns, self._types, strict=True)],
                           names=piece.column_names)
            records = raw.to_pylist(maps_as_pydicts="strict")
            buf = io.BytesIO()
            fastavro.writer(buf, self._plain, records, codec="null", sync_interval=1 << 30,
                            sync_marker=self._sync)
            encoded = buf.getvalue()
            _, _, pos = _parse_header(encoded)
            for count, block in _iter_blocks(encoded, pos, self._sync):
                packed = self._compress(block)
                self._sink.write(b"".join([_write_long(count), _write_long(len(packed)), packed, self._sync]))

    def close(self) -> None:
        """Blocks are complete as written: an Avro container has no footer."""


def _decode(data: bytes, columns: Sequence[str] | None) -> Iterator[pa.Table]:
    """The file's blocks as Arrow tables of ``columns`` (all when None), a few blocks at a time."""
    try:
        meta, sync, pos = _parse_header(data)
        declared = json.loads(meta["avro.schema"])
        codec = meta.get("avro.codec", b"null").decode("ascii", "replace") or "null"
        decompress = _DECOMPRESSORS.get(codec)
        if decompress is None:
            raise UnsupportedFeatureError(f"Avro codec {codec!r} of data files is not supported")
        record = declared[1] if isinstance(declared, list) else declared
        if not isinstance(record, dict) or record.get("type") != "record":
            raise CorruptMetadataError("an Avro data file's schema must be a record")
        plain_header = _encode_header({"avro.schema": json.dumps(strip_logical_types(declared)).encode(),
                                       "avro.codec": b"null"}, sync)
        raw_type, logical_type = arrow_types(record)
        wanted = list(columns) if columns is not None else [f.name for f in raw_type]
        for name in wanted:
            if raw_type.get_field_index(name) < 0:
                raise CorruptMetadataError(f"column {name} is not in the Avro data file")
        raw_schema = pa.schema(list(raw_type))
        parts: list[bytes] = []
        rows = 0
        blocks = list(_iter_blocks(data, pos, sync))
        for i, (count, block) in enumerate(blocks):
            plain = decompress(block)
            parts += [_write_long(count), _write_long(len(plain)), plain, sync]
            rows += count
            if rows >= _BLOCK_ROWS * 16 or i == len(blocks) - 1:
                records = list(fastavro.reader(io.BytesIO(plain_header + b"".join(parts))))
                parts, rows = [], 0
                yield _to_arrow(records, raw_schema, logical_type, wanted)
    except (_AvroError, KeyError, ValueError, TypeError, EOFError) as exc:
        raise CorruptMetadataError(f"bad Avro data file: {exc}") from exc


def _to_arrow(records: list[Any], raw_schema: pa.Schema, logical: pa.StructType, wanted: list[str]) -> pa.Table:
    raw = pa.Table.from_pylist(records, schema=raw_schema)
    arrays, fields = [], []
    for name in wanted:
        i = raw_schema.get_field_index(name)
        f = logical[i]
        arrays.append(from_raw(raw.column(i).combine_chunks(), raw_schema.field(i).type, f.type))
        fields.append(f)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _empty(data: bytes, columns: Sequence[str] | None) -> pa.Table:
    meta, _, _ = _parse_header(data)
    declared = json.loads(meta["avro.schema"])
    record = declared[1] if isinstance(declared, list) else declared
    logical = arrow_types(record)[1]
    names = list(columns) if columns is not None else [f.name for f in logical]
    return pa.schema([logical.field(n) for n in names]).empty_table()


class AvroFormat(FileFormat):
    """Apache Avro (``file.format = avro``)."""

    name = "avro"

    def check_writable(self, schema: TableSchema, table: str) -> None:
        codec = avro_codec_of(schema)
        if codec not in AVRO_CODECS:
            raise UnsupportedFeatureError(
                f"Cannot write Avro files of {table}: avro.codec = {codec!r} is not supported; "
                f"use one of {', '.join(AVRO_CODECS)}"
            )

    def open_writer(self, sink: Any, arrow_schema: pa.Schema, schema: TableSchema,
                    options: WriteOptions) -> FormatWriter:
        return _AvroWriter(sink, arrow_schema, schema, options)

    def read(self, source: Any, columns: Sequence[str] | None, *, use_threads: bool) -> pa.Table:
        data = source.read()
        tables = list(_decode(data, columns))
        return pa.concat_tables(tables) if tables else _empty(data, columns)

    def iter_batches(self, source: Any, columns: Sequence[str] | None,
                     batch_rows: int | None = None) -> Iterator[pa.Table]:
        yield from sliced(self._pieces(source, columns), batch_rows)

    def _pieces(self, source: Any, columns: Sequence[str] | None) -> Iterator[pa.Table]:
        yield from _decode(source.read(), columns)


AVRO = register(AvroFormat())
