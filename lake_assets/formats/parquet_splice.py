"""A Parquet file made of another file's column chunks, some replaced by newly encoded ones.

A deletion-vector compaction of a partial-update or aggregation table often writes a level-0
file's rows again with only a few value columns changed (`ops.compact.splice_rewrite`). Such a
file is the old file's column chunks, copied byte for byte, for the columns that did not change,
and for the others the chunks of a file of just those columns that our writer encoded with the
same options and the same row groups (`splice_columns`). A chunk's pages and statistics do not
depend on where the chunk sits, only the footer's offsets do: the footer is the old file's
(schema, key-value metadata, created_by, column orders as they are) with each column chunk's
description taken from the file its bytes come from and its offsets moved
(`lake_assets.formats.thrift_compact` reads and writes it).

Only what our own Parquet writer (parquet-cpp) produces is spliced: a flat schema, no page index,
bloom filter, encryption or field this module does not know (`SpliceRefused` names what did not
fit, and the caller writes the file whole instead). The result equals, byte for byte, the file
our writer makes of the same rows in the same row groups with the same dictionary choices
(tests/unit/test_parquet_splice.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lake_assets.formats.thrift_compact import (
    STRUCT,
    Struct,
    ThriftError,
    decode_struct,
    encode_struct,
    field,
    set_field,
)

MAGIC = b"PAR1"

# parquet.thrift field ids
# FileMetaData: version, schema, num_rows, row_groups, key_value_metadata, created_by, column_orders
_FMD_SCHEMA, _FMD_NUM_ROWS, _FMD_ROW_GROUPS, _FMD_CREATED_BY = 2, 3, 4, 6
_FMD_FIELDS = frozenset({1, 2, 3, 4, 5, 6, 7})
# SchemaElement.num_children
_SE_CHILDREN = 5
# RowGroup: columns, total_byte_size, num_rows, sorting_columns, file_offset, total_compressed_size, ordinal
_RG_COLUMNS, _RG_BYTES, _RG_ROWS, _RG_SORTING, _RG_OFFSET, _RG_COMPRESSED = 1, 2, 3, 4, 5, 6
_RG_FIELDS = frozenset({1, 2, 3, 4, 5, 6, 7})
# ColumnChunk: file_offset, meta_data (offset / column index and crypto fields: refused)
_CC_OFFSET, _CC_META = 2, 3
_CC_FIELDS = frozenset({_CC_OFFSET, _CC_META})
# ColumnMetaData: type, encodings, path_in_schema, codec, num_values, total_uncompressed_size,
# total_compressed_size, key_value_metadata, data_page_offset, dictionary_page_offset,
# statistics, encoding_stats, size_statistics. Not among them: index_page_offset (10) and the
# bloom filter's offset and length (14, 15), which point elsewhere in the file.
_CM_TYPE, _CM_PATH, _CM_CODEC, _CM_VALUES = 1, 3, 4, 5
_CM_UNCOMPRESSED, _CM_COMPRESSED, _CM_DATA_PAGE, _CM_DICTIONARY_PAGE = 6, 7, 9, 11
_CM_FIELDS = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16})


class SpliceRefused(ValueError):
    """The files cannot be spliced into one a reader reads right (the message says why): the
    caller writes the file whole instead."""


class _Footer:
    """A Parquet file's footer, decoded, and where it starts."""

    def __init__(self, data: bytes, what: str) -> None:
        if len(data) < 12 or data[:4] != MAGIC or data[-4:] != MAGIC:
            raise SpliceRefused(f"{what} is no Parquet file (magic)")
        n = int.from_bytes(data[-8:-4], "little")
        self.start = len(data) - 8 - n
        if self.start < 4:
            raise SpliceRefused(f"{what}: its footer length {n} exceeds the file")
        try:
            self.meta, end = decode_struct(data[self.start:len(data) - 8])
        except ThriftError as e:
            raise SpliceRefused(f"{what}: footer: {e}") from e
        if end != n:
            raise SpliceRefused(f"{what}: the footer holds {n - end} bytes after its struct")
        _only(self.meta, _FMD_FIELDS, f"{what}: FileMetaData")
        self.row_groups: list[Struct] = _list(self.meta, _FMD_ROW_GROUPS)
        self.what = what

    def chunks(self, group: int) -> list[tuple[Struct, Struct, int, int]]:
        """Row group ``group``'s column chunks: (ColumnChunk, its ColumnMetaData, first byte, length)."""
        rg = self.row_groups[group]
        _only(rg, _RG_FIELDS, f"{self.what}: RowGroup")
        out = []
        for cc in _list(rg, _RG_COLUMNS):
            _only(cc, _CC_FIELDS, f"{self.what}: ColumnChunk")
            cm = field(cc, _CC_META)
            if not isinstance(cm, list):
                raise SpliceRefused(f"{self.what}: a column chunk has no metadata")
            _only(cm, _CM_FIELDS, f"{self.what}: ColumnMetaData")
            first = _chunk_start(cm)
            length = _int(cm, _CM_COMPRESSED)
            if first < 4 or length <= 0 or first + length > self.start:
                raise SpliceRefused(f"{self.what}: a column chunk of {length} bytes at {first} lies outside "
                                    f"the data (which ends at {self.start})")
            offset = field(cc, _CC_OFFSET)
            if offset not in (0, first):  # parquet-cpp writes 0; another value must be the chunk's start
                raise SpliceRefused(f"{self.what}: a column chunk's file_offset {offset} is not its start {first}")
            out.append((cc, cm, first, length))
        return out


def _only(struct: Struct, known: frozenset[int], what: str) -> None:
    unknown = sorted({fid for fid, _, _ in struct} - known)
    if unknown:
        raise SpliceRefused(f"{what} holds fields {unknown} that splicing does not carry")


def _list(struct: Struct, fid: int) -> list[Any]:
    value = field(struct, fid)
    if not isinstance(value, tuple) or value[0] != STRUCT:
        raise SpliceRefused(f"field {fid} is not a list of structs")
    items: list[Any] = value[1]
    return items


def _int(struct: Struct, fid: int) -> int:
    value = field(struct, fid)
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpliceRefused(f"field {fid} is missing or not an integer")
    return value


def _chunk_start(cm: Struct) -> int:
    dictionary = field(cm, _CM_DICTIONARY_PAGE)
    return dictionary if isinstance(dictionary, int) and dictionary > 0 else _int(cm, _CM_DATA_PAGE)


def _moved(cc: Struct, cm: Struct, delta: int) -> Struct:
    """A copy of column chunk ``cc`` (metadata ``cm``) whose pages start ``delta`` bytes later
    (shallow: `set_field` replaces fields, never changes a value in place)."""
    cm = list(cm)
    set_field(cm, _CM_DATA_PAGE, _int(cm, _CM_DATA_PAGE) + delta)
    dictionary = field(cm, _CM_DICTIONARY_PAGE)
    if isinstance(dictionary, int) and dictionary > 0:
        set_field(cm, _CM_DICTIONARY_PAGE, dictionary + delta)
    cc = list(cc)
    set_field(cc, _CC_META, cm)
    offset = field(cc, _CC_OFFSET)
    if offset:
        set_field(cc, _CC_OFFSET, offset + delta)
    return cc


def _leaf_schema(footer: _Footer) -> list[Struct]:
    """The leaf SchemaElements of a flat schema (the root's children), refused otherwise."""
    elements = field(footer.meta, _FMD_SCHEMA)
    if not isinstance(elements, tuple) or elements[0] != STRUCT or not elements[1]:
        raise SpliceRefused(f"{footer.what}: no schema")
    root, leaves = elements[1][0], elements[1][1:]
    if field(root, _SE_CHILDREN) != len(leaves) or any(field(e, _SE_CHILDREN) is not None for e in leaves):
        raise SpliceRefused(f"{footer.what}: the schema is not flat")
    return list(leaves)


def splice_columns(old: bytes, new: bytes, changed: Sequence[int]) -> bytes:
    """The Parquet file ``old`` with the column chunks of its leaf columns ``changed`` (ascending
    indexes) replaced by those of ``new``, a file of exactly those columns (same definitions,
    field ids included, same writer and codec) in the same row groups.

    Raises `SpliceRefused` when the two do not fit together as described, or either holds
    something whose offsets this does not move (page index, bloom filters, encryption)."""
    of, nf = _Footer(old, "the old file"), _Footer(new, "the new columns' file")
    old_leaves, new_leaves = _leaf_schema(of), _leaf_schema(nf)
    if list(changed) != sorted(set(changed)) or not changed or changed[-1] >= len(old_leaves):
        raise SpliceRefused(f"columns {list(changed)} are not ascending leaf columns of the old file")
    if [old_leaves[i] for i in changed] != new_leaves:
        raise SpliceRefused("the new columns' definitions are not the old file's")
    for fid in (_FMD_NUM_ROWS, _FMD_CREATED_BY, 1):
        if field(of.meta, fid) != field(nf.meta, fid):
            raise SpliceRefused(f"the files differ in FileMetaData field {fid} (rows, writer or version)")
    if len(of.row_groups) != len(nf.row_groups):
        raise SpliceRefused(f"{len(of.row_groups)} row groups in the old file, {len(nf.row_groups)} in the new one")
    source = {leaf: k for k, leaf in enumerate(changed)}
    out = bytearray(MAGIC)
    groups = []
    for g, (org, nrg) in enumerate(zip(of.row_groups, nf.row_groups, strict=True)):
        if _int(org, _RG_ROWS) != _int(nrg, _RG_ROWS) or field(org, _RG_SORTING) != field(nrg, _RG_SORTING):
            raise SpliceRefused(f"row group {g} differs in rows or sort order between the files")
        old_chunks, new_chunks = of.chunks(g), nf.chunks(g)
        if len(old_chunks) != len(old_leaves) or len(new_chunks) != len(new_leaves):
            raise SpliceRefused(f"row group {g} does not hold one chunk per column")
        _check_totals(org, old_chunks, f"the old file's row group {g}")
        columns = []
        for leaf, (_, ocm, _, _) in enumerate(old_chunks):
            k = source.get(leaf)
            cc, cm, first, length = old_chunks[leaf] if k is None else new_chunks[k]
            if k is not None and any(field(ocm, f) != field(cm, f) for f in (_CM_TYPE, _CM_PATH, _CM_CODEC)):
                raise SpliceRefused(f"column {leaf}: the new chunk's type, path or codec is not the old one's")
            if _int(cm, _CM_VALUES) < _int(org, _RG_ROWS) and k is not None:
                # a flat column holds a value (or null) per row
                raise SpliceRefused(f"column {leaf} of row group {g}: fewer values than rows")
            columns.append(_moved(cc, cm, len(out) - first))
            out += (old if k is None else new)[first:first + length]
        rg = list(org)
        set_field(rg, _RG_COLUMNS, (STRUCT, columns))
        set_field(rg, _RG_BYTES, sum(_int(field(cc, _CC_META), _CM_UNCOMPRESSED) for cc in columns))
        if field(rg, _RG_OFFSET) is not None:
            set_field(rg, _RG_OFFSET, _chunk_start(field(columns[0], _CC_META)))
        if field(rg, _RG_COMPRESSED) is not None:
            set_field(rg, _RG_COMPRESSED, sum(_int(field(cc, _CC_META), _CM_COMPRESSED) for cc in columns))
        groups.append(rg)
    meta = list(of.meta)
    set_field(meta, _FMD_ROW_GROUPS, (STRUCT, groups))
    footer = bytearray()
    encode_struct(meta, footer)
    out += footer
    out += len(footer).to_bytes(4, "little") + MAGIC
    return bytes(out)


def _check_totals(rg: Struct, chunks: list[tuple[Struct, Struct, int, int]], what: str) -> None:
    """Refuse a row group whose totals are not what the splice recomputes them as (the sums of
    its chunks' sizes, its first chunk's start): its writer counts otherwise."""
    expected = {
        _RG_BYTES: sum(_int(cm, _CM_UNCOMPRESSED) for _, cm, _, _ in chunks),
        _RG_OFFSET: chunks[0][2] if chunks else None,
        _RG_COMPRESSED: sum(length for _, _, _, length in chunks),
    }
    for fid, value in expected.items():
        have = field(rg, fid)
        if have is not None and have != value:
            raise SpliceRefused(f"{what}: field {fid} is {have}, not {value} as its chunks give")


__all__ = ["MAGIC", "SpliceRefused", "splice_columns"]
