"""Registry rows of the data file formats' options (`lake_assets.formats.format_options`).

Paimon hands every ``parquet.*`` / ``orc.*`` / ``avro.*`` key to that format's writer; these rows
are the keys lake_assets honours or safely ignores, with the per-level format and codec maps. Each
refuses only writes and compaction when its value does not parse (reads, expiry, orphan removal,
rollback and tags never depend on them: files describe themselves). Other keys under these
prefixes refuse writes and compaction of the format they belong to. `COLUMN_FORMAT_RULES` are the
per-column Parquet options ``<key>#<column>``. `lake_assets.option_rules` merges them into the
registry.
"""

from __future__ import annotations

import re

from lake_assets.errors import OptionError
from lake_assets.formats.format_options import AVRO_CODECS, AVRO_JAVA_CODECS, level_map_problem, parse_level_map
from lake_assets.option_types import KEY_SLOT, WRITE_OPS, OptionRule
from lake_assets.refusal_actions import remove_option, set_option


def _rules(*rows: OptionRule) -> dict[str, OptionRule]:
    return {r.key: r for r in rows}


# parquet-java's ParquetProperties.WriterVersion.fromString: the short name or the constant's name,
# matched exactly (case-sensitive, untrimmed: 'V1' and ' v1' fail in Java's writer)
_PARQUET_WRITER_VERSIONS = ("v1", "v2", "PARQUET_1_0", "PARQUET_2_0")


def _parquet_writer_version(value: object) -> str | None:
    if value in _PARQUET_WRITER_VERSIONS:
        return None
    return f"one of {', '.join(_PARQUET_WRITER_VERSIONS)}, exactly as parquet-java's WriterVersion.fromString reads it"


_STATS_MODE = re.compile(r"^(none|counts|full|truncate\(\d+\))$", re.IGNORECASE)
STATS_NOTE = ("accepted; lake_assets writes truncate(16) column stats whatever the mode (stats only prune "
              "reads, and every reader takes any mode's stats)")


def stats_mode_problem(v: object) -> str | None:
    """The check of a stats mode (``metadata.stats-mode`` and the keys naming one)."""
    return None if _STATS_MODE.match(str(v).strip()) else "must be none, counts, full or truncate(N)"


def _stats_modes_per_level(v: object) -> str | None:
    try:
        modes = parse_level_map(v, "")
    except OptionError as exc:
        return str(exc).split(": ", 1)[-1]
    bad = [f"{level}:{mode}" for level, mode in modes.items() if stats_mode_problem(mode)]
    return f"level(s) {', '.join(bad)}: a mode must be none, counts, full or truncate(N)" if bad else None


_MAP_NOTE = ("Paimon's map grammar (lake_assets/option_maps.py): entries '<level>:<value>', quotes allowed, a "
             "level an integer given once")

R = OptionRule
FORMAT_RULES: dict[str, OptionRule] = _rules(
    R("file.format.per.level", "string", None, "Data file format per LSM level of primary-key tables "
      "(e.g. '0:avro,3:parquet'); other levels use file.format.", check=level_map_problem, writer_only=True,
      note=f"honoured by writes and compaction (changelog files follow their level, as in Paimon, unless "
      f"changelog-file.format is set); append tables use file.format as Paimon's append writers do. {_MAP_NOTE}; "
      "formats lower-cased"),
    R("file.compression.per.level", "string", None, "Codec of data files per LSM level of primary-key tables "
      "(e.g. '0:lz4,3:zstd'); other levels use file.compression.", check=level_map_problem, writer_only=True,
      note=f"honoured by writes and compaction. {_MAP_NOTE}; codecs matched as file.compression"),
    R("changelog-file.format", "string", None, "Format of changelog files of primary-key tables (Paimon 1.1 "
      "on; unset: the format of the level they are written at).", writer_only=True,
      note="honoured by writes and compaction (Paimon Java 0.9 has no such key and writes changelog files in "
      "their level's format; readers take either, by file extension); a format lake_assets does not write "
      "refuses writes and compaction"),
    R("changelog-file.compression", "string", None, "Codec of changelog files of primary-key tables (Paimon 1.1 "
      "on; unset: the codec of the level they are written at).", writer_only=True,
      note="honoured by writes and compaction (matched as file.compression); a codec the changelog files' format "
      "is not written with refuses writes and compaction"),
    R("changelog-file.stats-mode", "string", None, "Column stats mode of changelog files (Paimon 1.1 on).",
      check=stats_mode_problem, writer_only=True, note=STATS_NOTE),
    R("metadata.stats-mode.per.level", "string", None, "Column stats mode per LSM level (e.g. '0:none') "
      "(Paimon 1.1 on).", check=_stats_modes_per_level, writer_only=True, note=f"{STATS_NOTE}. {_MAP_NOTE}"),
    R("parquet.compression", "string", None, "Codec of every Parquet file, replacing file.compression and "
      "file.compression.per.level (parquet-hadoop's key, read by Paimon's Parquet writer first).", writer_only=True,
      note="honoured (matched as file.compression); a codec Parquet files are not written with refuses writes "
      "and compaction"),
    R("orc.compress", "string", None, "Codec of every ORC file, replacing file.compression and "
      "file.compression.per.level (OrcConf, read by Paimon's ORC writer first).", writer_only=True,
      note="honoured (matched as file.compression); a codec ORC files are not written with refuses writes and "
      "compaction"),
    R("parquet.block.size", "long", None, "Parquet row group size in bytes (parquet-java: 128 MiB).", minimum=1,
      writer_only=True, note="honoured: row groups are cut at this many (Arrow) bytes"),
    R("parquet.page.size", "int", None, "Parquet data page size in bytes (1 MiB).", minimum=1, writer_only=True,
      note="honoured (pyarrow data_page_size)"),
    R("parquet.dictionary.page.size", "int", None, "Parquet dictionary page limit in bytes (1 MiB).", minimum=1,
      writer_only=True, note="honoured (pyarrow dictionary_pagesize_limit)"),
    R("parquet.enable.dictionary", "bool", True, "Whether Parquet columns get dictionary pages.",
      writer_only=True, note="honoured: false writes no dictionary pages; true keeps lake_assets' "
      "per-column choice (dictionaries where values repeat, as parquet-java falls back where they do not)"),
    R("parquet.writer.version", "string", "v1", "Parquet data page version (v1, v2, or the names "
      "PARQUET_1_0, PARQUET_2_0).", check=_parquet_writer_version, supported=("v1", "parquet_1_0"), refuses=WRITE_OPS,
      why="Paimon Java 0.9's Parquet reader fails on the v2 data pages pyarrow writes (checked: "
      "'Unsupported encoding: RLE')",
      action=f"{set_option(KEY_SLOT, 'v1')}: it shapes only new files, and reads are not refused; or write and "
      "compact the table with Paimon Java, whose own writer writes the v2 pages"),
    R("parquet.compression.codec.zstd.level", "int", None, "Zstandard level of Parquet files "
      "(file.compression.zstd-level).", writer_only=True, note="honoured"),
    R("parquet.bloom.filter.enabled", "bool", False, "Bloom filters for every Parquet column "
      "(parquet.bloom.filter.enabled#<column> per column).", writer_only=True,
      note="honoured for top-level columns of flat types (pyarrow bloom_filter_options); nested columns "
      "get none, which readers only lose as a pruning aid"),
    R("parquet.bloom.filter.max.bytes", "int", None, "Largest Parquet bloom filter in bytes.", minimum=1,
      writer_only=True, note="accepted; pyarrow sizes bloom filters by their NDV and FPP only (a filter's "
      "size never changes what a reader reads)"),
    R("orc.stripe.size", "long", None, "ORC stripe size in bytes (64 MiB).", minimum=1, writer_only=True,
      note="honoured (pyarrow stripe_size); lake_assets reads ORC files a stripe at a time, so a streaming "
      "read or compaction holds a whole stripe of each ORC file it reads, whatever read.batch-size says"),
    R("orc.compress.size", "int", None, "ORC compression block size in bytes (256 KiB).", minimum=1,
      writer_only=True, note="honoured (pyarrow compression_block_size), rounded up to a multiple of 64 KiB, "
      "the ORC C++ writer's memory block (chunk sizes never change what a reader reads)"),
    R("orc.row.index.stride", "int", None, "Rows between ORC row index entries (10000).", minimum=1000,
      writer_only=True, note="honoured (pyarrow row_index_stride)"),
    R("orc.bloom.filter.columns", "string", None, "Columns that get ORC bloom filters (comma-separated).",
      writer_only=True, note="honoured (pyarrow bloom_filter_columns)"),
    R("orc.bloom.filter.fpp", "ratio", None, "False positive rate of ORC bloom filters (0.01).",
      writer_only=True, note="honoured (pyarrow bloom_filter_fpp)"),
    R("orc.dictionary.key.threshold", "ratio", None, "Distinct-value share below which ORC strings get a "
      "dictionary (0.8).", writer_only=True, note="honoured (pyarrow dictionary_key_size_threshold)"),
    R("orc.write.batch-size", "int", None, "Rows per ORC write batch (1024).", minimum=1, writer_only=True,
      note="honoured (pyarrow batch_size)"),
    R("orc.compression.zstd.level", "int", None, "Zstandard level of ORC files.", writer_only=True,
      note="accepted; pyarrow's ORC writer has no zstd level (the level only changes the compression ratio)"),
    R("avro.codec", "string", None, "Avro codec of data files (overrides file.compression; Avro's exact, "
      "untrimmed codec name, as its CodecFactory.fromString).", choices=AVRO_CODECS, fold="exact",
      supported=AVRO_JAVA_CODECS, refuses=WRITE_OPS, writer_only=True,
      why="Paimon Java's bundle reads only the null, deflate, snappy and zstandard Avro codecs",
      action=f"{remove_option(KEY_SLOT)}, so that file.compression picks the codec, or set it to null, deflate, "
      "snappy or zstandard the same way: it shapes only new files, and reads are not refused",
      note="honoured"),
)
del R

# Per-column Parquet options ``<key>#<column>`` (parquet-hadoop's ColumnConfigParser), keyed by key.
COLUMN_FORMAT_RULES: dict[str, OptionRule] = _rules(
    OptionRule("parquet.bloom.filter.enabled", "bool", None, "Bloom filter of the column (Parquet).",
               writer_only=True, note="honoured for top-level columns of flat types"),
    OptionRule("parquet.bloom.filter.expected.ndv", "long", None, "Distinct values the column's Parquet bloom "
               "filter is sized for.", minimum=1, writer_only=True, note="honoured"),
    OptionRule("parquet.bloom.filter.fpp", "ratio", None, "False positive rate of the column's Parquet bloom "
               "filter (0.05 for pyarrow).", writer_only=True, note="honoured"),
)
COLUMN_FORMAT_OPTION = re.compile(
    r"^(?P<key>" + "|".join(re.escape(k) for k in COLUMN_FORMAT_RULES) + r")#(?P<field>.+)$"
)
