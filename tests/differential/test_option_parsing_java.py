"""Edge texts of option values parsed by Paimon Java 0.9's own ``Options.get`` and by us.

Each text is given to Java under a ``CoreOptions`` key of each type (``Integer.parseInt``,
``Long.parseLong``, ``MemorySize.parse``, ``TimeUtils.parseDuration``, the boolean conversion,
``Double.parseDouble``): we accept a text exactly when Java does, with the same value. The rules
over generated strings are tests/property/test_option_parsing_rules.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import LakeError, OptionError
from lake_assets.formats.format_options import avro_codec
from lake_assets.option_types import OptionRule, parse_value
from lake_assets.options import CoreOptions
from lake_assets.refusal import Op, refuse
from lake_assets.spec.schema import TableSchema
from lake_assets.table_support import schema_refusals
from tests.java.oracle import JavaError, PaimonJava

# (our kind, a Paimon 0.9 CoreOptions key of that type)
KEYS = [("int", "num-sorted-run.compaction-trigger"), ("long", "scan.snapshot-id"), ("size", "target-file-size"),
        ("duration", "snapshot.time-retained"), ("bool", "write-only"), ("ratio", "lookup.cache.bloom.filter.fpp")]
TEXTS = [
    "5", "+5", "-5", "0", "007", " 5", "5 ", "\t5", "1_000", "\u0663\u0664", "\U0001d7d9", "\uff15", "", "+", "-",
    "2147483647", "2147483648", "-2147483648", "9223372036854775808", "0x10", "1.0", "5\u00a0",
    "true", "FALSE", "tRuE", " true", "false\n", "fal\u017fe", "yes",
    "10 s", " 10 s ", "10s\t", "10\u00a0s", "10 S", "10 min", "10 mb", "1.5 mb", "10 MB", "\x0b10 kb", "10 kib",
    f"{2**63 // 60} min", f"{2**63 - 1} s", f"{2**63 - 1} ms", f"{2**43} tb",
    "0.5", ".5", "5.", "0.5f", "0.5D", "0x1p-1", "1e-1", "Infinity", "NaN", "inf", "0_5", "\u0660.5", " 0.25 ",
]


def _ours(kind: str, text: str) -> str | None:
    try:
        value = parse_value(OptionRule("k", kind), text)
    except OptionError:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _java(java: PaimonJava, key: str, text: str) -> str | None:
    try:
        res = java.option_value(key, text)
    except JavaError:
        return None
    return res["value"].lower() if res["type"] == "Boolean" else res["value"]


@pytest.mark.parametrize(("kind", "key"), KEYS)
def test_option_texts_parse_as_java(java: PaimonJava, kind: str, key: str) -> None:
    differ = {}
    for text in TEXTS:
        ours, theirs = _ours(kind, text), _java(java, key, text)
        if kind == "ratio" and theirs is not None:
            v = float(theirs)
            theirs = str(v) if 0.0 <= v <= 1.0 else None  # a ratio is bounded; Java's key is a Double
        if ours != theirs:
            differ[text] = (ours, theirs)
    assert differ == {}


# Texts of the string options Paimon matches against names: case, padding, a long s (upper-cases to
# S in Java and Python alike), Avro's exact codec names and near misses.
NAME_TEXTS = [
    "parquet", "PARQUET", "Parquet", " parquet", "parquet ", "parquet\n", "orc", "ORC", "Avro", "avro\t", "csv",
    "parqet", "", "zstd", "ZSTD", "Zstd", " zstd", "zstd ", "z\u017ftd", "snappy", "SNAPPY", "\u017fnappy",
    "gzip", "GZIP", "lz4", "LZ4", "lz4_raw", "LZ4_RAW", "uncompressed", "UNCOMPRESSED", "none", "NONE", "None",
    "zlib", "lzo", "LZO", "null", "NULL", "deflate", "Deflate", "zstandard", "Zstandard", "bzip2", "xz",
]


def _accepted(options: dict[str, str]) -> CoreOptions | None:
    """The typed options when a table may carry them and be written (create validation, then the
    refusals of writes), else None."""
    opts = CoreOptions(options)
    try:
        opts.validate()
        refuse("t", Op.WRITE, schema_refusals(TableSchema(0, (), 0, (), ("k",), dict(options))))
    except LakeError:
        return None
    return opts


def test_string_options_match_names_as_java(java: PaimonJava) -> None:
    """Every text we accept means what Paimon 0.9 reads it as; every text Java refuses we refuse.
    (We also refuse a few values Java takes - codecs lake_assets does not write, e.g. ORC's lzo -
    and the spellings Java's own writers cannot write or read, e.g. Parquet none or brotli.)"""
    differ: dict[tuple[str, str], tuple[object, object]] = {}

    def check(what: str, text: str, ours: object, theirs: object) -> None:
        if ours is not None and ours != theirs:
            differ[(what, text)] = (ours, theirs)

    for text in NAME_TEXTS:
        java_reads = java.option_lookups(text)
        ok = {n: None if v.startswith("!") else v.lower() for n, v in java_reads.items() if isinstance(v, str)}
        fmt = _accepted({"file.format": text})
        check("file.format", text, fmt and fmt.raw["file.format"].lower(), ok["format"])
        for table_format in ("parquet", "orc"):
            opts = _accepted({"file.format": table_format, "file.compression": text})
            check(f"file.compression ({table_format})", text, opts and opts.file_compression, ok[table_format])
        opts = _accepted({"file.format": "avro", "file.compression": text})
        check("file.compression (avro)", text, opts and opts.file_compression == "zstd",
              java_reads["avro_zstd"] if opts else None)
        opts = _accepted({"file.format": "avro", "avro.codec": text})
        java_avro = None if java_reads["avro"].startswith("!") else re.split(r"[-\[]", java_reads["avro"])[0]
        check("avro.codec", text, opts and avro_codec(opts.raw, "zstd"), java_avro)
        opts = _accepted({"manifest.compression": text})
        # Java 0.9's Avro writer: zstd in any case, else snappy whatever the text; HEAD: else Avro's
        # exact name - ours (the newer behaviour) must at least agree on which texts are zstd
        check("manifest.compression", text, opts and opts.manifest_compression == "zstd",
              java_reads["avro_zstd"] if opts else None)
        spill = {"ZstdBlockCompressionFactory": "zstd", "Lz4BlockCompressionFactory": "lz4",
                 "AirCompressorFactory": "lzo", "none": "none"}.get(java_reads["spill"])
        opts = _accepted({"spill-compression": text})
        assert (opts and opts.spill_compression) == spill, text  # every spill codec Java has, exactly
    assert differ == {}
    # and the values Java reads case-insensitively are taken as Java takes them
    assert _accepted({"file.format": "PARQUET"}) is not None
    assert _accepted({"file.compression": "\u017fnappy"}).file_compression == "snappy"  # type: ignore[union-attr]
    assert _accepted({"file.compression": " zstd"}) is None


def _codecs(root: Path, fmt: str) -> set[str]:
    import pyarrow.orc as po
    import pyarrow.parquet as pq

    files = [p for p in root.rglob(f"data-*.{fmt}")]
    assert files
    if fmt == "parquet":
        return {pq.ParquetFile(p).metadata.row_group(0).column(0).compression for p in files}
    return {str(po.ORCFile(p).compression) for p in files}


@pytest.mark.parametrize(("fmt", "text", "codec"), [
    ("parquet", "\u017fnappy", "SNAPPY"), ("parquet", "Gzip", "GZIP"), ("orc", "ZSTD", "ZSTD"),
    ("PARQUET", "zstd", "ZSTD"),
])
def test_a_table_both_write_gets_the_codec_java_reads_the_text_as(java: PaimonJava, wh: str, lake: Catalog,
                                                                  fmt: str, text: str, codec: str) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    options = {"bucket": "1", "file.format": fmt, "file.compression": text}
    java.create_table(wh, "db.j", schema, primary_keys=["k"], options=options)
    java.write(wh, "db.j", pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=schema))
    lake.create_table("db.l", schema, primary_keys=["k"], options=options).write_arrow(
        pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=schema))
    root = Path(wh) / "db.db"
    assert _codecs(root / "j", fmt.lower()) == _codecs(root / "l", fmt.lower()) == {codec}
    assert sorted(java.read(wh, "db.l").column("k").to_pylist()) == [1, 2]


@pytest.mark.parametrize(("key", "text"), [("file.compression", " zstd"), ("file.compression", "zstd\t"),
                                           ("file.format", "parquet "), ("spill-compression", "Zstd ")])
def test_a_padded_name_java_cannot_use_is_refused(java: PaimonJava, wh: str, lake: Catalog, key: str,
                                                  text: str) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    with pytest.raises(LakeError, match=re.escape(repr(text))):
        lake.create_table("db.l", schema, primary_keys=["k"], options={"bucket": "1", key: text})
    if key != "spill-compression":  # Java spills only under memory pressure: its failure is not reached here
        with pytest.raises(JavaError):
            java.create_table(wh, "db.j", schema, primary_keys=["k"], options={"bucket": "1", key: text})
            java.write(wh, "db.j", pa.table({"k": [1], "v": ["a"]}, schema=schema))
