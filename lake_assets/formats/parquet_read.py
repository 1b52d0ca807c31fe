"""Reading Parquet data files: string columns through their dictionaries, row selections early.

pyarrow decodes a dictionary-encoded string column into a plain string array value by value;
reading the same pages as a dictionary array (``read_dictionary``) and expanding it with one
``take`` gives the same array for about two thirds of the CPU (measured on the deletion-vector
benchmark's files: 14 ms against 22 ms for 1,000,000 strings). It only pays when every data page of
the column chunk is dictionary-encoded: pages that fell back to plain encoding (a dictionary
grown past the writer's limit) make pyarrow hash each value into a new dictionary, several times
slower than the plain read. `parquet_footer` tells the two apart; columns with fallback pages, or
whose writer recorded no page encodings, are read as before.

A row selection (the rows a deletion vector keeps) is applied before the expansion: on the
dictionary indices and the other columns, so the dropped rows' strings are never built.

Given the path of the data file as ``footer_key``, a read takes the parsed footer and the dictionary
decision from `parquet_footer_cache` when an earlier read of the file left them there: whole-file
reads (`read_parquet`) and batched ones (`iter_parquet`) alike.

pyarrow reads a column chunk whole (and, by default, every column chunk of a row group ahead of
the first batch) unless the reader is buffered: a batched read of a one-row-group file - Java's
files, and ours up to the target file size - then holds the whole compressed file while it yields
its batches. `iter_parquet` reads through a buffered stream of ``buffer_bytes`` per column chunk
instead (``read.parquet.buffer-size``); whole-file reads keep the unbuffered path, as they hold
every row anyway (pre-buffered on object stores, not on local files: `_local_reads`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.parquet_chunk_plan import column_chunk_bytes, plan_row_group
from lake_assets.formats.parquet_footer import file_page_encodings, only_dictionary_pages
from lake_assets.formats.parquet_footer_cache import FOOTER_CACHE, Footer
from lake_assets.formats.row_mask import arrow_mask


def _stringlike(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_binary(t) or pa.types.is_large_binary(t))


def _leaf_index(md: pq.FileMetaData, name: str) -> int | None:
    """The leaf column index of top-level column ``name`` in a schema with nested columns."""
    for j in range(md.num_columns):
        if md.schema.column(j).path == name:
            return j
    return None


def dictionary_columns(pf: pq.ParquetFile, columns: Sequence[str] | None,
                       arrow_schema: pa.Schema | None = None) -> list[str]:
    """The top-level string and binary columns among ``columns`` (all when None) whose every
    column chunk holds dictionary-encoded data pages only (see the module docstring).
    ``arrow_schema`` is ``pf.schema_arrow`` when the caller has it (pyarrow builds it per call)."""
    return _dictionary_columns(pf.metadata, pf.schema_arrow if arrow_schema is None else arrow_schema, columns)


def _dictionary_columns(md: pq.FileMetaData, arrow_schema: pa.Schema, columns: Sequence[str] | None) -> list[str]:
    if md.num_row_groups == 0:
        return []
    wanted = None if columns is None else set(columns)
    flat = md.num_columns == len(arrow_schema)  # then leaf column j is field j
    candidates: dict[int, str] = {}
    first = md.row_group(0)
    for k, field in enumerate(arrow_schema):
        if not _stringlike(field.type) or (wanted is not None and field.name not in wanted):
            continue
        j = k if flat else _leaf_index(md, field.name)
        if j is not None and first.column(j).has_dictionary_page:
            candidates[j] = field.name
    if not candidates:
        return []
    groups = file_page_encodings(md, upto=max(candidates))
    if len(groups) != md.num_row_groups:
        return []
    out = []
    for j, name in candidates.items():
        if all(j < len(g) and g[j] is not None and only_dictionary_pages(g[j]) for g in groups):  # type: ignore[arg-type]
            out.append(name)
    return out


def _expand(column: pa.ChunkedArray, value_type: pa.DataType) -> pa.ChunkedArray:
    """A dictionary-encoded column as the plain column of its values, of type ``value_type`` (one
    ``take`` per chunk). pyarrow reads a large_string or large_binary column as a dictionary of
    string or binary values: the dictionary (a few values) is cast, not the expanded column."""
    chunks = []
    for c in column.chunks:
        values = c.dictionary if c.dictionary.type == value_type else c.dictionary.cast(value_type)
        chunks.append(pc.take(values, c.indices, boundscheck=not _indices_within(c.indices, len(values))))
    return pa.chunked_array(chunks, type=value_type)


def _indices_within(indices: pa.Array, size: int) -> bool:
    """Whether every slot of ``indices`` holds a position in a dictionary of ``size`` values.

    `take` checks each index as it gathers (a tenth of the expansion's time on the benchmark's
    files: 0.7 of 6.4 ms for 1,000,000 strings); one min/max pass first is cheaper (0.15 ms) and
    lets it skip the check. Indices come from the file: a damaged one must fail, never read past
    the dictionary, so a column with nulls (whose slots hold whatever the decoder left) keeps the
    checked take."""
    if indices.null_count or not len(indices):
        return False
    bounds = pc.min_max(indices)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    return low is not None and high is not None and low >= 0 and high < size


def _finish(data: pa.Table, dense: pa.Schema, keep: pa.BooleanArray | None) -> pa.Table:
    """``data`` (string columns possibly read as dictionaries) as a plain read gives it (the
    fields of ``dense``), holding only the rows ``keep`` marks when given."""
    if keep is not None:
        # Dictionary columns filter their indices: the dropped rows' strings are never built.
        # One filter of the whole table, not one per column: pyarrow's fixed cost per call
        # (about 25 us) is a good part of filtering a small file's column (measured on the
        # deletion-vector benchmark's files: 0.8 ms against 1.5 ms for 8 files of 25,000 rows).
        data = data.filter(keep)
    for i, field in enumerate(data.schema):
        if pa.types.is_dictionary(field.type):
            target = dense.field(field.name)
            data = data.set_column(i, target, _expand(data.column(i), target.type))
    return data


def read_parquet(source: Any, columns: Sequence[str] | None, *, use_threads: bool,
                 keep: np.ndarray | None = None, footer_key: str | None = None) -> pa.Table:
    """Read ``columns`` (all when None) of a Parquet file, as `pq.ParquetFile.read` gives them;
    with ``keep`` (a bool per row of the file) only the rows it marks. ``footer_key`` (the path of
    an immutable data file) lets the footer parsed by an earlier read of the file serve this one
    (`parquet_footer_cache`)."""
    cols = list(columns) if columns is not None else None
    local = _local_reads(source)
    footer, opened = _footer(source, footer_key, cols, local)
    md = footer.metadata
    if keep is not None and len(keep) != md.num_rows:
        raise CorruptMetadataError(f"a selection of {len(keep)} rows was asked for, but the file has "
                                   f"{md.num_rows} rows")
    mask = None if keep is None else arrow_mask(keep)
    decoded = footer.dictionary_columns[None if cols is None else tuple(cols)]
    if not decoded:
        pf = opened or pq.ParquetFile(source, metadata=md, **local)
        data = pf.read(columns=cols, use_threads=use_threads)
        return data if mask is None else data.filter(mask)
    pf = pq.ParquetFile(source, metadata=md, read_dictionary=decoded, **local)
    return _finish(pf.read(columns=cols, use_threads=use_threads), footer.arrow_schema, mask)


def parquet_row_count(source: Any, footer_key: str | None = None) -> int:
    """The rows of the Parquet file open as ``source``, by its footer (the cached one of
    ``footer_key`` when an earlier read parsed it: then no read of the file at all)."""
    size = source.size() if footer_key is not None else -1
    footer = FOOTER_CACHE.get(footer_key, size) if footer_key is not None else None
    if footer is None:
        pf = pq.ParquetFile(source, **_local_reads(source))
        footer = Footer(size, pf.metadata, pf.schema_arrow)
        if footer_key is not None:
            FOOTER_CACHE.put(footer_key, footer)
    return int(footer.metadata.num_rows)


# Sources whose reads are system calls on this machine (a local file, a memory map, bytes in memory).
_LOCAL_SOURCES = (pa.OSFile, pa.MemoryMappedFile, pa.BufferReader)


def _local_reads(source: Any) -> dict[str, Any]:
    """`pq.ParquetFile` options for a whole-file read of ``source``: no pre-buffering when its
    reads are local. pyarrow pre-buffers by default, handing each file's column chunks to its I/O
    thread pool and waiting for them - a round trip between threads per file that pays on object
    stores (the chunks are fetched side by side) and costs on a local file, read as fast where it
    is asked for: on the deletion-vector benchmark's 16 files, context switches per read 67-71 with
    it and 39-46 without (`perf stat`, 30 reads), pyarrow's own one-file read 35. Paths and
    Python file objects (fsspec) keep pyarrow's default."""
    return {"pre_buffer": False} if isinstance(source, _LOCAL_SOURCES) else {}


def _footer(source: Any, key: str | None, cols: list[str] | None,
            open_options: dict[str, Any] | None = None) -> tuple[Footer, pq.ParquetFile | None]:
    """The parsed footer of the file open as ``source``, with its dictionary columns among
    ``cols`` decided: from the cache when ``key`` names a file parsed before at the same size;
    and the `ParquetFile` opened (with ``open_options``) to parse it (None on a cache hit)."""
    size = source.size() if key is not None else -1
    footer = FOOTER_CACHE.get(key, size) if key is not None else None
    pf = None
    if footer is None:
        pf = pq.ParquetFile(source, **(open_options or {}))
        footer = Footer(size, pf.metadata, pf.schema_arrow)
        if key is not None:
            FOOTER_CACHE.put(key, footer)
    col_key = None if cols is None else tuple(cols)
    if col_key not in footer.dictionary_columns:
        FOOTER_CACHE.decide(key, footer, col_key, _dictionary_columns(footer.metadata, footer.arrow_schema, cols))
    return footer, pf


def _chunk_options(buffer_bytes: int) -> dict[str, Any]:
    """`pq.ParquetFile` options that make a batched read hold ``buffer_bytes`` of each column
    chunk at a time (0: whole column chunks, read ahead for the row group: pyarrow's default)."""
    if buffer_bytes <= 0:
        return {}
    # pre_buffer (pyarrow's default) reads the row group's column chunks whole, ahead of the
    # batches: it must be off for the buffered stream to bound anything
    return {"buffer_size": buffer_bytes, "pre_buffer": False}


def iter_parquet(source: Any, columns: Sequence[str] | None, batch_rows: int | None = None, *,
                 footer_key: str | None = None, buffer_bytes: int = 0, coalesce: bool = False) -> Iterator[pa.Table]:
    """Read a Parquet file row group by row group, or in batches of at most ``batch_rows`` rows,
    dictionary-encoded string columns expanded as `read_parquet` does.

    ``buffer_bytes`` > 0 reads each column chunk through a buffered stream of that many bytes
    (the read then holds, per column, the buffer and the page being decoded, not the whole
    compressed chunk: for a one-row-group file, the whole compressed file); 0 reads column
    chunks whole. ``footer_key`` (the path of an immutable data file) lets a footer parsed by an
    earlier read serve this one (`parquet_footer_cache`). ``coalesce`` (a store where each read
    is a request): per row group, the chunks that fit the bound of ``columns x buffer_bytes`` are
    read whole and fetched together, the others streamed (`parquet_chunk_plan`)."""
    cols = list(columns) if columns is not None else None
    chunking = _chunk_options(buffer_bytes)
    footer, opened = _footer(source, footer_key, cols, chunking)
    dense = footer.arrow_schema
    decoded = footer.dictionary_columns[None if cols is None else tuple(cols)]
    if decoded or opened is None:
        pf = pq.ParquetFile(source, metadata=footer.metadata, read_dictionary=decoded or None, **chunking)
    else:
        pf = opened
    planned = _PlannedReads(source, footer, cols, decoded, pf, buffer_bytes) if coalesce and chunking else None
    for i in range(pf.num_row_groups):
        if batch_rows is None:
            pieces: Iterator[pa.Table] = iter((pf.read_row_group(i, columns=cols),))
        elif planned is not None:
            pieces = planned.row_group(i, batch_rows)
        else:
            # One row group per `iter_batches` call: over the whole file, pyarrow's batch reader
            # holds more of the file the larger it is (measured: 26 MiB against 11 MiB for a
            # 14 MiB file), row group by row group it holds one row group's pages.
            batches = pf.iter_batches(batch_size=batch_rows, row_groups=[i], columns=cols, use_threads=False)
            pieces = (pa.Table.from_batches([b]) for b in batches)
        for piece in pieces:
            yield _finish(piece, dense, None) if decoded else piece


class _PlannedReads:
    """The batched reads of one file's row groups as `parquet_chunk_plan` splits them: a
    pre-buffered reader for the chunks read whole, buffered readers for the streamed ones."""

    def __init__(self, source: Any, footer: Footer, cols: list[str] | None, decoded: list[str],
                 buffered: pq.ParquetFile, buffer_bytes: int) -> None:
        self.source, self.footer, self.decoded = source, footer, decoded or None
        # as pyarrow reads them: names the file lacks left out, each name once
        present = set(footer.arrow_schema.names)
        self.names = footer.arrow_schema.names if cols is None else [c for c in dict.fromkeys(cols) if c in present]
        self.buffer_bytes = buffer_bytes
        self.readers: dict[int, pq.ParquetFile] = {buffer_bytes: buffered}

    def _reader(self, buffer_bytes: int) -> pq.ParquetFile:
        """A reader over the same footer: 0 pre-buffers whole chunks, else buffers that many bytes."""
        if buffer_bytes == 0:
            # a new one per row group: a reader keeps the chunks it pre-buffered until its next
            # pre-buffering, which would hold them while a later row group is streamed
            return pq.ParquetFile(self.source, metadata=self.footer.metadata, read_dictionary=self.decoded,
                                  pre_buffer=True)
        if buffer_bytes not in self.readers:
            self.readers[buffer_bytes] = pq.ParquetFile(self.source, metadata=self.footer.metadata,
                                                        read_dictionary=self.decoded, **_chunk_options(buffer_bytes))
        return self.readers[buffer_bytes]

    def row_group(self, i: int, batch_rows: int) -> Iterator[pa.Table]:
        chunks = column_chunk_bytes(self.footer.metadata, self.footer.arrow_schema, i)
        plan = plan_row_group(chunks, self.names, self.buffer_bytes)

        def batches(names: tuple[str, ...], buffer_bytes: int) -> Iterator[pa.RecordBatch]:
            return self._reader(buffer_bytes).iter_batches(batch_size=batch_rows, row_groups=[i],
                                                           columns=list(names), use_threads=False)

        if not plan.streamed:
            # pyarrow pre-buffers exactly these chunks (the projection's), coalesced
            return (pa.Table.from_batches([b]) for b in batches(plan.whole, 0))
        if not plan.whole:
            return (pa.Table.from_batches([b]) for b in batches(plan.streamed, plan.stream_buffer))
        return _side_by_side(batches(plan.whole, 0), batches(plan.streamed, plan.stream_buffer), self.names)


def _side_by_side(left: Iterator[pa.RecordBatch], right: Iterator[pa.RecordBatch],
                  names: Sequence[str]) -> Iterator[pa.Table]:
    """The batches of two readers of the same rows (other columns each) joined column-wise, in
    the order of ``names``; cut where their batches do not line up."""
    rest: pa.Table | None = None
    for batch in left:
        piece = pa.Table.from_batches([batch])
        while piece.num_rows:
            if rest is None or rest.num_rows == 0:
                nxt = next(right, None)
                if nxt is None:
                    raise CorruptMetadataError(f"a row group's columns {piece.column_names} hold more rows than "
                                               f"its columns {rest.column_names if rest is not None else []}")
                rest = pa.Table.from_batches([nxt])
            n = min(piece.num_rows, rest.num_rows)
            yield _join(piece.slice(0, n), rest.slice(0, n), names)
            piece, rest = piece.slice(n), rest.slice(n)
    if (rest is not None and rest.num_rows) or next(right, None) is not None:
        raise CorruptMetadataError("a row group's columns hold different numbers of rows")


def _join(a: pa.Table, b: pa.Table, names: Sequence[str]) -> pa.Table:
    fields = {f.name: (f, a.column(k)) for k, f in enumerate(a.schema)}
    fields.update({f.name: (f, b.column(k)) for k, f in enumerate(b.schema)})
    schema = pa.schema([fields[n][0] for n in names], metadata=a.schema.metadata)
    return pa.Table.from_arrays([fields[n][1] for n in names], schema=schema)


__all__ = ["dictionary_columns", "iter_parquet", "parquet_row_count", "read_parquet"]
