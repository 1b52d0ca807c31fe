"""Rows of the option registry for Paimon's data-file indexes (``file-index.*``, docs/format.md §7.6).

A table turns an index type on for columns with ``file-index.<type>.columns`` and tunes it per
column with ``file-index.<type>.<column>.<option>`` (Paimon's FileIndexOptions: exactly three
dot-separated parts after ``file-index.``). lake_assets writes ``bloom-filter``, ``bitmap``, ``bsi``
and ``range-bitmap`` indexes (the same bytes Java writes, `lake_assets.formats.file_index`; bitmap
indexes in version 1, the one Paimon 0.9 reads, or 2 when a column's ``version`` asks;
reads prune by bitmap versions 1 and 2, by bsi and
by range-bitmap); bsi and range-bitmap are Paimon 1.x's, written as Java HEAD's source defines them
and checked against pypaimon-rust 0.4 (Java 0.9 lacks them: it reads such a table, but a filter on
such a column fails its reader, as on any table Paimon 1.x indexed so,
tests/differential/test_bsi_java.py, tests/differential/test_range_bitmap_java.py). The other types
(any type without a row of its own: a newer Paimon's or a plug-in's) are refused at create and ALTER
and, on a table that carries them, for writes and compaction only: Java's writers would index every
new file, ours cannot. Reads, streams,
expiry, orphan removal, tags, rollback and health never depend on an index (an index only lets a
reader skip files without a match; lake_assets keeps and deletes ``.index`` files with their data
files), so they accept every type. A per-column key Paimon does not read (a bloom filter's other
than ``fpp`` and ``items``, a bitmap's other than ``version`` and ``index-block-size``) is not
guessed at: it stays an unknown option (`lake_assets.table_support`).

`FILE_INDEX_RULES` are plain rows merged into `lake_assets.option_rules.RULES`;
`FILE_INDEX_COLUMN_RULES` are the per-column rows, keyed by (type, option), found by
`file_index_rule` through `FILE_INDEX_COLUMN_OPTION`. `file_index_problems` checks what one value
cannot: that the columns named exist and that per-column options name indexed columns.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from functools import lru_cache

from lake_assets.errors import OptionError
from lake_assets.option_types import KEY_SLOT, WRITE_OPS, OptionRule
from lake_assets.refusal_actions import remove_option, set_option

FILE_INDEX_PREFIX = "file-index."
BLOOM_FILTER = "bloom-filter"
# Index types Paimon writers know (0.9: bloom-filter, bitmap; 1.x adds bsi, range-bitmap).
BITMAP = "bitmap"
BSI = "bsi"
RANGE_BITMAP = "range-bitmap"
INDEX_TYPES = (BLOOM_FILTER, BITMAP, BSI, RANGE_BITMAP)
WRITTEN_INDEX_TYPES = INDEX_TYPES
_NOT_WRITTEN = ("lake_assets writes bloom-filter, bitmap, bsi and range-bitmap file indexes only, not this type "
                "(a newer Paimon's or a plug-in's), while Java's writers would index every new file with it; "
                "reads never use it (they keep every file), and expiry, orphan removal, tags and rollback accept it")
# What the user of such an index does: Paimon Java (with the plug-in) builds it; without it new files
# simply carry no such index, which no reader needs.
_NOT_WRITTEN_ACTION = ("write and compact the table with the Paimon Java (or plug-in) that builds this index, or, "
                       "if new files need not carry it, remove this option and the other options of the index "
                       f"type (file-index.<type>.*): {remove_option(KEY_SLOT)}; files written so far keep their "
                       "index")

def _column_list(v: object) -> str | None:
    # Paimon's FileIndexOptions: a blank name fails the writer ("should not have empty column")
    if any(not name.strip() for name in str(v).split(",")):
        return "names an empty column (a comma-separated list of columns)"
    return None


def _fpp(v: object) -> str | None:
    # BloomFilter64 takes ln(fpp): 0 and 1 give no filter Java could size
    if isinstance(v, float) and 0.0 < v < 1.0:
        return None
    return "must be a false positive rate between 0 and 1 (exclusive)"


R = OptionRule
FILE_INDEX_RULES: dict[str, OptionRule] = {r.key: r for r in (
    R("file-index.in-manifest-threshold", "size", 500, "File indexes up to this size are embedded in the "
      "manifest entry (_EMBEDDED_FILE_INDEX), larger ones written to <data file>.index (_EXTRA_FILES).",
      minimum=0, writer_only=True),
    R("file-index.read.enabled", "bool", True, "Whether readers use file indexes to skip data files.",
      note="honoured: batch reads of append tables skip files whose bloom filters rule out every = / in "
      "literal of a clause or whose bitmap (versions 1 and 2), bsi and range-bitmap indexes leave no row matching "
      "all of a clause's terms (bitmap: = / in / != / not in / is null / is not null; bsi: = / in / != / not in / "
      "< / <= / > / >=; range-bitmap: all of these) (ops/file_index_prune.py); "
      "primary-key tables are never pruned by value indexes "
      "(a file without the value may hold a newer version of a key)"),
    R(f"file-index.{BLOOM_FILTER}.columns", "string", None, "Columns whose data files get a bloom-filter index "
      "(comma-separated).", check=_column_list,
      note="honoured by writes and compaction for columns of types Paimon hashes (not BOOLEAN, DECIMAL or "
      "nested types) and for the values of a key of a map column with CHAR / VARCHAR keys (col[key], sized by "
      "col[key]'s options, else col's); others are refused at create and ALTER with OptionError as Paimon 2.0's "
      "SchemaValidation refuses them, and a table another engine created so refuses writes and compaction"),
    R(f"file-index.{BITMAP}.columns", "string", None, "Columns whose data files get a bitmap index "
      "(comma-separated).", check=_column_list,
      note="honoured by writes and compaction (version 1, Java 0.9's bytes, or 2 per column) for columns of "
      "the types Paimon 0.9's "
      "bitmap index keys (not BOOLEAN: 0.9 and 1.0 readers would skip files that match, fixed in 1.1; not "
      "BINARY, DECIMAL or nested types, which no Paimon indexes; not map keys col[key]): those refuse writes "
      "and compaction; BINARY, DECIMAL, nested types and nested names of columns that are not maps with string "
      "keys are refused at create and ALTER with OptionError, as Paimon 2.0's SchemaValidation refuses them"),
    R(f"file-index.{BSI}.columns", "string", None, "Columns whose data files get a bsi (bit-sliced) index "
      "(comma-separated) (Paimon 1.x).", check=_column_list,
      note="honoured by writes and compaction (version 1, the bytes Java HEAD's BitSliceIndexBitmapFileIndex "
      "writes) for TINYINT, SMALLINT, INT, BIGINT, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ and DECIMAL up to "
      "precision 18; a column (or map value col[key]) of another type (STRING, DOUBLE, BOOLEAN, ...) is refused "
      "at create and ALTER "
      "with OptionError as Paimon 1.x's SchemaValidation refuses it, and a table another engine created so, "
      "like DECIMAL above 18 and map values col[key], refuses writes and compaction; reads of append tables "
      "prune by it for = / in / != / not in / < / <= / > / >=. Java 0.9 has no bsi: its reads of a filter on such a "
      "column fail ('Can't find file index for type: bsi'), as on any table Paimon 1.x indexed so"),
    R(f"file-index.{RANGE_BITMAP}.columns", "string", None, "Columns whose data files get a range-bitmap "
      "index (comma-separated) (Paimon 1.x).", check=_column_list,
      note="honoured by writes and compaction (version 1, the bytes Java HEAD's RangeBitmapFileIndex writes) for "
      "CHAR, VARCHAR, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL up to precision 18, DATE, "
      "TIME, and TIMESTAMP / TIMESTAMP_LTZ up to precision 6; a column (or map value col[key]) of another type "
      "or precision is refused at create and ALTER with OptionError as Paimon HEAD's SchemaValidation refuses "
      "it, and a table another engine created so, like map values col[key], refuses writes and compaction; reads "
      "of append tables prune by it for = / in / != / not in / < / <= / > / >= / is null / is not null. Java 0.9 "
      "has no range-bitmap: its reads of a filter on such a column fail ('Can't find file index for type: "
      "range-bitmap'), as on any table Paimon 1.x indexed so"),
)}

def _block_size(v: object) -> str | None:
    # BitmapFileIndexMetaV2 compares block sizes with an int's; a block holds its count and an entry
    if isinstance(v, int) and not 16 <= v <= 2**31 - 1:
        return "must be between 16 bytes and 2147483647 bytes"
    return None


def _chunk_size(v: object) -> str | None:
    # RangeBitmapFileIndex casts the parsed size to a Java int (a larger one would wrap around)
    if isinstance(v, int) and v > 2**31 - 1:
        return "must be at most 2147483647 bytes (Paimon keeps it in a Java int)"
    return None


# Per-column options, keyed by (index type, option).
FILE_INDEX_COLUMN_RULES: dict[tuple[str, str], OptionRule] = {
    (BLOOM_FILTER, "fpp"): R("fpp", "ratio", 0.1, "False positive rate of the column's bloom-filter index.",
                             check=_fpp, writer_only=True),
    (BLOOM_FILTER, "items"): R("items", "int", 1_000_000, "Distinct values the column's bloom-filter index is "
                               "sized for.", minimum=1, writer_only=True),
    (BITMAP, "index-block-size"): R("index-block-size", "size", None, "Most bytes of an index block of the "
                                    "column's bitmap index (Paimon 1.x, version 2 only; unset: 16 kb).",
                                    writer_only=True, check=_block_size,
                                    note="honoured by version-2 writes; version 1 has no blocks (Java's version-1 "
                                    "writer ignores it too); an entry larger than a block fails the write, as "
                                    "Java's writer fails"),
    (BITMAP, "version"): R("version", "int", None, "Format version of the column's bitmap index (Paimon 0.9: 1 "
                           "only; 1.x: 1 or 2, default 2).", writer_only=True, supported=("1", "2"),
                           refuses=WRITE_OPS, why="Paimon writes and reads bitmap index versions 1 and 2 only; "
                           "reads, expiry, orphan removal, tags and rollback accept it",
                           action=f"{set_option(KEY_SLOT, '1')}, as Paimon's writers fail on any other version "
                           "(2 is Paimon 1.x's layout, which Paimon 0.9 cannot read)",
                           note="unset, lake_assets writes version 1, which Paimon 0.9 reads (Paimon 1.x would "
                           "write 2; both read 1); 2 writes Paimon 1.x's layout (Java HEAD's "
                           "BitmapFileIndexMetaV2: entries sorted by value in index blocks), which Paimon 0.9 "
                           "readers fail on"),
    (RANGE_BITMAP, "chunk-size"): R("chunk-size", "size", None, "Bytes of dictionary keys per chunk of the "
                                    "column's range-bitmap index, after each chunk's first key (Paimon 1.x; "
                                    "unset: 16 kb, 0 b for BOOLEAN, TINYINT and SMALLINT).", writer_only=True,
                                    check=_chunk_size),
    # any other option of a type lake_assets does not write: refused with the type
    ("<type>", "<option>"): R("<option>", "string", None, "Options of an index type lake_assets does not "
                              "write.", supported=(), refuses=WRITE_OPS, why=_NOT_WRITTEN,
                              action=_NOT_WRITTEN_ACTION),
}
# Index types no row above names (a newer Paimon's, or a plug-in FileIndexerFactory's): refused
# for writes and compaction as bsi is; reads and maintenance never depend on an index.
OTHER_TYPE_COLUMNS = R("file-index.<type>.columns", "string", None, "Columns whose data files get an index of "
                       "another type (a newer Paimon's or a plug-in's).", check=_column_list, supported=(),
                       refuses=WRITE_OPS, why=_NOT_WRITTEN, action=_NOT_WRITTEN_ACTION)
del R

FILE_INDEX_COLUMN_OPTION = re.compile(r"^file-index\.(?P<type>[^.]+)\.(?P<column>[^.]+)\.(?P<option>[^.]+)$")
_COLUMNS_KEY = re.compile(r"^file-index\.(?P<type>[^.]+)\.columns$")


def file_index_rule(key: str) -> OptionRule | None:
    """The row of a per-column file-index option (``file-index.<type>.<column>.<option>``) or of the
    columns of an index type without a row of its own, or None (an unknown bloom-filter option)."""
    m = FILE_INDEX_COLUMN_OPTION.match(key)
    if m is not None:
        index_type, option = m.group("type"), m.group("option")
        if (index_type, option) in FILE_INDEX_COLUMN_RULES:
            return _column_rule(key, index_type, option)
        # Paimon's bloom filter and bitmap read the keys above only: another is a typo we do not guess at
        return None if index_type in WRITTEN_INDEX_TYPES else _column_rule(key, "<type>", "<option>")
    if _COLUMNS_KEY.match(key) and key not in FILE_INDEX_RULES:
        return dataclasses.replace(OTHER_TYPE_COLUMNS, key=key)
    return FILE_INDEX_RULES.get(key)


@lru_cache(maxsize=256)
def _column_rule(key: str, index_type: str, option: str) -> OptionRule:
    # the row under the full key, so that every message names the key the table carries
    return dataclasses.replace(FILE_INDEX_COLUMN_RULES[(index_type, option)], key=key)


def index_types(options: Mapping[str, str]) -> list[str]:
    """The index types a table's options turn on (``file-index.<type>.columns``), in key order."""
    return [m.group("type") for key in options if (m := _COLUMNS_KEY.match(key))]


def indexed_columns(options: Mapping[str, str], index_type: str) -> list[str]:
    """The columns ``file-index.<index_type>.columns`` names, trimmed, in order (``m[k]`` as written)."""
    text = options.get(f"file-index.{index_type}.columns")
    # a name listed twice is one index, as in Paimon's FileIndexOptions (computeIfAbsent)
    return [] if text is None else list(dict.fromkeys(n.strip() for n in str(text).split(",") if n.strip()))


def top_level_column(name: str) -> str:
    """The table column of an indexed name: ``m`` of a map key ``m[k]`` (Paimon's nested form)."""
    start = name.find("[")
    return name[:start] if start > 0 and name.endswith("]") else name


def file_index_problems(options: Mapping[str, str], field_names: tuple[str, ...]) -> list[OptionError]:
    """What Paimon's writer would fail on that no single value shows: indexed columns the table
    does not have, and per-column options of a column its type's ``.columns`` does not list."""
    problems: list[OptionError] = []
    for t in index_types(options):
        key = f"file-index.{t}.columns"
        for name in indexed_columns(options, t):
            if field_names and top_level_column(name) not in field_names:
                problems.append(OptionError(
                    f"Option {key!r} names column {name!r}, which the table does not have"))
    for key in options:
        m = FILE_INDEX_COLUMN_OPTION.match(key)
        if m is None or file_index_rule(key) is None:
            continue
        t, column = m.group("type"), m.group("column")
        listed = indexed_columns(options, t)
        # a map column's own options size the indexes of its keys' values (m[k]) without their own
        maps = {top_level_column(n) for n in listed if top_level_column(n) != n}
        if column not in listed and column not in maps:
            problems.append(OptionError(
                f"Option {key!r} tunes the {t} index of column {column!r}, which 'file-index.{t}.columns' "
                "does not list (Paimon's writer fails on it)"))
    return problems


__all__ = [
    "BITMAP",
    "BLOOM_FILTER",
    "BSI",
    "FILE_INDEX_COLUMN_OPTION",
    "FILE_INDEX_COLUMN_RULES",
    "FILE_INDEX_PREFIX",
    "FILE_INDEX_RULES",
    "INDEX_TYPES",
    "OTHER_TYPE_COLUMNS",
    "RANGE_BITMAP",
    "WRITTEN_INDEX_TYPES",
    "file_index_problems",
    "file_index_rule",
    "index_types",
    "indexed_columns",
    "top_level_column",
]
