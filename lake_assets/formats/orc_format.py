"""ORC data files through pyarrow's ORC adapter, in the layout Paimon Java writes.

Paimon stores TIME as milliseconds in an ORC INT and every other type as ORC's own; columns are
matched by name. ``file.compression`` becomes the ORC compression kind by its upper-cased name, as
Java does (``CompressionKind.valueOf``): ``zstd``, ``snappy``, ``lz4``, ``zlib`` and ``none`` are
written; other names fail in Java's writer (``lzo`` is an ORC kind pyarrow's writer lacks) and are
refused before anything is written (`lake_assets.table_support`, `FileFormat.codecs`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc

from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.file_format import FileFormat, FormatWriter, WriteOptions, register, sliced
from lake_assets.formats.format_options import orc_writer_kwargs
from lake_assets.spec.schema import TableSchema

# file.compression -> pyarrow's name of the ORC compression kind Java picks for it
ORC_CODECS = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "none": "uncompressed", "zlib": "zlib"}
# Java's ORC writer default stripe size; smaller targets flush stripes at the target so the
# rolling writer sees the file grow
_STRIPE_SIZE = 64 * 1024 * 1024
_NS_RANGE = re.compile(r"out of range for nanosecond", re.IGNORECASE)


def _physical(t: pa.DataType) -> pa.DataType:
    """The Arrow type pyarrow's ORC writer gets for a layout type (TIME as its milliseconds)."""
    if pa.types.is_time(t):
        return pa.int32()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_physical(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_physical(t.key_type)), t.item_field.with_type(_physical(t.item_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_physical(f.type)) for f in t])
    return t


def _has_time(t: pa.DataType) -> bool:
    return bool(_physical(t) != t)


def _to_physical(arr: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_time(t):
        # time32[ms] and int32 share their buffers: a reinterpretation, not a conversion
        return pa.chunked_array([c.view(pa.int32()) for c in arr.chunks], pa.int32())
    return arr.cast(_physical(t))


def _has_timestamp(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return True
    if pa.types.is_list(t):
        return _has_timestamp(t.value_type)
    if pa.types.is_map(t):
        return _has_timestamp(t.key_type) or _has_timestamp(t.item_type)
    if pa.types.is_struct(t):
        return any(_has_timestamp(f.type) for f in t)
    return False


def _timestamp_leaves(arr: pa.Array) -> Iterator[pa.Array]:
    t = arr.type
    if pa.types.is_timestamp(t):
        yield arr
    elif pa.types.is_map(t):
        yield from _timestamp_leaves(arr.keys)
        yield from _timestamp_leaves(arr.items)
    elif pa.types.is_list(t):
        yield from _timestamp_leaves(arr.values)
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _timestamp_leaves(arr.field(i))


_PER_MILLI = {"s": 1, "ms": 1, "us": 1000, "ns": 1_000_000}


def _check_timestamp_range(name: str, column: pa.ChunkedArray) -> None:
    """Refuse timestamps an ORC file written through pyarrow cannot carry to every reader:

    * outside 1677-09-21..2262-04-11: pyarrow's ORC reader holds timestamps in nanoseconds, and a
      file we wrote but cannot read would stop every later read and compaction of the table;
    * before 1970 with a fraction finer than a millisecond: ORC's C++ writer encodes their
      nanoseconds differently from ORC Java, whose reader (Paimon Java's) then fails on the file.
    """
    for chunk in column.chunks:
        for leaf in _timestamp_leaves(chunk):
            if leaf.null_count == len(leaf):
                continue
            try:
                leaf.cast(pa.timestamp("ns", leaf.type.tz))
            except pa.ArrowInvalid:
                raise InvalidDataError(
                    f"Column {name} holds a timestamp outside 1677-09-21..2262-04-11, which ORC files "
                    "written by lake_assets cannot hold (pyarrow's ORC reader reads them in nanoseconds); "
                    "use file.format parquet or avro for such values"
                ) from None
            per_milli = _PER_MILLI[leaf.type.unit]
            if per_milli > 1:
                raw = pc.fill_null(leaf.cast(pa.int64()), 0)
                odd = pc.and_(pc.less(raw, 0), pc.not_equal(pc.remainder(raw, per_milli), 0))
                if pc.any(odd).as_py():
                    raise InvalidDataError(
                        f"Column {name} holds a timestamp before 1970 with a fraction finer than a millisecond, "
                        "which ORC files written by lake_assets cannot hold (ORC's C++ writer encodes it in a way "
                        "Paimon Java's ORC reader fails on); use file.format parquet or avro for such values"
                    )


def _kept_entries(arr: pa.ListArray | pa.MapArray) -> tuple[pa.Array, pa.Array]:
    """(offsets from 0, positions in the child array) of the entries of non-NULL slots of a list
    or map array, in order."""
    starts = arr.offsets.to_numpy()
    lengths = np.diff(starts)
    if arr.null_count:
        lengths = np.where(arr.is_valid().to_numpy(zero_copy_only=False), lengths, 0)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    # position j of the output is starts[slot] + (j - offsets[slot])
    slot_of = np.repeat(np.arange(len(lengths)), lengths)
    positions = starts[:-1][slot_of] + (np.arange(offsets[-1]) - offsets[:-1][slot_of])
    return pa.array(offsets), pa.array(positions.astype(np.int64))


def _normalized(arr: pa.Array) -> pa.Array:
    """A nested column rebuilt so that no array in it has an offset (starts inside its buffers).

    pyarrow's ORC writer (Arrow's ORC adapter) normalizes only the top-level array: a sliced array
    below a STRUCT, LIST or MAP is read from the start of its buffers, so the file got the wrong
    values (a rolling writer slices every chunk it writes, and flattening a sliced STRUCT gives
    sliced children).
    """
    t = arr.type
    mask = pc.is_null(arr) if arr.null_count else None
    if pa.types.is_struct(t):
        children = [_normalized(c) for c in arr.flatten()]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_map(t):
        offsets, kept = _kept_entries(arr)
        return pa.MapArray.from_arrays(offsets, _normalized(arr.keys.take(kept)), _normalized(arr.items.take(kept)),
                                       type=t, mask=mask)
    if pa.types.is_list(t):
        offsets, kept = _kept_entries(arr)
        return pa.ListArray.from_arrays(offsets, _normalized(arr.values.take(kept)), type=t, mask=mask)
    return arr if not arr.offset else arr.take(pa.array(np.arange(len(arr))))


class _OrcWriter(FormatWriter):
    holds_rows_written = False  # a stripe is buffered until orc.stripe.size
    def __init__(self, sink: Any, arrow_schema: pa.Schema, schema: TableSchema, options: WriteOptions) -> None:
        self._converted = [i for i, f in enumerate(arrow_schema) if _has_time(f.type)]
        self._timestamps = [i for i, f in enumerate(arrow_schema) if _has_timestamp(f.type)]
        self._nested = [i for i, f in enumerate(arrow_schema) if pa.types.is_nested(f.type)]
        kwargs: dict[str, Any] = {
            "compression": ORC_CODECS[options.compression],
            "stripe_size": max(1024 * 1024, min(_STRIPE_SIZE, options.target_file_size)),
        }
        # the table's orc.* options (stripe and block sizes, bloom filters, ...) as OrcConf takes them
        kwargs.update(orc_writer_kwargs(schema.options, arrow_schema))
        self._writer = orc.ORCWriter(sink, **kwargs)

    def write(self, chunk: pa.Table) -> None:
        for i in self._timestamps:
            _check_timestamp_range(chunk.schema.field(i).name, chunk.column(i))
        for i in self._converted:
            f = chunk.schema.field(i)
            chunk = chunk.set_column(i, f.with_type(_physical(f.type)), _to_physical(chunk.column(i), f.type))
        for i in self._nested:
            column = chunk.column(i)
            chunk = chunk.set_column(i, chunk.schema.field(i),
                                     pa.chunked_array([_normalized(c) for c in column.chunks], column.type))
        self._writer.write(chunk)

    def close(self) -> None:
        self._writer.close()


def _read_error(exc: Exception) -> Exception:
    if _NS_RANGE.search(str(exc)):
        return UnsupportedFeatureError(
            "ORC file holds a timestamp outside 1677-09-21..2262-04-11, which pyarrow's ORC reader "
            f"cannot represent (it reads ORC timestamps in nanoseconds): {exc}"
        )
    return exc


class OrcFormat(FileFormat):
    """Apache ORC (``file.format = orc``)."""

    name = "orc"
    codecs = frozenset(ORC_CODECS)

    def open_writer(self, sink: Any, arrow_schema: pa.Schema, schema: TableSchema,
                    options: WriteOptions) -> FormatWriter:
        return _OrcWriter(sink, arrow_schema, schema, options)

    def read(self, source: Any, columns: Sequence[str] | None, *, use_threads: bool,
             footer_key: str | None = None) -> pa.Table:
        try:
            return orc.ORCFile(source).read(columns=list(columns) if columns is not None else None)
        except pa.ArrowInvalid as exc:
            raise _read_error(exc) from exc

    def row_count(self, source: Any, *, footer_key: str | None = None) -> int:
        try:
            return int(orc.ORCFile(source).nrows)  # the file's tail: no stripe is read
        except pa.ArrowInvalid as exc:
            raise _read_error(exc) from exc

    def iter_batches(self, source: Any, columns: Sequence[str] | None, batch_rows: int | None = None, *,
                     footer_key: str | None = None, buffer_bytes: int = 0,
                     coalesce: bool = False) -> Iterator[pa.Table]:
        """A stripe at a time, cut into ``batch_rows``: a reader holds a whole stripe (the
        writer's ``orc.stripe.size``, 64 MiB by default), whatever the batch size."""
        # pyarrow's ORCFile reads whole stripes only. Its dataset fragments decode batches from
        # column streams read in blocks, but a scan left unfinished over a Python file (the
        # fsspec sources) aborts the interpreter at exit ("FATAL: exception not rethrown").
        yield from sliced(self._pieces(source, columns), batch_rows)

    def _pieces(self, source: Any, columns: Sequence[str] | None) -> Iterator[pa.Table]:
        try:
            f = orc.ORCFile(source)
            for i in range(f.nstripes):
                batch = f.read_stripe(i, columns=list(columns) if columns is not None else None)
                yield pa.Table.from_batches([batch])
        except pa.ArrowInvalid as exc:
            raise _read_error(exc) from exc


ORC = register(OrcFormat())
