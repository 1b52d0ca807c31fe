"""The options of data file formats a table carries, as the format writers take them.

Paimon passes every ``parquet.*`` / ``orc.*`` / ``avro.*`` key of a table to the writer of that
format (Parquet: parquet-hadoop's configuration, ORC: ``OrcConf``, Avro: ``AvroFileFormat``), and
picks the format and codec of a new key-value file by its level (``file.format.per.level``,
``file.compression.per.level``, e.g. ``0:avro,3:parquet``; changelog files follow the level they
are written at, or ``changelog-file.format`` / ``changelog-file.compression`` where set). The
registry rows of these keys are in `lake_assets.option_rules`; this module turns the texts into
the knobs of pyarrow's and fastavro-based writers. Every knob here only
shapes the physical file (sizes, dictionaries, bloom filters, codecs): the files describe
themselves, so readers read them whatever the values.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from lake_assets.errors import OptionError
from lake_assets.option_maps import parse_java_map
from lake_assets.option_types import INT_MAX, java_fold_choice, java_parse_integer

FORMAT_PREFIXES = ("parquet.", "orc.", "avro.")
FORMAT_PER_LEVEL = "file.format.per.level"
COMPRESSION_PER_LEVEL = "file.compression.per.level"
CHANGELOG_FORMAT = "changelog-file.format"
CHANGELOG_COMPRESSION = "changelog-file.compression"
# Codec names some Paimon Java writer takes (parquet-java's CompressionCodecName, ORC's
# CompressionKind, Avro's zstd), lower case; each format says which it writes (FileFormat.codecs)
# a level no per-level map names (their levels are 32-bit): the table's own format and codec
_UNMAPPED = -(2**63)
# the format writer options that replace the codec of every file of their format
CODEC_OVERRIDES = {"parquet": "parquet.compression", "orc": "orc.compress"}
FILE_CODECS = ("zstd", "snappy", "gzip", "lz4", "lz4_raw", "none", "uncompressed", "brotli", "lzo", "zlib")

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
    """``0:avro, 3:parquet`` as {level: value}, as Paimon's ``fileFormatPerLevel`` /
    ``fileCompressionPerLevel`` read it: the map grammar (`lake_assets.option_maps`), then each
    key through ``Integer.valueOf`` (a 32-bit integer, Java's digits; a negative level is taken
    and never used) with no level twice. Values as written: the format ones are lower-cased by
    `format_of_level`, the codecs folded by `compression_of_level`. `OptionError` naming ``key``
    where Java throws."""
    out: dict[int, str] = {}
    try:
        entries = parse_java_map(str(text))
    except OptionError as exc:
        raise OptionError(f"Option {key!r}: {exc} (e.g. '0:avro,3:parquet')") from None
    for level_text, value in entries:
        level = java_parse_integer(level_text)
        if level is None or not -INT_MAX - 1 <= level <= INT_MAX:
            raise OptionError(f"Option {key!r}: level {level_text!r} is not an integer (e.g. '0:avro,3:parquet')")
        if level in out:
            raise OptionError(f"Option {key!r}: level {level} is given twice")
        out[level] = value
    return out


def level_map_problem(text: object) -> str | None:
    """The registry check of a per-level option: None when the text parses."""
    try:
        parse_level_map(text, "")
    except OptionError as exc:
        return str(exc).split(": ", 1)[-1]
    return None


def _levels(options: Mapping[str, str], key: str) -> dict[int, str]:
    text = options.get(key)
    return parse_level_map(text, key) if text is not None else {}


def fold_codec(text: str) -> str:
    """A codec's text as Paimon's Parquet and ORC writers match it (upper-cased, untrimmed), as
    the lower-case name lake_assets' writers take; the text itself when it names no codec (each
    format then says whether it writes it: Paimon's Avro writer takes any text but zstd for snappy)."""
    return java_fold_choice(text, FILE_CODECS, "upper") or text


def codec_for_format(options: Mapping[str, str], fmt: str, codec: str) -> str:
    """The codec a file of ``fmt`` is written with when its level (or the table) gives ``codec``:
    Java's Parquet writer takes ``parquet.compression`` first (``RowDataParquetBuilder
    .getCompression``) and its ORC writer ``orc.compress`` (``OrcWriterFactory.create``, ORC's
    ``WriterOptions``), each matched upper-cased as ``file.compression``."""
    key = CODEC_OVERRIDES.get(fmt)
    text = options.get(key) if key is not None else None
    return codec if text is None else fold_codec(text)


def format_of_level(options: Mapping[str, str], level: int, default: str) -> str:
    """The format Paimon's key-value writers use for a file of ``level`` (lower-cased as Java's
    ``normalizeFileFormat``)."""
    fmt = _levels(options, FORMAT_PER_LEVEL).get(level)
    return default if fmt is None else fmt.lower()


def compression_of_level(options: Mapping[str, str], level: int, default: str) -> str:
    """The codec Paimon's key-value writers use for a file of ``level``."""
    codec = _levels(options, COMPRESSION_PER_LEVEL).get(level)
    return default if codec is None else fold_codec(codec)


def level_format_and_codec(options: Mapping[str, str], primary_key: bool, level: int, fmt: str,
                           codec: str, *, changelog: bool = False) -> tuple[str, str]:
    """(format, codec) of a new file of ``level`` whose table default is (``fmt``, ``codec``), as
    Paimon's KeyValueFileWriterFactory picks them: ``changelog-file.format`` /
    ``changelog-file.compression`` for changelog files where set (Paimon 1.1 on; Java 0.9 has no
    such keys and writes changelog files as the level's data files), else the level's entry of
    ``file.format.per.level`` / ``file.compression.per.level``, else the table's. Append tables
    (Paimon's append writers) always use the table's."""
    if not primary_key:
        return fmt, codec_for_format(options, fmt, codec)
    level_fmt = format_of_level(options, level, fmt)
    level_codec = compression_of_level(options, level, codec)
    if changelog:
        changelog_fmt = options.get(CHANGELOG_FORMAT)
        changelog_codec = options.get(CHANGELOG_COMPRESSION)
        if changelog_fmt is not None:  # Java's normalizeFileFormat keeps an empty text: no format
            level_fmt = changelog_fmt.lower()
        if changelog_codec is not None:
            level_codec = fold_codec(changelog_codec)
    return level_fmt, codec_for_format(options, level_fmt, level_codec)


def written_formats(options: Mapping[str, str], primary_key: bool, fmt: str,
                    codec: str) -> list[tuple[str, str, str]]:
    """(the options that choose it, format, codec) of every kind of file a writer of the table may
    write: the table's default, each level named by a per-level option, and changelog files of
    each of these levels."""
    override = CODEC_OVERRIDES.get(fmt)
    by = f", {override} = {options[override]!r}" if override and options.get(override) is not None else ""
    out = [(f"option file.compression = {options.get('file.compression', codec)!r} with file.format = {fmt!r}{by}",
            fmt, codec_for_format(options, fmt, codec))]
    if not primary_key:
        return out

    def named(*keys: str) -> str:
        return ", ".join(f"{k} = {options[k]!r}" for k in keys if options.get(k) is not None)

    levels = sorted({*_levels(options, FORMAT_PER_LEVEL), *_levels(options, COMPRESSION_PER_LEVEL)})
    changelog = named(CHANGELOG_FORMAT, CHANGELOG_COMPRESSION)
    for level in [None, *levels]:
        at = _UNMAPPED if level is None else level
        lvl_fmt, lvl_codec = level_format_and_codec(options, True, at, fmt, codec)
        if level is not None:
            out.append((f"option {named(FORMAT_PER_LEVEL, COMPRESSION_PER_LEVEL)} (level {level}: "
                        f"{lvl_fmt!r} files, codec {lvl_codec!r})", lvl_fmt, lvl_codec))
        if changelog:
            cl_fmt, cl_codec = level_format_and_codec(options, True, at, fmt, codec, changelog=True)
            where = "" if level is None else f" at level {level}"
            out.append((f"option {changelog} (changelog files{where}: {cl_fmt!r}, codec {cl_codec!r})",
                        cl_fmt, cl_codec))
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
