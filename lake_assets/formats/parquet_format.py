"""Parquet data files: pyarrow's Parquet writer and reader, field ids as Java writes them.

The table's ``parquet.*`` options (page and dictionary page sizes, dictionaries, writer version,
zstd level, bloom filters, ``parquet.block.size``) override the writer's defaults as they do
parquet-hadoop's (`lake_assets.formats.format_options`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets.formats.file_format import FileFormat, FormatWriter, WriteOptions, register
from lake_assets.formats.format_options import parquet_overrides, parquet_row_group_bytes
from lake_assets.formats.parquet_footer_cache import FOOTER_CACHE
from lake_assets.formats.parquet_read import iter_parquet, parquet_row_count, read_parquet
from lake_assets.spec.schema import TableSchema


class _ParquetWriter(FormatWriter):
    def __init__(self, sink: Any, arrow_schema: pa.Schema, schema: TableSchema, options: WriteOptions) -> None:
        kwargs = {**options.parquet, **parquet_overrides(schema.options, arrow_schema, options.compression)}
        self._writer = pq.ParquetWriter(sink, arrow_schema, **kwargs)
        self._row_group_bytes = parquet_row_group_bytes(schema.options)

    def write(self, chunk: pa.Table) -> None:
        # one row group per chunk: the rolling writer sizes them (as parquet-java sizes blocks),
        # unless parquet.block.size asks for smaller ones
        rows = max(1, chunk.num_rows)
        if self._row_group_bytes is not None and chunk.num_rows:
            rows = max(1, min(rows, self._row_group_bytes * chunk.num_rows // max(1, chunk.nbytes)))
        self._writer.write_table(chunk, row_group_size=rows)

    def close(self) -> None:
        self._writer.close()

    def row_group_ranges(self, leaves: Sequence[int]) -> list[tuple[int, list[tuple[Any, Any] | None]]] | None:
        # the statistics parquet-cpp computed while encoding (write_statistics), read back from
        # the footer it just wrote: no second pass over the data
        return footer_ranges(self._writer.writer.metadata, leaves)


class SplicedParquetWriter(FormatWriter):
    """A Parquet file whose bytes are made already (`parquet_splice.splice_columns`): `close`
    puts them in the sink; no rows are written through it. Its ranges are read from the footer
    parsed back (which also proves parquet-cpp parses it)."""

    def __init__(self, sink: Any, data: bytes) -> None:
        self._sink = sink
        self._data = data
        self._meta = pq.read_metadata(pa.BufferReader(data))

    def write(self, chunk: pa.Table) -> None:
        raise TypeError("a spliced Parquet file takes no rows")

    def close(self) -> None:
        self._sink.write(self._data)

    def row_group_ranges(self, leaves: Sequence[int]) -> list[tuple[int, list[tuple[Any, Any] | None]]] | None:
        return footer_ranges(self._meta, leaves)


def footer_ranges(meta: pq.FileMetaData, leaves: Sequence[int]) -> list[tuple[int, list[tuple[Any, Any] | None]]]:
    """Per row group of a Parquet footer, its row count and (min, max) of each of ``leaves``
    (`FormatWriter.row_group_ranges`)."""
    groups = []
    for r in range(meta.num_row_groups):
        rg = meta.row_group(r)
        ranges: list[tuple[Any, Any] | None] = []
        for leaf in leaves:
            st = rg.column(leaf).statistics
            if st is not None and st.has_min_max:
                ranges.append((st.min, st.max))
            else:  # no values (all null: nothing to fold) or values without a range (unknown)
                ranges.append(None if st is not None and st.num_values == 0 else (None, None))
        groups.append((rg.num_rows, ranges))
    return groups


class ParquetFormat(FileFormat):
    """Apache Parquet (``file.format = parquet``)."""

    name = "parquet"
    # parquet-java's CompressionCodecName (ZLIB is none of them; LZO needs a codec Paimon does not
    # bundle and pyarrow cannot write), 'none' written as uncompressed (DataFileWriter.parquet_options)
    codecs = frozenset({"zstd", "snappy", "gzip", "lz4", "lz4_raw", "none", "uncompressed", "brotli"})

    def open_writer(self, sink: Any, arrow_schema: pa.Schema, schema: TableSchema,
                    options: WriteOptions) -> FormatWriter:
        return _ParquetWriter(sink, arrow_schema, schema, options)

    def read(self, source: Any, columns: Sequence[str] | None, *, use_threads: bool,
             footer_key: str | None = None) -> pa.Table:
        return read_parquet(source, columns, use_threads=use_threads, footer_key=footer_key)

    def row_count(self, source: Any, *, footer_key: str | None = None) -> int:
        return parquet_row_count(source, footer_key)

    def cached_row_count(self, footer_key: str, file_size: int) -> int | None:
        footer = FOOTER_CACHE.get(footer_key, file_size)
        return None if footer is None else int(footer.metadata.num_rows)

    def cached_file_size(self, footer_key: str) -> int | None:
        return FOOTER_CACHE.parsed_size(footer_key)

    def read_rows(self, source: Any, columns: Sequence[str] | None, keep: np.ndarray, *,
                  use_threads: bool, footer_key: str | None = None) -> pa.Table:
        return read_parquet(source, columns, use_threads=use_threads, keep=keep, footer_key=footer_key)

    def iter_batches(self, source: Any, columns: Sequence[str] | None, batch_rows: int | None = None, *,
                     footer_key: str | None = None, buffer_bytes: int = 0,
                     coalesce: bool = False) -> Iterator[pa.Table]:
        return iter_parquet(source, columns, batch_rows, footer_key=footer_key, buffer_bytes=buffer_bytes,
                            coalesce=coalesce)


PARQUET = register(ParquetFormat())
