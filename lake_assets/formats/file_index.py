"""Paimon's data-file indexes (docs/format.md §7.6): the container, what a table asks writers to
index, and the index of one data file as its writer builds it.

A table carrying ``file-index.bloom-filter.columns`` gets, for every data file a write or compaction
creates, one bloom filter per listed column over the file's non-null values (Paimon HEAD indexes
primary-key files too, over their value columns); ``file-index.bitmap.columns`` one bitmap index
per listed column (`lake_assets.formats.bitmap_index`); ``file-index.bsi.columns`` one bit-sliced
index per listed column (`lake_assets.formats.bsi_index`, Paimon 1.x); ``file-index.range-bitmap.columns``
one range-bitmap index per listed column (`lake_assets.formats.range_bitmap_index_write`, Paimon 1.x).
The indexes go into one `FileIndexFormat`
container, columns and index types in the order Java's HashMaps give them; a container larger
than ``file-index.in-manifest-threshold`` is written next to the data file as ``<data file>.index``
and listed in its ``_EXTRA_FILES``, a smaller one is embedded in the manifest entry.
`index_plan` reads the options, `write_problems` says what no writer of ours can index (refused
for writes and compaction by `lake_assets.table_support`), `FileIndexBuilder` accumulates one
file's indexes chunk by chunk.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError, OptionError
from lake_assets.formats.bitmap_index import BitmapIndexBuilder, unsupported_reason
from lake_assets.formats.bitmap_index_v2 import DEFAULT_BLOCK_SIZE
from lake_assets.formats.bloom_filter import INT_MAX, BloomFilter64, bloom_bits
from lake_assets.formats.bsi_index import BSI, BsiIndexBuilder
from lake_assets.formats.bsi_index import unsupported_reason as bsi_unsupported_reason
from lake_assets.formats.fast_hash import fast_hash, hashable
from lake_assets.formats.java_hash_map import hash_map_order, string_hash_code
from lake_assets.formats.range_bitmap_index_write import RangeBitmapIndexBuilder
from lake_assets.formats.range_bitmap_keys import RANGE_BITMAP
from lake_assets.formats.range_bitmap_keys import unsupported_reason as range_bitmap_unsupported_reason
from lake_assets.option_rules_file_index import BITMAP, BLOOM_FILTER, indexed_columns, top_level_column
from lake_assets.option_types import parse_memory_size
from lake_assets.spec.data_types import CharType, DataType, MapType, VarCharType
from lake_assets.spec.schema import TableSchema

MAGIC = 1493475289347502
VERSION = 1
EMPTY_INDEX_START = -1
INDEX_FILE_SUFFIX = ".index"
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
DEFAULT_IN_MANIFEST_THRESHOLD = 500


# ---------------------------------------------------------------- the container (FileIndexFormat)


def _java_utf(text: str) -> bytes:
    """``DataOutputStream.writeUTF``: a 2-byte length, then modified UTF-8 (NUL and each UTF-16
    surrogate of a supplementary character encoded on their own)."""
    out = bytearray()
    for unit in struct.unpack(f"<{len(text.encode('utf-16-le')) // 2}H", text.encode("utf-16-le")):
        if 0 < unit < 0x80:
            out.append(unit)
        elif unit < 0x800:
            out += bytes((0xC0 | unit >> 6, 0x80 | unit & 0x3F))
        else:
            out += bytes((0xE0 | unit >> 12, 0x80 | unit >> 6 & 0x3F, 0x80 | unit & 0x3F))
    if len(out) > 0xFFFF:
        raise InvalidDataError(f"Name {text[:40]!r}... is too long for a file index header")
    return struct.pack(">H", len(out)) + bytes(out)


def _read_java_utf(data: bytes, pos: int, what: str) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", data, pos)
    raw = data[pos + 2: pos + 2 + n]
    if len(raw) != n:
        raise InvalidDataError(f"{what}: its header is truncated")
    units: list[int] = []
    i = 0
    while i < n:
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
            continue
        if i + (2 if b >> 5 == 0b110 else 3) > n:  # a damaged header: a sequence cut by the name's end
            raise InvalidDataError(f"{what}: its header has a malformed name (a character cut short)")
        if b >> 5 == 0b110:
            units.append((b & 0x1F) << 6 | raw[i + 1] & 0x3F)
            i += 2
        else:
            units.append((b & 0x0F) << 12 | (raw[i + 1] & 0x3F) << 6 | raw[i + 2] & 0x3F)
            i += 3
    text = struct.pack(f"<{len(units)}H", *units).decode("utf-16-le", errors="surrogatepass")
    return text, pos + 2 + n


def _java_map_order(names: list[str], compute_if_absent: bool = False) -> list[str]:
    # names added to a HashMap<String, ...> in this order, in the order the map gives them back
    hashes = np.array([string_hash_code(n) for n in names], np.int32)
    order, _ = hash_map_order(hashes, compute_if_absent=compute_if_absent, called_after_last=False)
    return [names[i] for i in order.tolist()]


def write_container(indexes: Mapping[str, Mapping[str, bytes | None]], java_order: bool = False) -> bytes:
    """The bytes of a file index holding ``indexes`` (column -> index type -> payload; None: an
    empty index), laid out as Paimon's ``FileIndexFormat.Writer`` lays them out; ``java_order``:
    columns and types in the iteration order of Java's ``HashMap`` s (``DataFileIndexWriter``)
    rather than as given."""
    if java_order:
        # DataFileIndexWriter puts one maintainer per table column in a HashMap (in option order);
        # a map column's maintainer lists its keys' indexes in two HashMaps of its own (keys, then
        # m[k] names); the container's map takes every name with computeIfAbsent in that order
        by_top: dict[str, list[str]] = {}
        for name in indexes:
            by_top.setdefault(top_level_column(name), []).append(name)
        sequence: list[str] = []
        for top in _java_map_order(list(by_top)):
            members = by_top[top]
            if members != [top]:
                keys = _java_map_order([n[len(top) + 1: -1] for n in members])
                members = _java_map_order([f"{top}[{k}]" for k in keys])
            sequence += members
        columns = _java_map_order(sequence, compute_if_absent=True)
        indexes = {c: {t: indexes[c][t] for t in _java_map_order(list(indexes[c]))} for c in columns}
    names = b"".join(_java_utf(c) + b"".join(_java_utf(t) for t in types) for c, types in indexes.items())
    entries = sum(len(types) for types in indexes.values())
    head_length = 8 + 4 + 4 + 4 + 8 * entries + 4 * len(indexes) + 4 + len(names)
    head = bytearray(struct.pack(">qiii", MAGIC, VERSION, head_length, len(indexes)))
    body = bytearray()
    for column, types in indexes.items():
        head += _java_utf(column) + struct.pack(">i", len(types))
        for index_type, payload in types.items():
            head += _java_utf(index_type)
            if payload is None:
                head += struct.pack(">ii", EMPTY_INDEX_START, 0)
            else:
                head += struct.pack(">ii", head_length + len(body), len(payload))
                body += payload
    head += struct.pack(">i", 0)  # redundant length
    assert len(head) == head_length
    return bytes(head + body)


def read_container(data: bytes, what: str = "file index") -> dict[str, dict[str, bytes | None]]:
    """Column -> index type -> payload (None: empty) of a file index (Java's or ours)."""
    try:
        magic, version, head_length, columns = struct.unpack_from(">qiii", data)
        if magic != MAGIC:
            raise InvalidDataError(f"{what} is not a Paimon file index (magic {magic})")
        if version != VERSION:
            raise InvalidDataError(f"{what} has file index version {version}; lake_assets reads version {VERSION}")
        pos = 20
        out: dict[str, dict[str, bytes | None]] = {}
        for _ in range(columns):
            column, pos = _read_java_utf(data, pos, what)
            (count,) = struct.unpack_from(">i", data, pos)
            pos += 4
            types = out.setdefault(column, {})
            for _ in range(count):
                index_type, pos = _read_java_utf(data, pos, what)
                start, length = struct.unpack_from(">ii", data, pos)
                pos += 8
                if start == EMPTY_INDEX_START:
                    types[index_type] = None
                elif start < head_length or start + length > len(data) or length < 0:
                    # names come from the damaged bytes: shown bounded
                    raise InvalidDataError(f"{what}: index {column[:60]!r}/{index_type[:60]!r} lies outside the file")
                else:
                    types[index_type] = data[start: start + length]
    except struct.error as exc:
        raise InvalidDataError(f"{what} is truncated ({exc})") from None
    return out


# ---------------------------------------------------------------- what a table asks writers to index


@dataclass(frozen=True)
class BloomColumn:
    """One column's bloom-filter index: its name (``m[k]`` for the values of key ``k`` of map
    column ``m``), the Paimon type of the values it hashes, and its sizing."""

    name: str
    type: DataType
    items: int
    fpp: float
    map_key: str | None = None  # the key of a map column's values (``name`` is ``m[k]``)


@dataclass(frozen=True)
class BitmapColumn:
    """One column's bitmap index: its name and Paimon type (and for a bitmap index its version and
    version 2's index block size)."""

    name: str
    type: DataType
    version: int = 1
    block_size: int = DEFAULT_BLOCK_SIZE


@dataclass(frozen=True)
class IndexPlan:
    """The indexes every new data file of a table gets, and where they go."""

    bloom: tuple[BloomColumn, ...]
    in_manifest_threshold: int
    bitmap: tuple[BitmapColumn, ...] = ()
    bsi: tuple[BitmapColumn, ...] = ()  # columns of bit-sliced indexes (name and type)
    # columns of range-bitmap indexes, with their dictionary chunk size (None: the type's default)
    range_bitmap: tuple[tuple[BitmapColumn, int | None], ...] = ()


def write_problems(schema: TableSchema) -> list[tuple[str, str]]:
    """(what, why) of each bloom-filter, bitmap, bsi or range-bitmap index no writer of lake_assets can write for
    ``schema``: columns the table lacks, map values (``m[k]``) of bitmaps and of maps whose keys
    are not strings, types Paimon's FastHash cannot hash or its bitmap index cannot key. (A bitmap
    ``version`` other than 1 and 2 is refused by its option row.)"""
    out: list[tuple[str, str]] = []
    keyed_kinds: list[tuple[str, str, Callable[[DataType], str | None]]] = [
        (BITMAP, "bitmap indexes of map values (column[key]) are not implemented", unsupported_reason),
        (BSI, "Paimon indexes map values (column[key]) with bloom filters only (its writer fails)",
         bsi_unsupported_reason),
        (RANGE_BITMAP, "Paimon indexes map values (column[key]) with bloom filters only (its writer fails)",
         range_bitmap_unsupported_reason),
    ]
    for kind, map_value_reason, type_reason in keyed_kinds:
        for name in indexed_columns(schema.options, kind):
            what = f"option file-index.{kind}.columns names {name!r}"
            top = top_level_column(name)
            if not schema.has_field(top):
                out.append((what, "the table has no such column (Paimon's writer fails on it)"))
            elif top != name:
                out.append((what, map_value_reason))
            elif (why := type_reason(schema.field(name).type)) is not None:
                out.append((what, why))
    for name in indexed_columns(schema.options, BLOOM_FILTER):
        what = f"option file-index.{BLOOM_FILTER}.columns names {name!r}"
        field = schema.field(top_level_column(name)) if schema.has_field(top_level_column(name)) else None
        if field is None:
            out.append((what, "the table has no such column (Paimon's writer fails on it)"))
        elif top_level_column(name) != name and (
                not isinstance(field.type, MapType) or not isinstance(field.type.key, (CharType, VarCharType))):
            out.append((what, f"column {field.name!r} is {field.type}, not a map with CHAR / VARCHAR keys "
                              "(Paimon's writer fails on it)"))
        elif not hashable(hashed := field.type.value if isinstance(field.type, MapType) else field.type):
            out.append((what, f"Paimon has no bloom-filter hash for type {hashed} (its writer fails)"))
        else:
            items, fpp = _sizing(schema.options, name)
            if items is not None and fpp is not None and bloom_bits(items, fpp) > INT_MAX:
                out.append((f"options file-index.{BLOOM_FILTER}.{name}.items = {items} and .fpp = {fpp}",
                            "the bloom filter would need more bits than a Java int counts (Paimon's writer "
                            "fails on it)"))
    return out


def _sizing(options: Mapping[str, str], name: str) -> tuple[int | None, float | None]:
    """(items, fpp) of a column's bloom filter; None for a value that does not parse (the option
    registry refuses it on its own). A map key's ``m[k]`` takes the map column's ``m`` options
    where it has none of its own (0.9: ``DataFileIndexWriter.MapFileIndexMaintainer.add``)."""
    own = f"file-index.{BLOOM_FILTER}.{name}."
    top = f"file-index.{BLOOM_FILTER}.{top_level_column(name)}."
    try:
        items = int(options.get(own + "items", options.get(top + "items", DEFAULT_ITEMS)))
    except ValueError:
        items = None
    try:
        fpp = float(options.get(own + "fpp", options.get(top + "fpp", DEFAULT_FPP)))
    except ValueError:
        fpp = None
    ok = items is not None and items >= 1 and fpp is not None and 0.0 < fpp < 1.0
    return (items, fpp) if ok else (None, None)


def index_plan(schema: TableSchema) -> IndexPlan | None:
    """The bloom-filter indexes new data files of ``schema`` get, or None (no index).

    Callers have been refused by `write_problems` (via table_support) when it finds anything."""
    options = schema.options
    names = indexed_columns(options, BLOOM_FILTER)
    bitmaps = tuple(BitmapColumn(n, schema.field(n).type, *_bitmap_layout(options, n))
                    for n in indexed_columns(options, BITMAP))
    bsi = tuple(BitmapColumn(n, schema.field(n).type) for n in indexed_columns(options, BSI))
    range_bitmap = tuple((BitmapColumn(n, schema.field(n).type), _chunk_size(options, n))
                         for n in indexed_columns(options, RANGE_BITMAP))
    if not names and not bitmaps and not bsi and not range_bitmap:
        return None
    columns = []
    for name in names:
        items, fpp = _sizing(options, name)
        if items is None or fpp is None:
            raise OptionError(f"Table options: the bloom-filter index of {name!r} has no valid items / fpp")
        top = top_level_column(name)
        column_type = schema.field(top).type
        if top != name and isinstance(column_type, MapType):
            columns.append(BloomColumn(name, column_type.value, items, fpp, name[len(top) + 1: -1]))
        else:
            columns.append(BloomColumn(name, column_type, items, fpp))
    threshold_text = options.get("file-index.in-manifest-threshold")
    threshold = (DEFAULT_IN_MANIFEST_THRESHOLD if threshold_text is None
                 else parse_memory_size(threshold_text, "file-index.in-manifest-threshold"))
    return IndexPlan(tuple(columns), threshold, bitmaps, bsi, range_bitmap)


def _bitmap_layout(options: Mapping[str, str], name: str) -> tuple[int, int]:
    """(version, index block size) of a column's bitmap index: ``file-index.bitmap.<name>.version``
    (unset: 1, which Paimon 0.9 reads; Java 1.x writes 2 by default) and ``.index-block-size``
    (version 2 only; Java's default 16 kb)."""
    prefix = f"file-index.{BITMAP}.{name}."
    version = int(options.get(prefix + "version", "1"))
    text = options.get(prefix + "index-block-size")
    return version, DEFAULT_BLOCK_SIZE if text is None else parse_memory_size(text, prefix + "index-block-size")


def _chunk_size(options: Mapping[str, str], name: str) -> int | None:
    """``file-index.range-bitmap.<name>.chunk-size`` in bytes, or None (unset)."""
    key = f"file-index.{RANGE_BITMAP}.{name}.chunk-size"
    text = options.get(key)
    return None if text is None else parse_memory_size(text, key)


# ---------------------------------------------------------------- one data file's index


class FileIndexBuilder:
    """The index of one data file, fed with the file's chunks as they are written."""

    def __init__(self, plan: IndexPlan) -> None:
        self.plan = plan
        self.filters = [BloomFilter64.sized(c.items, c.fpp) for c in plan.bloom]
        self.bitmaps = [BitmapIndexBuilder(c.type, c.version, c.block_size) for c in plan.bitmap]
        self.bsi = [BsiIndexBuilder(c.type, c.name) for c in plan.bsi]
        self.range_bitmaps = [RangeBitmapIndexBuilder(c.type, c.name, size) for c, size in plan.range_bitmap]

    def add(self, chunk: pa.Table) -> None:
        """Add a chunk's values (a table holding the indexed columns under their names)."""
        for column, bloom in zip(self.plan.bloom, self.filters, strict=True):
            if column.map_key is None:
                values = chunk.column(column.name)
            else:
                # every value of the key in each row's map (a map holding it twice adds both, as Java)
                values = pc.list_flatten(pc.map_lookup(chunk.column(top_level_column(column.name)),
                                                       pa.scalar(column.map_key, pa.string()), "all"))
            bloom.add_hashes(fast_hash(values, column.type))
        for bitmap_column, bitmap in zip(self.plan.bitmap, self.bitmaps, strict=True):
            bitmap.add(chunk.column(bitmap_column.name))
        for bsi_column, bsi in zip(self.plan.bsi, self.bsi, strict=True):
            bsi.add(chunk.column(bsi_column.name))
        for (rb_column, _), rb in zip(self.plan.range_bitmap, self.range_bitmaps, strict=True):
            rb.add(chunk.column(rb_column.name))

    def finish(self) -> tuple[bytes, bool]:
        """(container bytes, whether they go to a ``.index`` file rather than the manifest)."""
        indexes: dict[str, dict[str, bytes | None]] = {}
        for c, f in zip(self.plan.bloom, self.filters, strict=True):
            indexes.setdefault(c.name, {})[BLOOM_FILTER] = f.to_bytes()
        for bc, b in zip(self.plan.bitmap, self.bitmaps, strict=True):
            indexes.setdefault(bc.name, {})[BITMAP] = b.finish()
        for sc, sb in zip(self.plan.bsi, self.bsi, strict=True):
            indexes.setdefault(sc.name, {})[BSI] = sb.finish()
        for (rc, _), rb in zip(self.plan.range_bitmap, self.range_bitmaps, strict=True):
            indexes.setdefault(rc.name, {})[RANGE_BITMAP] = rb.finish()
        data = write_container(indexes, java_order=True)
        return data, len(data) > self.plan.in_manifest_threshold


def bloom_filters(data: bytes, what: str = "file index") -> dict[str, BloomFilter64]:
    """Column -> bloom filter of a file index's container (other index types left out)."""
    out = {}
    for column, types in read_container(data, what).items():
        payload = types.get(BLOOM_FILTER)
        if payload is not None:
            out[column] = BloomFilter64.from_bytes(payload, f"{what}: bloom filter of {column!r}")
    return out
