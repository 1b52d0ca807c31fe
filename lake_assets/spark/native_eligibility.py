"""Which tables and inputs Spark's own Parquet writer may write natively (`native_write`).

The native write produces exactly what the Python path (`write_table`) produces for a
``deduplicate`` primary-key table with fixed buckets: one level-0 file per (partition, bucket),
one ``+I`` record per key (the last version by input order), sorted by key, with sequence numbers
above every existing one. Anything else a table carries - another merge engine, a changelog
producer, deletion vectors, ``sequence.field``, row kinds, other file formats or Parquet writer
options - needs the core's writer, and so does an input whose columns do not already have the
table's Spark types (the Python path checks and casts them). `native_refusals` names every
reason; an empty list means the native write honours the table exactly.

The option check is a whitelist: an option the native path does not know to be harmless refuses
it by name (a new option never gets ignored silently).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lake_assets.formats.format_options import FILE_CODECS
from lake_assets.lsm.merge_engine.names import DEFAULT_MERGE_ENGINE
from lake_assets.option_types import java_fold_choice
from lake_assets.spec.data_types import (
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)
from lake_assets.table import Table

# Options whose value the native write honours as the Python path does, or which only concern
# other operations (commit-time expiry and tagging run in the committer both paths share;
# compaction, reads, streaming, the Python writer's buffers).
_HARMLESS_PREFIXES = (
    "snapshot.", "changelog.num-retained.", "changelog.time-retained", "tag.", "partition.expiration",
    "partition.timestamp-", "consumer", "manifest.", "compaction.", "num-sorted-run.", "read.", "scan.",
    "commit.", "write-buffer", "local-sort.", "spill-compression", "orc.", "avro.", "dynamic-bucket.",
    "postpone.", "full-compaction.", "deletion-vectors.bitmap64", "deletion-vectors.index-file.",
    "deletion-vectors.merge-on-read", "changelog-producer.row-deduplicate", "lookup.",
)
_HARMLESS = frozenset({
    "bucket", "bucket-key", "path", "type", "file.format", "file.compression", "file.compression.zstd-level",
    "merge-engine", "changelog-producer", "deletion-vectors.enabled", "metadata.stats-mode", "data-file.prefix",
    "changelog-file.prefix", "partition.default-name", "partition.legacy-name", "dynamic-partition-overwrite",
    "write-only", "page-size", "num-levels", "streaming-read-overwrite",
    "bucket-append-ordered", "file.suffix.include.compression",
    # the native write's bucket column is the table's function (native_write._bucket, bucket_column)
    "bucket-function.type",
    # the native write writes +I records only: options about deletes change nothing in them
    "ignore-delete", "deduplicate.ignore-delete",
})
_FIELD_STATS = re.compile(r"fields\..+\.stats-mode")
# Paimon codec -> Spark's Parquet `compression` option (same Parquet codec in the file).
SPARK_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "none": "none", "uncompressed": "none"}
# Types whose Parquet form Spark's writer gives as Java does (timestamps: INT64 microseconds).
_VALUE_TYPES = (BooleanType, TinyIntType, SmallIntType, IntType, BigIntType, FloatType, DoubleType, DecimalType,
                CharType, VarCharType, BinaryType, VarBinaryType, DateType, TimestampType, LocalZonedTimestampType)
# Key and partition types whose Spark equality and order are Paimon's (floats: Spark normalises
# -0.0 and NaN when grouping; binary: not worth the risk of another byte order).
_KEY_TYPES = (BooleanType, TinyIntType, SmallIntType, IntType, BigIntType, DecimalType, CharType, VarCharType,
              DateType, TimestampType, LocalZonedTimestampType)


def _type_refusal(name: str, t: DataType, role: str) -> str | None:
    allowed = _KEY_TYPES if role != "value" else _VALUE_TYPES
    if not isinstance(t, allowed):
        return f"{role} column {name!r} has type {t} (not written natively)"
    if isinstance(t, (TimestampType, LocalZonedTimestampType)) and t.precision != 6:
        return f"{role} column {name!r} is a timestamp of precision {t.precision} (Spark writes microseconds only)"
    return None


def option_refusals(options: Mapping[str, str]) -> list[str]:
    """Options of a table the native write cannot honour, each named with its value."""
    out = []
    for key, raw in sorted(options.items()):
        value = str(raw).strip().lower()
        if key == "merge-engine" and value != DEFAULT_MERGE_ENGINE:
            out.append(f"merge-engine = {raw} (needs the core's merge function)")
        elif key == "changelog-producer" and value != "none":
            out.append(f"changelog-producer = {raw}")
        elif key == "deletion-vectors.enabled" and value != "false":
            out.append("deletion-vectors.enabled = true")
        elif key == "file.format" and str(raw).lower() != "parquet":  # Paimon's match: untrimmed
            out.append(f"file.format = {raw}")
        elif key == "file.compression" and java_fold_choice(str(raw), FILE_CODECS, "upper") not in SPARK_CODECS:
            out.append(f"file.compression = {raw} (no Spark Parquet codec of that name)")
        elif key not in _HARMLESS and not key.startswith(_HARMLESS_PREFIXES) and not _FIELD_STATS.fullmatch(key):
            out.append(f"option {key} = {raw}")
    return out


def native_refusals(table: Table, input_types: Mapping[str, object] | None = None) -> list[str]:
    """Why `write_table_native` must leave ``table`` (and an input with these Spark column types,
    by name) to the Python path; empty when it writes them natively.

    ``input_types`` maps column names to Spark ``DataType`` objects (``df.schema``); None skips
    the input check.
    """
    schema = table.schema
    out: list[str] = []
    if not schema.primary_keys:
        out.append("an append table (no primary key)")
    if schema.core_options.bucket <= 0:
        out.append(f"bucket = {schema.core_options.bucket} (dynamic or postpone buckets)")
    if schema.primary_keys and not schema.trimmed_primary_keys:
        out.append("the primary key is the partition key")
    out += option_refusals(schema.options)
    filled = [f.name for f in schema.fields if f.default_value is not None]
    if filled:  # the core's conform fills them (ops.default_values.WriteDefaults)
        out.append(f"write-time default values of columns {filled}")
    keys = set(schema.primary_keys)
    for f in schema.fields:
        role = "partition" if f.name in schema.partition_keys else "key" if f.name in keys else "value"
        why = _type_refusal(f.name, f.type, role)
        if why:
            out.append(why)
    if input_types is not None and not out:
        out += _input_refusals(table, input_types)
    return out


def _input_refusals(table: Table, input_types: Mapping[str, object]) -> list[str]:
    """The input must hold exactly the table's columns with the table's Spark types."""
    from lake_assets.spark.schema import spark_schema

    expected = {f.name: f.dataType for f in spark_schema(table.arrow_schema).fields}
    if set(input_types) != set(expected):
        return [f"the input's columns {sorted(input_types)} are not the table's {sorted(expected)}"]
    return [f"input column {name!r} is {input_types[name]}, the table's type is {t}"
            for name, t in expected.items() if input_types[name] != t]
