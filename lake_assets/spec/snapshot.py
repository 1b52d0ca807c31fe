"""Snapshot files (`snapshot/snapshot-<id>`), tag files and consumer files (JSON)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, fields, replace
from enum import StrEnum
from typing import Any

from lake_assets.errors import CorruptMetadataError, UnsafePathError
from lake_assets.paths import check_file_name

SNAPSHOT_VERSION = 3
BATCH_COMMIT_IDENTIFIER = 2**63 - 1  # Java's Long.MAX_VALUE, what batch jobs commit with


class CommitKind(StrEnum):
    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


# (python attribute, JSON key) in the order Java writes them.
_JSON_FIELDS: tuple[tuple[str, str], ...] = (
    ("version", "version"),
    ("uuid", "uuid"),
    ("id", "id"),
    ("schema_id", "schemaId"),
    ("base_manifest_list", "baseManifestList"),
    ("base_manifest_list_size", "baseManifestListSize"),
    ("delta_manifest_list", "deltaManifestList"),
    ("delta_manifest_list_size", "deltaManifestListSize"),
    ("changelog_manifest_list", "changelogManifestList"),
    ("changelog_manifest_list_size", "changelogManifestListSize"),
    ("index_manifest", "indexManifest"),
    ("commit_user", "commitUser"),
    ("writer_version", "writerVersion"),
    ("commit_identifier", "commitIdentifier"),
    ("commit_kind", "commitKind"),
    ("time_millis", "timeMillis"),
    ("log_offsets", "logOffsets"),
    ("total_record_count", "totalRecordCount"),
    ("delta_record_count", "deltaRecordCount"),
    ("changelog_record_count", "changelogRecordCount"),
    ("watermark", "watermark"),
    ("statistics", "statistics"),
    ("properties", "properties"),
    ("next_row_id", "nextRowId"),
    ("operation", "operation"),
)
# Fields naming files of the table (manifest lists, the index manifest, statistics).
_FILE_NAME_FIELDS = ("base_manifest_list", "delta_manifest_list", "changelog_manifest_list", "index_manifest",
                     "statistics")
_OPTIONAL_INT_FIELDS = ("base_manifest_list_size", "delta_manifest_list_size", "changelog_manifest_list_size",
                        "total_record_count", "delta_record_count", "changelog_record_count", "watermark",
                        "next_row_id")
_REQUIRED = {"id", "schema_id", "base_manifest_list", "delta_manifest_list", "commit_user",
             "commit_identifier", "commit_kind", "time_millis"}


def _log_offsets(value: Any) -> dict[str, int]:
    """Java's ``Map<Integer, Long>`` of log offsets by bucket, as JSON writes it (decimal keys)."""
    if not isinstance(value, dict):
        raise TypeError("logOffsets must be an object")
    out: dict[str, int] = {}
    for bucket, offset in value.items():
        if not (isinstance(bucket, str) and re.fullmatch(r"-?[0-9]+", bucket)) or isinstance(offset, bool) \
                or not isinstance(offset, int):
            raise TypeError(f"logOffsets must map bucket numbers to offsets, got {bucket!r}: {offset!r}")
        out[str(int(bucket))] = offset
    return out


@dataclass(frozen=True)
class Snapshot:
    """One committed version of a table."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int | None = None
    delta_record_count: int | None = None
    changelog_manifest_list: str | None = None
    changelog_record_count: int | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = None
    next_row_id: int | None = None
    operation: str | None = None
    writer_version: str | None = None
    uuid: str | None = None
    # The log system's offsets by bucket (keys are bucket numbers in decimal, as Jackson writes
    # Java's Map<Integer, Long>). Paimon 0.9 to 1.3 write the field (``{}`` without a log system)
    # and every commit carries the latest snapshot's forward; Paimon after 1.3 dropped the log
    # system and ignores the field, so writing it keeps our snapshots like theirs for both.
    log_offsets: dict[str, int] | None = None
    version: int = SNAPSHOT_VERSION

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        out: dict[str, Any] = {}
        for attr, key in _JSON_FIELDS:
            v = values[attr]
            if v is None:
                continue  # Java omits null optional fields
            out[key] = str(v) if attr == "commit_kind" else v
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, d: dict[str, Any], name: str = "snapshot") -> Snapshot:
        kwargs: dict[str, Any] = {}
        known = {f.name for f in fields(cls)}
        for attr, key in _JSON_FIELDS:
            if key in d and d[key] is not None and attr in known:
                kwargs[attr] = d[key]
        missing = _REQUIRED - kwargs.keys()
        if missing:
            raise CorruptMetadataError(f"Snapshot file {name} is corrupt: missing {sorted(missing)}")
        try:
            kwargs["commit_kind"] = CommitKind(kwargs["commit_kind"])
            for attr in ("id", "schema_id", "commit_identifier", "time_millis"):
                kwargs[attr] = int(kwargs[attr])
            if not isinstance(kwargs["base_manifest_list"], str) or not isinstance(
                kwargs["delta_manifest_list"], str
            ):
                raise TypeError("manifest list names must be strings")
            if kwargs.get("properties") is not None and not isinstance(kwargs["properties"], dict):
                raise TypeError("properties must be an object")
            # sizes, counts and ids feed arithmetic and comparisons (nextRowId gives out row ids)
            for attr in _OPTIONAL_INT_FIELDS:
                value = kwargs.get(attr)
                if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                    raise TypeError(f"{dict(_JSON_FIELDS)[attr]} must be an integer, got {value!r:.40}")
            if kwargs.get("log_offsets") is not None:
                kwargs["log_offsets"] = _log_offsets(kwargs["log_offsets"])
            # Every name here becomes a path under the table: only plain file names (no `..`).
            for attr in _FILE_NAME_FIELDS:
                if kwargs.get(attr) is not None:
                    check_file_name(kwargs[attr], f"{attr} of snapshot file {name}")
        except (ValueError, TypeError, UnsafePathError) as exc:
            raise CorruptMetadataError(f"Snapshot file {name} is corrupt: {exc}") from exc
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str | bytes, name: str = "snapshot") -> Snapshot:
        try:
            d = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptMetadataError(f"Snapshot file {name} is not valid JSON: {exc}") from exc
        if not isinstance(d, dict):
            raise CorruptMetadataError(f"Snapshot file {name} is corrupt: not a JSON object")
        return cls.from_dict(d, name)

    def with_id(self, snapshot_id: int) -> Snapshot:
        return replace(self, id=snapshot_id)


@dataclass(frozen=True)
class Tag:
    """A named, retained snapshot: the snapshot JSON plus creation time and retention."""

    name: str
    snapshot: Snapshot
    create_time: list[int] | None = None
    time_retained_s: float | None = None

    def to_json(self) -> str:
        d = self.snapshot.to_dict()
        if self.create_time is not None:
            d["tagCreateTime"] = self.create_time
        if self.time_retained_s is not None:
            d["tagTimeRetained"] = self.time_retained_s
        return json.dumps(d, indent=2)

    @classmethod
    def from_json(cls, name: str, text: str | bytes) -> Tag:
        try:
            d = json.loads(text)
        except ValueError as exc:
            raise CorruptMetadataError(f"Tag file tag-{name} is not valid JSON: {exc}") from exc
        if not isinstance(d, dict):
            raise CorruptMetadataError(f"Tag file tag-{name} is corrupt: not a JSON object")
        return cls(
            name=name,
            snapshot=Snapshot.from_dict(d, f"tag-{name}"),
            create_time=d.get("tagCreateTime"),
            time_retained_s=d.get("tagTimeRetained"),
        )


# The consumer-file field of a writer lease's end (lake_assets's own; other engines ignore it)
LEASE_FIELD = "lakeAssetsLeaseUntil"


@dataclass(frozen=True)
class Consumer:
    """A reader's saved position: the next snapshot it will read. ``lease_until_ms`` (epoch ms,
    field `LEASE_FIELD`): the position of a writer's lease (ops/writer_lease.py), which holds only
    until then; Paimon's ``Consumer`` ignores the field (``@JsonIgnoreProperties(ignoreUnknown)``)."""

    next_snapshot: int
    lease_until_ms: int | None = None

    def to_json(self) -> str:
        doc = {"nextSnapshot": self.next_snapshot}
        if self.lease_until_ms is not None:
            doc[LEASE_FIELD] = self.lease_until_ms
        return json.dumps(doc)

    @property
    def is_writer_lease(self) -> bool:
        """Whether this is a long-lived writer's lease (it carries `LEASE_FIELD`), not a reader's
        position. Both pin snapshots alike for Paimon's engines, which list both as consumers."""
        return self.lease_until_ms is not None

    def lapsed(self, now_ms: int) -> bool:
        """Whether this is a lease that ran out before ``now_ms`` (a reader's position never does)."""
        return self.lease_until_ms is not None and self.lease_until_ms < now_ms

    @classmethod
    def from_json(cls, text: str | bytes, name: str = "consumer") -> Consumer:
        """Read a consumer file as Paimon's ``Consumer.fromJson`` (Jackson, a ``long``) reads it:
        ``nextSnapshot`` an integer, a float truncated toward zero, or a string of (Unicode) digits; null or
        missing is 0 (a position that holds every snapshot). What Java refuses - a boolean, a value
        outside a long, other strings, arrays, objects - raises `CorruptMetadataError` naming the
        file and the field (Python's ``int()`` took ``true`` as 1 and any size). Unlike Java, text
        after the object is refused too: a torn overwrite, whose position cannot be trusted."""
        try:
            d = json.loads(text)
            if not isinstance(d, dict):
                raise TypeError(f"not a JSON object: {d!r:.40}")
            nxt = _java_long(d.get("nextSnapshot"), "nextSnapshot")
            lease = d.get(LEASE_FIELD)  # our own field, written as a JSON integer only
            if lease is not None and not (isinstance(lease, int) and not isinstance(lease, bool)
                                          and _LONG_MIN <= lease <= _LONG_MAX):
                raise TypeError(f"{LEASE_FIELD} must be an integer (epoch milliseconds), got {lease!r:.40}")
        except (ValueError, TypeError, RecursionError) as exc:
            raise CorruptMetadataError(f"Consumer file {name} is corrupt: {exc}") from exc
        return cls(nxt, lease)


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_JAVA_LONG_TEXT = re.compile(r"[+-]?\d+")  # Unicode decimal digits, as Long.parseLong


def _java_long(value: object, field: str) -> int:
    """``value`` as Jackson's coercion to a Java ``long`` reads it (see `Consumer.from_json`)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise TypeError(f"{field} must be an integer, got {value!r}")
    if isinstance(value, float):
        if value != value or not -(2.0**63) <= value < 2.0**63:  # NaN (json.loads takes it), out of range
            raise ValueError(f"{field} is {value!r}, outside a long")
        value = int(value)  # toward zero, as Jackson's ACCEPT_FLOAT_AS_INT
    elif isinstance(value, str):
        text = value.strip()  # Jackson trims; int() would also take '5_0'
        if not _JAVA_LONG_TEXT.fullmatch(text):
            raise ValueError(f"{field} must be an integer, got the string {value!r:.40}")
        value = int(text)
    if not isinstance(value, int):
        raise TypeError(f"{field} must be an integer, got {type(value).__name__} {value!r:.40}")
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f"{field} is {value}, outside a long")
    return value

