"""Avro data files in Paimon's layout (`lake_assets.formats.avro_schema`), encoded and decoded in
bulk by fastavro.

A write turns each chunk into raw columns (`avro_arrow.to_raw`), lets fastavro encode the rows
into uncompressed blocks and compresses each block with pyarrow's codecs (no optional Python
compression packages); a read reverses that: `AvroFormat.read` from the whole file's bytes,
`AvroFormat.iter_batches` a block and a batch of records at a time (`avro_block_stream`). The
Avro object container framing is shared with manifests. The codec is the one Paimon Java 0.9
picks: ``avro.codec`` when the table sets it, else ``zstandard`` for ``file.compression`` (or
its level's) ``zstd``, ``snappy`` for every other value.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, cast

import fastavro
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.formats.avro_arrow import from_raw, to_raw
from lake_assets.formats.avro_block_stream import AvroBlockStream, PlainContainer, plain_header

# One implementation of the Avro container framing and block codecs, shared with manifests.
from lake_assets.formats.avro_container import (
    _DECOMPRESSORS,
    AvroError,
    _compressor,
    _encode_header,
    _iter_blocks,
    _parse_header,
    _write_long,
)
from lake_assets.formats.avro_schema import (
    BRANCH_FIELD,
    RECORD_BRANCH,
    arrow_types,
    file_schema,
    maps_as_arrays,
    strip_logical_types,
    with_branch_field,
)
from lake_assets.formats.file_format import FileFormat, FormatWriter, WriteOptions, register
from lake_assets.formats.format_options import avro_codec
from lake_assets.spec.data_types import DataType
from lake_assets.spec.schema import TableSchema

_SYNC_SIZE = 16
# rows fastavro encodes per block: about Java's 64 KB sync interval for narrow rows
_BLOCK_ROWS = 4096
# rows decoded at a time: by a whole-file read (at least), by `iter_batches` without batch rows
_GROUP_ROWS = 16 * _BLOCK_ROWS


def avro_codec_of(schema: TableSchema, compression: str | None = None) -> str:
    """The Avro codec Paimon Java writes data files of this table with, for files compressed with
    ``compression`` (default: the table's ``file.compression``)."""
    return avro_codec(schema.options, compression or schema.core_options.file_compression)


def layout_types(schema: TableSchema, arrow_schema: pa.Schema) -> list[tuple[str, DataType]]:
    """(column, Paimon type) of every column of the file layout: keys NOT NULL, system columns."""
    from lake_assets.formats.data_file import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
    from lake_assets.spec.data_types import BigIntType, TinyIntType

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
        self._record = with_branch_field(maps_as_arrays(strip_logical_types(declared[1])))
        self._encoders: dict[tuple[bool, ...], Any] = {}
        self._codec = avro_codec_of(schema, options.compression)
        self._compress = _compressor(self._codec, options.zstd_level)
        self._sync = os.urandom(_SYNC_SIZE)
        self._types = [f.type for f in arrow_schema]
        sink.write(_encode_header({"avro.schema": json.dumps(declared).encode(),
                                   "avro.codec": self._codec.encode()}, self._sync))

    def _encoder(self, dense: tuple[bool, ...]) -> Any:
        """The schema fastavro encodes a piece with: a nullable column without NULLs in the piece
        becomes an int field (its union index, always 1) and a plain field, which encode to the
        same bytes as the union but spare fastavro resolving the union value by value."""
        parsed = self._encoders.get(dense)
        if parsed is None:
            fields = [self._record["fields"][0]]
            for f, is_dense in zip(self._record["fields"][1:], dense, strict=True):
                if is_dense and isinstance(f["type"], list):
                    fields += [{"name": _index_name(f["name"]), "type": "int"},
                               {"name": f["name"], "type": f["type"][1]}]
                else:
                    fields.append(f)
            parsed = fastavro.parse_schema({**self._record, "fields": fields})
            self._encoders[dense] = parsed
        return parsed

    def write(self, chunk: pa.Table) -> None:
        for start in range(0, chunk.num_rows, _BLOCK_ROWS):
            piece = chunk.slice(start, _BLOCK_ROWS)
            n = piece.num_rows
            one = pa.repeat(pa.scalar(RECORD_BRANCH, pa.int32()), n)
            dense = tuple(c.null_count == 0 for c in piece.columns)
            columns, names = [one], [BRANCH_FIELD]
            for c, t, name, is_dense in zip(piece.columns, self._types, piece.column_names, dense, strict=True):
                if is_dense:
                    columns.append(one)
                    names.append(_index_name(name))
                columns.append(to_raw(c.combine_chunks(), t))  # one chunk: a slice of the file layout
                names.append(name)
            records = pa.StructArray.from_arrays(columns, names=names).to_pylist()
            buf = io.BytesIO()
            fastavro.writer(buf, self._encoder(dense), records, codec="null", sync_interval=1 << 30,
                            sync_marker=self._sync)
            encoded = buf.getvalue()
            _, _, pos = _parse_header(encoded)
            for count, block in _iter_blocks(encoded, pos, self._sync):
                packed = self._compress(block)
                self._sink.write(b"".join([_write_long(count), _write_long(len(packed)), packed, self._sync]))

    def close(self) -> None:
        """Blocks are complete as written: an Avro container has no footer."""


def _index_name(column: str) -> str:
    return f"{BRANCH_FIELD}_{column}"


@dataclass(frozen=True)
class _Layout:
    """How a data file's blocks decode: fastavro reads them as an uncompressed container of
    ``header`` (the schema without logical types), and `_to_arrow` turns its records into
    ``wanted`` columns."""

    header: bytes
    decompress: Callable[[bytes], bytes]
    raw_schema: pa.Schema
    logical_type: pa.StructType
    wanted: list[str]


def _layout(meta: dict[str, bytes], sync: bytes, columns: Sequence[str] | None) -> _Layout:
    declared = json.loads(meta["avro.schema"])
    codec = meta.get("avro.codec", b"null").decode("ascii", "replace") or "null"
    decompress = _DECOMPRESSORS.get(codec)
    if decompress is None:
        raise UnsupportedFeatureError(f"Avro codec {codec!r} of data files is not supported")
    union = isinstance(declared, list)
    record = declared[1] if union and declared[0] == "null" and len(declared) == 2 else declared
    if not isinstance(record, dict) or record.get("type") != "record":
        raise CorruptMetadataError("an Avro data file's schema must be a record or ['null', record]")
    plain = maps_as_arrays(strip_logical_types(record))
    header = plain_header(json.dumps(with_branch_field(plain) if union else plain).encode(), sync)
    raw_type, logical_type = arrow_types(record)
    wanted = list(columns) if columns is not None else [f.name for f in raw_type]
    for name in wanted:
        if raw_type.get_field_index(name) < 0:
            raise CorruptMetadataError(f"column {name} is not in the Avro data file")
    raw_schema = pa.schema(list(raw_type))
    if union:
        raw_schema = raw_schema.insert(0, pa.field(BRANCH_FIELD, pa.int32()))
    return _Layout(header, decompress, raw_schema, logical_type, wanted)


@contextlib.contextmanager
def _decode_errors() -> Iterator[None]:
    try:
        yield
    except (AvroError, KeyError, ValueError, TypeError, EOFError) as exc:
        raise CorruptMetadataError(f"bad Avro data file: {exc}") from exc


def _decode(data: bytes, columns: Sequence[str] | None) -> Iterator[pa.Table]:
    """The blocks of a whole file's bytes as Arrow tables of ``columns`` (all when None),
    `_GROUP_ROWS` rows or more at a time: one fastavro reader per group of blocks."""
    with _decode_errors():
        meta, sync, pos = _parse_header(data)
        layout = _layout(meta, sync, columns)
        parts: list[bytes] = []
        rows = 0
        blocks = list(_iter_blocks(data, pos, sync))
        for i, (count, block) in enumerate(blocks):
            plain = layout.decompress(block)
            parts += [_write_long(count), _write_long(len(plain)), plain, sync]
            rows += count
            if rows >= _GROUP_ROWS or i == len(blocks) - 1:
                records = list(fastavro.reader(io.BytesIO(layout.header + b"".join(parts))))
                parts, rows = [], 0
                yield _to_arrow(records, layout)


def _stream(source: Any, columns: Sequence[str] | None, batch_rows: int) -> Iterator[pa.Table]:
    """A file's records as Arrow tables of ``columns`` of at most ``batch_rows`` rows, read from
    ``source`` a block at a time: memory holds one block, a read-ahead and ``batch_rows``
    records, whatever the file's size."""
    with _decode_errors():
        stream = AvroBlockStream(source)
        meta, sync = stream.header()
        layout = _layout(meta, sync, columns)
        container = PlainContainer(layout.header, sync, stream.blocks(sync), layout.decompress)
        records = fastavro.reader(cast(IO[bytes], container))  # fastavro only calls read(n)
        while batch := list(itertools.islice(records, batch_rows)):
            yield _to_arrow(batch, layout)


def _to_arrow(records: list[Any], layout: _Layout) -> pa.Table:
    # one C++ conversion of the dicts into a STRUCT array, then its columns
    raw_schema, logical, wanted = layout.raw_schema, layout.logical_type, layout.wanted
    raw = pa.Table.from_struct_array(pa.array(records, type=pa.struct(list(raw_schema))))
    has_branch = raw_schema.get_field_index(BRANCH_FIELD) >= 0 and raw.num_rows
    if has_branch and not pc.all(pc.equal(raw.column(BRANCH_FIELD), RECORD_BRANCH)).as_py():
        raise CorruptMetadataError("an Avro data file holds a NULL row (Paimon never writes one)")
    arrays, fields = [], []
    for name in wanted:
        i = raw_schema.get_field_index(name)
        f = logical.field(name)
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

    def open_writer(self, sink: Any, arrow_schema: pa.Schema, schema: TableSchema,
                    options: WriteOptions) -> FormatWriter:
        return _AvroWriter(sink, arrow_schema, schema, options)

    def read(self, source: Any, columns: Sequence[str] | None, *, use_threads: bool,
             footer_key: str | None = None) -> pa.Table:
        data = source.read()
        tables = list(_decode(data, columns))
        return pa.concat_tables(tables) if tables else _empty(data, columns)

    def row_count(self, source: Any, *, footer_key: str | None = None) -> int:
        # an Avro container records no total: the record counts of its blocks, none decoded
        with _decode_errors():
            stream = AvroBlockStream(source)
            _, sync = stream.header()
            return sum(count for count, _ in stream.blocks(sync))

    def iter_batches(self, source: Any, columns: Sequence[str] | None, batch_rows: int | None = None, *,
                     footer_key: str | None = None, buffer_bytes: int = 0,
                     coalesce: bool = False) -> Iterator[pa.Table]:
        """Streams: the source is read a block at a time and at most ``batch_rows`` (default
        `_GROUP_ROWS`) records are decoded at once (`_stream`)."""
        yield from _stream(source, columns, batch_rows or _GROUP_ROWS)


AVRO = register(AvroFormat())
