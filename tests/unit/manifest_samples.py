"""Sample manifest values of the manifest codec's tests: data files, entries, manifest metas and
index entries, and raw Avro files written around the codec (older writers, plain schemas)."""

from __future__ import annotations

import copy
import datetime as dt
import io
from typing import Any

import fastavro

from lake_assets.formats.manifest_schemas import (
    MANIFEST_ENTRY_SCHEMA,
)
from lake_assets.spec.manifest import (
    EMPTY_ROW,
    DataFileMeta,
    DeletionVectorRange,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)

CODECS = ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"]
JAVA_RECORD = "org.apache.paimon.avro.generated.record"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

# ----------------------------------------------------------------------------------- sample values


def as_list(t: tuple[Any, ...] | None) -> list[Any] | None:
    return None if t is None else list(t)


def sample_stats(n: int) -> SimpleStats:
    return SimpleStats(
        bytes([0, 0, 0, n]) + bytes(8 * (n + 1)), bytes([0, 0, 0, n]) + bytes(8 * (n + 2)), (0,) * n
    )


def sample_file(i: int = 0, **kw: Any) -> DataFileMeta:
    base: dict[str, Any] = {
        "file_name": f"data-{i}.parquet",
        "file_size": 1000 + i,
        "row_count": 10 + i,
        "min_key": EMPTY_ROW,
        "max_key": EMPTY_ROW,
        "key_stats": sample_stats(1),
        "value_stats": SimpleStats.EMPTY,
        "min_sequence_number": i,
        "max_sequence_number": i + 9,
        "schema_id": 0,
        "level": 0,
        "extra_files": (),
        "creation_time_ms": 1_700_000_000_123 + i,
        "delete_row_count": 0,
        "embedded_file_index": None,
        "file_source": 0,
        "value_stats_cols": (),
        "external_path": None,
        "first_row_id": None,
        "write_cols": None,
        "write_cols_sequences": None,
    }
    base.update(kw)
    return DataFileMeta(**base)


def sample_entry(i: int = 0, kind: FileKind = FileKind.ADD, bucket: int = 0, **kw: Any) -> ManifestEntry:
    return ManifestEntry(kind, EMPTY_ROW, bucket, 2, sample_file(i, **kw))


def sample_meta(i: int = 0) -> ManifestFileMeta:
    return ManifestFileMeta(f"manifest-{i}", 2000 + i, 3, 1, sample_stats(1), 0, 0, 1, 0, 5, None, None)


def sample_index_entries() -> list[IndexManifestEntry]:
    return [
        IndexManifestEntry(FileKind.ADD, EMPTY_ROW, 0, "HASH", "index-a-0", 40, 10),
        IndexManifestEntry(
            FileKind.DELETE,
            EMPTY_ROW,
            1,
            "DELETION_VECTORS",
            "index-b-0",
            77,
            2,
            (
                DeletionVectorRange("data-1.parquet", 1, 30, 3),
                DeletionVectorRange("data-2.parquet", 31, 40, None),
            ),
            "s3://bucket/ext/index-b-0",
        ),
        IndexManifestEntry(
            FileKind.ADD,
            EMPTY_ROW,
            0,
            "btree",
            "index-c-0",
            500,
            100,
            None,
            None,
            {
                "row_range_start": 0,
                "row_range_end": 99,
                "index_field_id": 3,
                "extra_field_ids": (4, 5),
                "index_meta": b"\x01\x02",
                "source_meta": None,
            },
        ),
    ]


def raw_avro(schema: Any, records: list[Any], codec: str = "null") -> bytes:
    """A container written by plain fastavro with an arbitrary writer schema."""
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
    return buf.getvalue()


def raw_entry_record(e: ManifestEntry, version: int = 2) -> dict[str, Any]:
    f = e.file

    def stats(s: SimpleStats) -> dict[str, Any]:
        return {
            "_MIN_VALUES": s.min_values,
            "_MAX_VALUES": s.max_values,
            "_NULL_COUNTS": as_list(s.null_counts),
        }

    return {
        "_VERSION": version,
        "_KIND": int(e.kind),
        "_PARTITION": e.partition,
        "_BUCKET": e.bucket,
        "_TOTAL_BUCKETS": e.total_buckets,
        "_FILE": {
            "_FILE_NAME": f.file_name,
            "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count,
            "_MIN_KEY": f.min_key,
            "_MAX_KEY": f.max_key,
            "_KEY_STATS": stats(f.key_stats),
            "_VALUE_STATS": stats(f.value_stats),
            "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
            "_SCHEMA_ID": f.schema_id,
            "_LEVEL": f.level,
            "_EXTRA_FILES": list(f.extra_files),
            "_CREATION_TIME": f.creation_time_ms,
            "_DELETE_ROW_COUNT": f.delete_row_count,
            "_EMBEDDED_FILE_INDEX": f.embedded_file_index,
            "_FILE_SOURCE": f.file_source,
            "_VALUE_STATS_COLS": as_list(f.value_stats_cols),
            "_EXTERNAL_PATH": f.external_path,
            "_FIRST_ROW_ID": f.first_row_id,
            "_WRITE_COLS": as_list(f.write_cols),
            "_WRITE_COLS_SEQUENCES": as_list(f.write_cols_sequences),
        },
    }


def plain_entry_schema() -> dict[str, Any]:
    """MANIFEST_ENTRY_SCHEMA without the timestamp logical type (so fastavro takes raw ints)."""
    s = copy.deepcopy(MANIFEST_ENTRY_SCHEMA)
    for f in s["fields"][5]["type"]["fields"]:
        if f["name"] == "_CREATION_TIME":
            f["type"] = ["null", "long"]
    return s
