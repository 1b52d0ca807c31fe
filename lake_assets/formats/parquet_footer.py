"""The page encodings of Parquet column chunks, from the footer's Thrift (``encoding_stats``).

pyarrow's ``ColumnChunkMetaData.encodings`` lists the encodings of all pages of a chunk, the
dictionary page's included: parquet-cpp lists ``PLAIN`` for a dictionary page as it does for data
pages that fell back to plain encoding once the dictionary grew past its limit, so the list cannot
tell the two apart. The footer's ``ColumnMetaData.encoding_stats`` (field 13, a list of
``PageEncodingStats``: page type, encoding, count) can; parquet-cpp and parquet-java both write
it, pyarrow does not expose it. This module walks the footer's Thrift compact protocol for it.

The footer bytes come from `pyarrow.parquet.FileMetaData.write_metadata_file` (the footer pyarrow
already parsed, serialized again: no I/O). Only the fields needed are decoded; the rest is
skipped by type, and the walk stops after the row groups.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets.errors import CorruptMetadataError

# Thrift compact protocol type ids
_BOOL_TRUE, _BOOL_FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
# parquet.thrift: PageType
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
# parquet.thrift: Encoding values of dictionary-encoded data pages
PLAIN_DICTIONARY, RLE_DICTIONARY = 2, 8
_DICTIONARY_ENCODINGS = frozenset({PLAIN_DICTIONARY, RLE_DICTIONARY})
_DATA_PAGES = frozenset({DATA_PAGE, DATA_PAGE_V2})

# FileMetaData.row_groups, RowGroup.columns, ColumnChunk.meta_data, ColumnMetaData.encoding_stats
_ROW_GROUPS, _COLUMNS, _META_DATA, _ENCODING_STATS = 4, 1, 3, 13

PageStats = tuple[tuple[int, int], ...]  # (page type, encoding) of a chunk's pages


def _varint(b: bytes, i: int) -> tuple[int, int]:
    x = b[i]
    if x < 0x80:
        return x, i + 1
    out, shift, i = x & 0x7F, 7, i + 1
    while True:
        x = b[i]
        i += 1
        out |= (x & 0x7F) << shift
        if x < 0x80:
            return out, i
        shift += 7


def _zigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


def _skip(b: bytes, i: int, t: int) -> int:
    """The index after a value of compact type ``t`` starting at ``i``."""
    if t <= _BOOL_FALSE:  # booleans as fields live in the type nibble
        return i
    if t == _BYTE:
        return i + 1
    if t <= _I64:
        while b[i] >= 0x80:
            i += 1
        return i + 1
    if t == _DOUBLE:
        return i + 8
    if t == _BINARY:
        n, i = _varint(b, i)
        return i + n
    if t in (_LIST, _SET):
        n, et, i = _list_header(b, i)
        if et <= _BYTE:  # booleans and bytes in a list: one byte each
            return i + n
        for _ in range(n):
            i = _skip(b, i, et)
        return i
    if t == _MAP:
        n, i = _varint(b, i)
        if n:
            kv = b[i]
            i += 1
            for _ in range(n):
                i = _skip(b, _skip(b, i, kv >> 4), kv & 15)
        return i
    if t == _STRUCT:
        while True:
            h = b[i]
            i += 1
            if h == 0:
                return i
            if not h >> 4:  # long form: the field id follows as a zigzag varint
                i = _skip(b, i, _I16)
            i = _skip(b, i, h & 15)
    raise ValueError(f"unknown Thrift compact type {t}")


def _list_header(b: bytes, i: int) -> tuple[int, int, int]:
    """(size, element type, index after the header) of a list or set."""
    h = b[i]
    n = h >> 4
    i += 1
    if n == 15:
        n, i = _varint(b, i)
    return n, h & 15, i


def _field(b: bytes, i: int, last: int) -> tuple[int, int, int]:
    """(field id, type, index of the value) of the struct field header at ``i``; type 0 ends the
    struct. ``last`` is the previous field's id (headers hold the difference)."""
    h = b[i]
    i += 1
    if h == 0:
        return last, 0, i
    delta = h >> 4
    if delta:
        return last + delta, h & 15, i
    v, i = _varint(b, i)
    return _zigzag(v), h & 15, i


def _encoding_stats(b: bytes, i: int) -> tuple[PageStats, int]:
    n, _, i = _list_header(b, i)
    out = []
    for _ in range(n):
        page_type = encoding = -1
        fid = 0
        while True:
            fid, t, i = _field(b, i, fid)
            if t == 0:
                break
            if fid in (1, 2) and t == _I32:
                v, i = _varint(b, i)
                if fid == 1:
                    page_type = _zigzag(v)
                else:
                    encoding = _zigzag(v)
            else:
                i = _skip(b, i, t)
        out.append((page_type, encoding))
    return tuple(out), i


def _column_chunk(b: bytes, i: int) -> tuple[PageStats | None, int]:
    stats: PageStats | None = None
    fid = 0
    while True:
        fid, t, i = _field(b, i, fid)
        if t == 0:
            return stats, i
        if fid != _META_DATA or t != _STRUCT:
            i = _skip(b, i, t)
            continue
        mid = 0
        while True:  # ColumnMetaData
            mid, mt, i = _field(b, i, mid)
            if mt == 0:
                break
            if mid == _ENCODING_STATS and mt == _LIST:
                stats, i = _encoding_stats(b, i)
            else:
                i = _skip(b, i, mt)


def _row_group(b: bytes, i: int, upto: int | None = None) -> tuple[list[PageStats | None], int]:
    """The chunks' page stats of the row group at ``i``, and the index after it; with ``upto``
    the walk stops after that column chunk (the index returned is then -1)."""
    chunks: list[PageStats | None] = []
    fid = 0
    while True:
        fid, t, i = _field(b, i, fid)
        if t == 0:
            return chunks, i
        if fid != _COLUMNS or t != _LIST:
            i = _skip(b, i, t)
            continue
        n, _, i = _list_header(b, i)
        for k in range(n):
            stats, i = _column_chunk(b, i)
            chunks.append(stats)
            if k == upto:
                return chunks, -1


def page_encodings(footer: bytes, upto: int | None = None) -> list[list[PageStats | None]]:
    """Per row group, per column chunk (in leaf column order): the (page type, encoding) pairs
    of its ``encoding_stats``, None where the writer recorded none. ``footer`` is the Thrift
    ``FileMetaData``. ``upto``: the last leaf column the caller needs; the last row group's list
    then ends there (the walk of a row group's later columns is most of a one-row-group file's)."""
    i, fid = 0, 0
    while True:
        fid, t, i = _field(footer, i, fid)
        if t == 0:
            return []
        if fid != _ROW_GROUPS or t != _LIST:
            i = _skip(footer, i, t)
            continue
        n, _, i = _list_header(footer, i)
        groups = []
        for r in range(n):
            chunks, i = _row_group(footer, i, upto if r == n - 1 else None)
            groups.append(chunks)
        return groups  # what follows (key-value metadata, created_by, ...) is not needed


def footer_bytes(metadata: pq.FileMetaData) -> bytes:
    """The Thrift ``FileMetaData`` of a parsed footer (pyarrow writes it back: no I/O)."""
    sink = pa.BufferOutputStream()
    metadata.write_metadata_file(sink)  # "PAR1", the footer, its 4-byte length, "PAR1"
    data = sink.getvalue().to_pybytes()
    return data[4:-8]


def file_page_encodings(metadata: pq.FileMetaData, upto: int | None = None) -> list[list[PageStats | None]]:
    """`page_encodings` of a file's footer; a footer the walk cannot follow raises
    `CorruptMetadataError` (pyarrow parsed it, so that would be a bug here)."""
    try:
        return page_encodings(footer_bytes(metadata), upto)
    except (IndexError, ValueError) as exc:
        raise CorruptMetadataError(f"Cannot read the page encodings of a Parquet footer: {exc}") from exc


def only_dictionary_pages(stats: PageStats) -> bool:
    """Whether every data page of a chunk is dictionary-encoded (no plain fallback pages)."""
    return all(enc in _DICTIONARY_ENCODINGS for page, enc in stats if page in _DATA_PAGES)


__all__ = ["PageStats", "file_page_encodings", "footer_bytes", "only_dictionary_pages", "page_encodings"]
