"""Avro codec of manifests, manifest lists and index manifests (docs/format.md §4).

Converts between the model (`lake_assets.spec.manifest`) and Avro records; the schemas are in
`manifest_schemas`, their resolution in `manifest_records`, the container framing in
`avro_container`. Every function is pure: bytes in, bytes out, no filesystem.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lake_assets.errors import CorruptMetadataError, UnsafePathError
from lake_assets.formats.avro_container import avro_codec, write_container
from lake_assets.formats.avro_encoder import compile_schema
from lake_assets.formats.manifest_schemas import (
    INDEX_MANIFEST_ENTRY_SCHEMA,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    AvroSchema,
    read_records,
)
from lake_assets.paths import check_file_name
from lake_assets.spec.manifest import (
    EMPTY_ROW,
    INDEX_MANIFEST_VERSION,
    MANIFEST_VERSION,
    DataFileMeta,
    DeletionVectorRange,
    FileKind,
    FileSource,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)

__all__ = [
    "avro_codec",
    "decode_index_manifest",
    "decode_manifest_entries",
    "decode_manifest_list",
    "encode_index_manifest",
    "encode_manifest_entries",
    "encode_manifest_list",
]

_ENTRY = AvroSchema(MANIFEST_ENTRY_SCHEMA, MANIFEST_VERSION)
_LIST = AvroSchema(MANIFEST_FILE_META_SCHEMA, MANIFEST_VERSION)
_INDEX = AvroSchema(INDEX_MANIFEST_ENTRY_SCHEMA, INDEX_MANIFEST_VERSION)
# Compiled once: fastavro's generic writer cost ~20 µs per manifest entry (`avro_encoder`).
_ENTRY_ENCODER = compile_schema(MANIFEST_ENTRY_SCHEMA)
_LIST_ENCODER = compile_schema(MANIFEST_FILE_META_SCHEMA)
_INDEX_ENCODER = compile_schema(INDEX_MANIFEST_ENTRY_SCHEMA)


# ----------------------------------------------------------------------------------------- records

_KINDS = {0: FileKind.ADD, 1: FileKind.DELETE}
_SOURCES = {None: None, 0: FileSource.APPEND, 1: FileSource.COMPACT}


def _kind(value: int) -> FileKind:
    kind = _KINDS.get(value)
    if kind is None:
        raise ValueError(f"unknown _KIND {value}")
    return kind


def _source(value: int | None) -> FileSource | None:
    try:
        return _SOURCES[value]
    except KeyError:
        raise ValueError(f"unknown _FILE_SOURCE {value}") from None


def _stats_from(rec: dict[str, Any]) -> SimpleStats:
    mins, maxs, nulls = rec["_MIN_VALUES"], rec["_MAX_VALUES"], rec.get("_NULL_COUNTS")
    if nulls is None:
        return SimpleStats(mins, maxs, None)
    if not nulls and mins == EMPTY_ROW and maxs == EMPTY_ROW:
        return SimpleStats.EMPTY  # shared: most files carry no value stats
    return SimpleStats(mins, maxs, tuple(nulls))


def _stats_to(s: SimpleStats) -> dict[str, Any]:
    return {"_MIN_VALUES": s.min_values, "_MAX_VALUES": s.max_values, "_NULL_COUNTS": s.null_counts}


def _opt_tuple(value: list[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


class _BadValue(ValueError):
    """A stored number no writer produces (a negative size, an impossible level): damage."""


# Paimon's num-levels defaults to 6 (compaction trigger + 1). Readers build one run per level up
# to the highest (Java's Levels too), so a damaged level of 2**30 would allocate gigabytes.
MAX_LEVEL = 1024


def _at_least(value: Any, low: int, field: str, of: str, high: int | None = None) -> Any:
    """``value`` if it is None or an int in ``[low, high]``, else `_BadValue` naming ``field`` of ``of``."""
    if value is not None and (value < low or (high is not None and value > high)):
        bound = f"at least {low}" if high is None else f"from {low} to {high}"
        raise _BadValue(f"{of}: {field} is {value} (must be {bound})")
    return value


def _file_from(f: dict[str, Any]) -> DataFileMeta:
    g = f.get
    # File names become paths under the table's bucket directories: plain names only.
    for extra in f["_EXTRA_FILES"]:
        check_file_name(extra, "an extra file")
    name = check_file_name(f["_FILE_NAME"], "a data file")
    of = f"data file {name}"
    # Sizes, counts, levels and ids become offsets, allocations and row ids: none is negative.
    row_count = _at_least(f["_ROW_COUNT"], 0, "_ROW_COUNT", of)
    _at_least(g("_DELETE_ROW_COUNT"), 0, "_DELETE_ROW_COUNT", of, row_count)
    _at_least(g("_FIRST_ROW_ID"), 0, "_FIRST_ROW_ID", of)
    return DataFileMeta(
        name,
        _at_least(f["_FILE_SIZE"], 0, "_FILE_SIZE", of),
        row_count,
        f["_MIN_KEY"],
        f["_MAX_KEY"],
        _stats_from(f["_KEY_STATS"]),
        _stats_from(f["_VALUE_STATS"]),
        f["_MIN_SEQUENCE_NUMBER"],
        f["_MAX_SEQUENCE_NUMBER"],
        _at_least(f["_SCHEMA_ID"], 0, "_SCHEMA_ID", of),
        _at_least(f["_LEVEL"], 0, "_LEVEL", of, MAX_LEVEL),
        tuple(f["_EXTRA_FILES"]),
        g("_CREATION_TIME"),
        g("_DELETE_ROW_COUNT"),
        g("_EMBEDDED_FILE_INDEX"),
        _source(g("_FILE_SOURCE")),
        _opt_tuple(g("_VALUE_STATS_COLS")),
        g("_EXTERNAL_PATH"),
        g("_FIRST_ROW_ID"),
        _opt_tuple(g("_WRITE_COLS")),
        _opt_tuple(g("_WRITE_COLS_SEQUENCES")),
    )


def _file_to(f: DataFileMeta) -> dict[str, Any]:
    return {
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key,
        "_MAX_KEY": f.max_key,
        "_KEY_STATS": _stats_to(f.key_stats),
        "_VALUE_STATS": _stats_to(f.value_stats),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id,
        "_LEVEL": f.level,
        "_EXTRA_FILES": f.extra_files,
        "_CREATION_TIME": f.creation_time_ms,
        "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_file_index,
        "_FILE_SOURCE": f.file_source,
        "_VALUE_STATS_COLS": f.value_stats_cols,
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": f.write_cols,
        "_WRITE_COLS_SEQUENCES": f.write_cols_sequences,
    }


def _convert(records: list[dict[str, Any]], name: str, fn: Callable[[dict[str, Any]], Any]) -> list[Any]:
    try:
        return [fn(r) for r in records]
    except (UnsafePathError, _BadValue) as exc:
        raise CorruptMetadataError(f"Cannot decode Avro file {name}: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadataError(f"Cannot decode Avro file {name}: bad record: {exc!r}") from exc


# ----------------------------------------------------------------------------------- public codecs


def encode_manifest_entries(
    entries: Sequence[ManifestEntry], codec: str = "zstandard", *, zstd_level: int = 1
) -> bytes:
    """Avro bytes of a manifest holding ``entries`` in order (``codec`` is an Avro codec name)."""
    records = [
        {
            "_VERSION": MANIFEST_VERSION,
            "_KIND": int(e.kind),
            "_PARTITION": e.partition,
            "_BUCKET": e.bucket,
            "_TOTAL_BUCKETS": e.total_buckets,
            "_FILE": _file_to(e.file),
        }
        for e in entries
    ]
    return write_container(_ENTRY.parsed, _ENTRY.json, records, codec, zstd_level, _ENTRY_ENCODER)


def _entry_from(r: dict[str, Any]) -> ManifestEntry:
    return ManifestEntry(
        _kind(r["_KIND"]), r["_PARTITION"], r["_BUCKET"], r["_TOTAL_BUCKETS"], _file_from(r["_FILE"])
    )


def decode_manifest_entries(data: bytes, name: str) -> list[ManifestEntry]:
    """Entries of a manifest file; ``name`` only labels errors (CorruptMetadataError)."""
    records = read_records(data, name, _ENTRY)
    return _convert(records, name, _entry_from)


def encode_manifest_list(
    metas: Sequence[ManifestFileMeta], codec: str = "zstandard", *, zstd_level: int = 1
) -> bytes:
    """Avro bytes of a manifest list (Java's 13 fields)."""
    records = [
        {
            "_VERSION": MANIFEST_VERSION,
            "_FILE_NAME": m.file_name,
            "_FILE_SIZE": m.file_size,
            "_NUM_ADDED_FILES": m.num_added_files,
            "_NUM_DELETED_FILES": m.num_deleted_files,
            "_PARTITION_STATS": _stats_to(m.partition_stats),
            "_SCHEMA_ID": m.schema_id,
            "_MIN_BUCKET": m.min_bucket,
            "_MAX_BUCKET": m.max_bucket,
            "_MIN_LEVEL": m.min_level,
            "_MAX_LEVEL": m.max_level,
            "_MIN_ROW_ID": m.min_row_id,
            "_MAX_ROW_ID": m.max_row_id,
        }
        for m in metas
    ]
    return write_container(_LIST.parsed, _LIST.json, records, codec, zstd_level, _LIST_ENCODER)


def _meta_from(r: dict[str, Any]) -> ManifestFileMeta:
    g = r.get
    return ManifestFileMeta(
        check_file_name(r["_FILE_NAME"], "a manifest"),
        r["_FILE_SIZE"],
        r["_NUM_ADDED_FILES"],
        r["_NUM_DELETED_FILES"],
        _stats_from(r["_PARTITION_STATS"]),
        r["_SCHEMA_ID"],
        g("_MIN_BUCKET"),
        g("_MAX_BUCKET"),
        g("_MIN_LEVEL"),
        g("_MAX_LEVEL"),
        g("_MIN_ROW_ID"),
        g("_MAX_ROW_ID"),
    )


def decode_manifest_list(data: bytes, name: str) -> list[ManifestFileMeta]:
    """Records of a manifest list; pypaimon's extra fields are ignored."""
    records = read_records(data, name, _LIST)
    return _convert(records, name, _meta_from)


def _global_index_to(g: dict[str, Any] | None) -> dict[str, Any] | None:
    if g is None:
        return None
    return {
        "_ROW_RANGE_START": g["row_range_start"],
        "_ROW_RANGE_END": g["row_range_end"],
        "_INDEX_FIELD_ID": g["index_field_id"],
        "_EXTRA_FIELD_IDS": g.get("extra_field_ids"),
        "_INDEX_META": g.get("index_meta"),
        "_SOURCE_META": g.get("source_meta"),
    }


def _global_index_from(r: dict[str, Any] | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "row_range_start": r["_ROW_RANGE_START"],
        "row_range_end": r["_ROW_RANGE_END"],
        "index_field_id": r["_INDEX_FIELD_ID"],
        "extra_field_ids": _opt_tuple(r.get("_EXTRA_FIELD_IDS")),
        "index_meta": r.get("_INDEX_META"),
        "source_meta": r.get("_SOURCE_META"),
    }


def encode_index_manifest(
    entries: Sequence[IndexManifestEntry], codec: str = "zstandard", *, zstd_level: int = 1
) -> bytes:
    """Avro bytes of an index manifest (``_VERSION`` 1)."""
    records = [
        {
            "_VERSION": INDEX_MANIFEST_VERSION,
            "_KIND": int(e.kind),
            "_PARTITION": e.partition,
            "_BUCKET": e.bucket,
            "_INDEX_TYPE": e.index_type,
            "_FILE_NAME": e.file_name,
            "_FILE_SIZE": e.file_size,
            "_ROW_COUNT": e.row_count,
            "_DELETIONS_VECTORS_RANGES": None
            if e.dv_ranges is None
            else [{"f0": d[0], "f1": d[1], "f2": d[2], "_CARDINALITY": d[3]} for d in e.dv_ranges],
            "_EXTERNAL_PATH": e.external_path,
            "_GLOBAL_INDEX": _global_index_to(e.global_index),
        }
        for e in entries
    ]
    return write_container(_INDEX.parsed, _INDEX.json, records, codec, zstd_level, _INDEX_ENCODER)


def _dv_range_from(d: dict[str, Any], of: str) -> DeletionVectorRange:
    # the data file name is a key, never a path, but only a plain name can match a data file
    data_file = check_file_name(d["f0"], f"a deletion vector's data file in {of}")
    at = f"{of}, deletion vector of {data_file}"
    return DeletionVectorRange(data_file, _at_least(d["f1"], 0, "offset", at), _at_least(d["f2"], 0, "length", at),
                               _at_least(d.get("_CARDINALITY"), 0, "cardinality", at))


def _index_entry_from(r: dict[str, Any]) -> IndexManifestEntry:
    ranges = r.get("_DELETIONS_VECTORS_RANGES")
    name = check_file_name(r["_FILE_NAME"], "an index file")
    of = f"index file {name}"
    return IndexManifestEntry(
        _kind(r["_KIND"]),
        r["_PARTITION"],
        r["_BUCKET"],
        r["_INDEX_TYPE"],
        name,
        _at_least(r["_FILE_SIZE"], 0, "_FILE_SIZE", of),
        _at_least(r["_ROW_COUNT"], 0, "_ROW_COUNT", of),
        None
        if ranges is None
        # Java declares nullable elements; a null element carries nothing, so it is dropped.
        else tuple(_dv_range_from(d, of) for d in ranges if d),
        r.get("_EXTERNAL_PATH"),
        _global_index_from(r.get("_GLOBAL_INDEX")),
    )


def decode_index_manifest(data: bytes, name: str) -> list[IndexManifestEntry]:
    """Entries of an index manifest file."""
    records = read_records(data, name, _INDEX)
    return _convert(records, name, _index_entry_from)


