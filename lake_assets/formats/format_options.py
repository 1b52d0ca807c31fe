"""The options of data file formats a table carries, as the format writers take them.

Paimon passes every ``parquet.*`` / ``orc.*`` / ``avro.*`` key of a table to the writer of that
format (Parquet: parquet-hadoop's configuration, ORC: ``OrcConf``, Avro: ``AvroFileFormat``), and
picks the format and codec of a new key-value file by its level (``file.format.per.level``,
``file.compression.per.level``, e.g. ``0:avro,3:parquet``; changelog files follow the level they
are written at). The registry rows of these keys are in `lake_assets.option_rules`; this module
turns the texts into the knobs of pyarrow's and fastavro-based writers. Every knob here only
shapes the physical file (sizes, dictionaries, bloom filters, codecs): the files describe
themselves, so readers read them whatever the values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pyarrow as pa

from lake_assets.errors import OptionError

FORMAT_PREFIXES = ("parquet.", "orc.", "avro.")
FORMAT_PER_LEVEL = "file.format.per.level"
COMPRESSION_PER_LEVEL = "file.compression.per.level"

# Parquet (parquet-hadoop's ParquetOutputFormat keys)
PARQUET_BLOCK_SIZE = "parquet.block.size"
PARQUET_PAGE_SIZE = "parquet.page.size"
PARQUET_DICTIONARY_PAGE_SIZE = "parquet.dictionary.page.size"
PARQUET_ENABLE_DICTIONARY = "parquet.enable.dictionary"
PARQUET_ZSTD_LEVEL = "parquet.compression.codec.zstd.level"
PARQUET_BLOOM_ENABLED = "parquet.bloom.filter.enabled"
PARQUET_BLOOM_NDV = "parquet.bloom.filter.expected.ndv"
PARQUET_BLOOM_FPP = "parquet.bloom.filter.fpp"
PARQUET_BLOOM_MAX_BYTES = "parquet.bloom.filter.max.bytes"
# keys a ``#<column>`` suffix makes per column (parquet-hadoop's ColumnConfigParser)
PARQUET_COLUMN_KEYS = (PARQUET_BLOOM_ENABLED, PARQUET_BLOOM_NDV, PARQUET_BLOOM_FPP)

# ORC (OrcConf keys)
ORC_STRIPE_SIZE = "orc.stripe.size"
ORC_COMPRESS_SIZE = "orc.compress.size"
ORC_ROW_INDEX_STRIDE = "orc.row.index.stride"
ORC_BLOOM_COLUMNS = "orc.bloom.filter.columns"
ORC_BLOOM_FPP = "orc.bloom.filter.fpp"
ORC_DICTIONARY_THRESHOLD = "orc.dictionary.key.threshold"
ORC_WRITE_BATCH_SIZE = "orc.write.batch-size"
ORC_ZSTD_LEVEL = "orc.compression.zstd.level"

# ORC C++'s memory block size: compression blocks are whole multiples of it
ORC_MEMORY_BLOCK = 64 * 1024

AVRO_CODEC = "avro.codec"
# Avro's codec names (CodecFactory.fromString: exact, case-sensitive), and those Paimon Java's
# bundle can read (it ships no xz or bzip2 library)
AVRO_CODECS = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")
AVRO_JAVA_CODECS = ("null", "deflate", "snappy", "zstandard")

# parquet-java's default bloom filter size when no expected NDV is given (pyarrow's default too)
_DEFAULT_BLOOM_NDV = 1024 * 1024


def parse_level_map(text: object, key: str) -> dict[int, str]:
    """``0:avro, 3:parquet`` as {level: value} (Paimon's map option grammar, values lower case);
    `OptionError` naming ``key`` when an entry is not ``<level>:<value>``."""
    out: dict[int, str] = {}
    for entry in str(text).split(","):
        if not entry.strip():
            continue
        level, sep, value = entry.partition(":")
        try:
            lvl = int(level.strip())
        except ValueError:
            lvl = -1
        if not sep or lvl < 0 or not value.strip():
            raise OptionError(f"Option {key!r}: entry {entry.strip()!r} is not '<level>:<value>' (e.g. '0:avro')")
        out[lvl] = value.strip().lower()
    return out


def level_map_problem(text: object) -> str | None:
    """The registry check of a per-level option: None when the text parses."""
    try:
        parse_level_map(text, "")
    except OptionError as exc:
        return str(exc).split(": ", 1)[-1]
    return None


def format_of_level(options: Mapping[str, str], level: int, default: str) -> str:
    """The format Paimon's key-value writers use for a file of ``level``."""
    per_level = options.get(FORMAT_PER_LEVEL)
    return parse_level_map(per_level, FORMAT_PER_LEVEL).get(level, default) if per_level else default


def compression_of_level(options: Mapping[str, str], level: int, default: str) -> str:
    """The codec Paimon's key-value writers use for a file of ``level``."""
    per_level = options.get(COMPRESSION_PER_LEVEL)
    return parse_level_map(per_level, COMPRESSION_PER_LEVEL).get(level, default) if per_level else default


def level_format_and_codec(options: Mapping[str, str], primary_key: bool, level: int, fmt: str,
                           codec: str) -> tuple[str, str]:
    """(format, codec) of a new file of ``level`` whose table default is (``fmt``, ``codec``):
    the per-level options apply to key-value files only (Paimon's KeyValueFileWriterFactory; its
    append writers always use the table's)."""
    if not primary_key:
        return fmt, codec
    return format_of_level(options, level, fmt), compression_of_level(options, level, codec)


def formats_written(options: Mapping[str, str], default: str) -> set[str]:
    """Every format a writer of the table may use: ``file.format`` and the per-level ones."""
    per_level = options.get(FORMAT_PER_LEVEL)
    levels = parse_level_map(per_level, FORMAT_PER_LEVEL) if per_level else {}
    return {default, *levels.values()}


def unwritten_per_level(options: Mapping[str, str], formats: Iterable[str],
                        codecs: Iterable[str]) -> list[tuple[str, str]]:
    """(key, problem) for each per-level option naming a format or codec outside ``formats`` /
    ``codecs`` (what lake_assets writes); malformed values are left to their registry rows."""
    out: list[tuple[str, str]] = []
    for key, known, what in ((FORMAT_PER_LEVEL, frozenset(formats), "formats"),
                             (COMPRESSION_PER_LEVEL, frozenset(codecs), "codecs")):
        text = options.get(key)
        try:
            levels = parse_level_map(text, key) if text else {}
        except OptionError:
            continue
        bad = sorted(f"{lvl}:{v}" for lvl, v in levels.items() if v not in known)
        if bad:
            out.append((key, f"level(s) {', '.join(bad)} name {what} lake_assets does not write "
                             f"(it writes {', '.join(sorted(known))})"))
    return out


def _int(options: Mapping[str, str], key: str) -> int | None:
    v = options.get(key)
    return None if v is None else int(str(v).strip())


def _float(options: Mapping[str, str], key: str) -> float | None:
    v = options.get(key)
    return None if v is None else float(str(v).strip())


def _bool(options: Mapping[str, str], key: str) -> bool | None:
    v = options.get(key)
    return None if v is None else str(v).strip().lower() == "true"


def parquet_row_group_bytes(options: Mapping[str, str]) -> int | None:
    """``parquet.block.size``: the row group size parquet-java closes a row group at."""
    return _int(options, PARQUET_BLOCK_SIZE)


def parquet_overrides(options: Mapping[str, str], arrow_schema: pa.Schema, compression: str) -> dict[str, object]:
    """pq.ParquetWriter keyword arguments the table's ``parquet.*`` options set (only those), for a
    file compressed with ``compression`` (``file.compression`` or its level's)."""
    kw: dict[str, object] = {}
    page = _int(options, PARQUET_PAGE_SIZE)
    if page is not None:
        kw["data_page_size"] = page
    dict_page = _int(options, PARQUET_DICTIONARY_PAGE_SIZE)
    if dict_page is not None:
        kw["dictionary_pagesize_limit"] = dict_page
    if _bool(options, PARQUET_ENABLE_DICTIONARY) is False:
        kw["use_dictionary"] = False
    # parquet.writer.version: v1 (pyarrow's default data pages) is the one value written; v2 is
    # refused for writes by its registry row
    level = _int(options, PARQUET_ZSTD_LEVEL)
    if level is not None and compression == "zstd":
        kw["compression_level"] = level
    blooms = parquet_bloom_filters(options, arrow_schema)
    if blooms:
        kw["bloom_filter_options"] = blooms
    return kw


def parquet_bloom_filters(options: Mapping[str, str], arrow_schema: pa.Schema) -> dict[str, dict[str, object]]:
    """Columns that get a bloom filter (parquet-hadoop's rule: ``parquet.bloom.filter.enabled``
    for every column, ``...#<column>`` overriding it per column), with their NDV and FPP."""
    every = _bool(options, PARQUET_BLOOM_ENABLED) is True
    out: dict[str, dict[str, object]] = {}
    for field in arrow_schema:
        name = field.name
        if pa.types.is_nested(field.type):
            continue  # parquet-hadoop names leaf paths; a nested column has none of its own
        enabled = _bool(options, f"{PARQUET_BLOOM_ENABLED}#{name}")
        if not (every if enabled is None else enabled):
            continue
        ndv = _int(options, f"{PARQUET_BLOOM_NDV}#{name}")
        fpp = _float(options, f"{PARQUET_BLOOM_FPP}#{name}")
        out[name] = {"ndv": ndv or _DEFAULT_BLOOM_NDV, "fpp": 0.05 if fpp is None else fpp}
    return out


def orc_writer_kwargs(options: Mapping[str, str], arrow_schema: pa.Schema) -> dict[str, object]:
    """pyarrow ORCWriter keyword arguments the table's ``orc.*`` options set (only those)."""
    kw: dict[str, object] = {}
    for key, arg in ((ORC_STRIPE_SIZE, "stripe_size"), (ORC_ROW_INDEX_STRIDE, "row_index_stride"),
                     (ORC_WRITE_BATCH_SIZE, "batch_size")):
        value = _int(options, key)
        if value is not None:
            kw[arg] = value
    block = _int(options, ORC_COMPRESS_SIZE)
    if block is not None:
        # ORC's C++ writer takes whole memory blocks only; the size of compression chunks never
        # changes what a reader reads (each chunk's header gives its length)
        kw["compression_block_size"] = -(-block // ORC_MEMORY_BLOCK) * ORC_MEMORY_BLOCK
    for key, arg in ((ORC_BLOOM_FPP, "bloom_filter_fpp"), (ORC_DICTIONARY_THRESHOLD, "dictionary_key_size_threshold")):
        f = _float(options, key)
        if f is not None:
            kw[arg] = f
    columns = options.get(ORC_BLOOM_COLUMNS)
    if columns:
        wanted = {c.strip() for c in columns.split(",") if c.strip()}
        ids, next_id = [], 1
        for f in arrow_schema:
            if f.name in wanted:
                ids.append(next_id)
            next_id += _orc_type_count(f.type)
        kw["bloom_filter_columns"] = ids
    return kw


def _orc_type_count(t: pa.DataType) -> int:
    """ORC column ids a type takes: ids number the type tree in pre-order (0 is the root struct),
    which is what pyarrow's ``bloom_filter_columns`` takes."""
    if pa.types.is_map(t):
        return 1 + _orc_type_count(t.key_type) + _orc_type_count(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return 1 + _orc_type_count(t.value_type)
    if pa.types.is_struct(t):
        return 1 + sum(_orc_type_count(f.type) for f in t)
    return 1


def avro_codec(options: Mapping[str, str], compression: str) -> str:
    """The Avro codec of a data file, as Paimon Java picks it: ``avro.codec`` when set, else
    ``zstandard`` for zstd and Avro's default ``snappy`` otherwise."""
    codec = options.get(AVRO_CODEC)
    if codec is not None:
        return codec  # Avro's name exactly (its registry row refuses writes of any other text)
    return "zstandard" if compression == "zstd" else "snappy"
