"""Manifest model: manifest lists, manifests and index manifests (docs/format.md §4).

Serialized BinaryRows (partition, min/max key, stats rows) stay opaque ``bytes`` here; another module
decodes them. The Avro codec is `lake_assets.formats.manifest_codec`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any, ClassVar, NamedTuple

__all__ = [
    "EMPTY_ROW",
    "INDEX_MANIFEST_VERSION",
    "MANIFEST_VERSION",
    "DataFileMeta",
    "DeletionVectorRange",
    "EntryIdentifier",
    "FileKind",
    "FileSource",
    "IndexManifestEntry",
    "ManifestEntry",
    "ManifestFileMeta",
    "SimpleStats",
    "manifest_file_meta_for",
    "summarize_entries",
]

#: Serialized BinaryRow of arity 0: 4-byte big-endian arity 0 plus an 8-byte null bitset.
EMPTY_ROW = bytes(12)

MANIFEST_VERSION = 2
INDEX_MANIFEST_VERSION = 1


# ---------------------------------------------------------------------------------------------- model


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Min/max rows and per-column null counts (§4.5); rows are serialized BinaryRows."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    EMPTY: ClassVar[SimpleStats]


SimpleStats.EMPTY = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


class FileKind(IntEnum):
    """Kind of a manifest or index manifest entry."""

    ADD = 0
    DELETE = 1


class FileSource(IntEnum):
    """Where a data file came from (``_FILE_SOURCE``): a writer's output or a compaction's."""

    APPEND = 0
    COMPACT = 1


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """One data file as described by the ``_FILE`` record (§4.4).

    ``creation_time_ms`` is the writer's local wall-clock time as epoch millis (as if UTC).
    """

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time_ms: int | None = None
    delete_row_count: int | None = None
    embedded_file_index: bytes | None = None
    file_source: FileSource | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    def upgrade(self, level: int) -> DataFileMeta:
        """The same file at another LSM level (an upgrade without rewrite)."""
        return replace(self, level=level)


class EntryIdentifier(NamedTuple):
    """Identity of a manifest entry (§4.3): a DELETE cancels the ADD with the same identity."""

    partition: bytes
    bucket: int
    level: int
    file_name: str
    extra_files: tuple[str, ...]
    embedded_file_index: bytes | None
    external_path: str | None


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One ADD or DELETE of a data file in a manifest (§4.3)."""

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def identifier(self) -> EntryIdentifier:
        """Hashable identity; the level is part of it, so upgrades are DELETE + ADD."""
        f = self.file
        return EntryIdentifier(
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_file_index,
            f.external_path,
        )


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One manifest file as listed in a manifest list (§4.2)."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None
    max_bucket: int | None
    min_level: int | None
    max_level: int | None
    min_row_id: int | None = None
    max_row_id: int | None = None


class DeletionVectorRange(NamedTuple):
    """Where one data file's deletion vector sits inside a deletion-vector index file."""

    data_file: str
    offset: int
    length: int
    cardinality: int | None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    """One index file of an index manifest (§4.6).

    ``global_index`` uses snake_case keys: ``row_range_start``, ``row_range_end``, ``index_field_id``,
    ``extra_field_ids`` (tuple or None), ``index_meta`` and ``source_meta`` (bytes or None).
    """

    kind: FileKind
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorRange, ...] | None = None
    external_path: str | None = None
    global_index: dict[str, Any] | None = None


# -------------------------------------------------------------------------------------- summaries


def summarize_entries(entries: Iterable[ManifestEntry]) -> dict[str, int]:
    """Counts and ranges of one manifest's entries, keyed like ManifestFileMeta's fields.

    Keys: num_added_files, num_deleted_files, schema_id (max), min_bucket, max_bucket, min_level,
    max_level, min_row_id, max_row_id. Partition stats need BinaryRow decoding and are computed by the caller.
    """
    added = deleted = 0
    schema_id = min_bucket = max_bucket = min_level = max_level = None
    # row ids (row-tracking tables): known only if every entry's file has a first row id, as in
    # Java's ManifestAvroWriter
    min_row_id: int | None = None
    max_row_id: int | None = None
    row_ids_known = True
    for e in entries:
        first = e.file.first_row_id
        if first is None:
            row_ids_known = False
        elif row_ids_known:
            last = first + e.file.row_count - 1
            min_row_id = first if min_row_id is None else min(min_row_id, first)
            max_row_id = last if max_row_id is None else max(max_row_id, last)
        if e.kind == FileKind.ADD:
            added += 1
        else:
            deleted += 1
        f = e.file
        if schema_id is None:
            schema_id, min_bucket, max_bucket, min_level, max_level = (
                f.schema_id, e.bucket, e.bucket, f.level, f.level,
            )  # fmt: skip
            continue
        schema_id = max(schema_id, f.schema_id)
        min_bucket = min(min_bucket, e.bucket)  # type: ignore[type-var]
        max_bucket = max(max_bucket, e.bucket)  # type: ignore[type-var]
        min_level = min(min_level, f.level)  # type: ignore[type-var]
        max_level = max(max_level, f.level)  # type: ignore[type-var]
    if schema_id is None:
        raise ValueError("Cannot summarize a manifest without entries")
    return {
        "num_added_files": added,
        "num_deleted_files": deleted,
        "schema_id": schema_id,
        "min_bucket": min_bucket,  # type: ignore[dict-item]
        "max_bucket": max_bucket,  # type: ignore[dict-item]
        "min_level": min_level,  # type: ignore[dict-item]
        "max_level": max_level,  # type: ignore[dict-item]
        "min_row_id": min_row_id if row_ids_known else None,  # type: ignore[dict-item]
        "max_row_id": max_row_id if row_ids_known else None,  # type: ignore[dict-item]
    }


def manifest_file_meta_for(
    name: str, size: int, entries: Iterable[ManifestEntry], partition_stats: SimpleStats
) -> ManifestFileMeta:
    """The manifest-list record of a written manifest file."""
    return ManifestFileMeta(
        file_name=name, file_size=size, partition_stats=partition_stats, **summarize_entries(entries)
    )
