"""What a writer hands to the committer: the files it produced per (partition, bucket)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from lake_assets.errors import (
    CorruptMetadataError,
    InvalidCommitMessageError,
    UnsafePathError,
    UnsupportedFeatureError,
)
from lake_assets.formats.manifest_codec import MAX_LEVEL
from lake_assets.paths import check_file_name
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.hash_index import HASH_INDEX
from lake_assets.spec.manifest import DataFileMeta, DeletionVectorRange, FileKind, IndexManifestEntry, SimpleStats

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

_FILE_FIELDS = ("new_files", "compact_before", "compact_after", "new_changelog", "compact_changelog")
_INDEX_FIELDS = ("index_before", "index_after")


@dataclass(frozen=True)
class CommitMessage:
    """Files one writer produced for one (partition, bucket), not yet visible to readers.

    Small and serializable (``to_json``/``from_json``, or pickle) so that distributed writers can
    send them to a single committer.
    """

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    new_changelog: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()
    # The bucket's index files this message replaces and the ones replacing them: a dynamic-bucket
    # writer's new HASH file (ops/dynamic_bucket.py), a compaction's deletion vectors
    # (ops/dv_compact.py); the committer swaps them in the index manifest atomically.
    index_before: tuple[IndexManifestEntry, ...] = ()
    index_after: tuple[IndexManifestEntry, ...] = ()
    # With a HASH change: the writer's view of the partition's hash index, which the commit checks
    # (ops/index_commit.py, hash_index_view).
    hash_index_view: str = ""
    # Of a cross-partition upsert writer (ops/cross_partition.py): the snapshot its key index was
    # bootstrapped from (0: an empty table), which the commit checks for racing writers
    # (ops/key_index_race.py); -1 otherwise. With it, that snapshot's identity (a snapshot id is
    # reused after a rollback): `key_index_race.snapshot_identity`, empty for 0.
    key_index_base: int = -1
    key_index_base_identity: str = ""
    # Of such a writer too: one new data file of each earlier round (`prepare_commit`) of it since
    # its base that was not seen landed; the commit refuses unless each is in the table or in this
    # commit (its key index holds those rounds' placements; ops/key_index_race.py).
    key_index_pending: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Messages cross process boundaries (Spark tasks, JSON, pickle): every one is checked on
        # construction, which `from_json` goes through, and on unpickling (`__setstate__`).
        check_message_shape(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        missing = {f.name for f in fields(self)} - state.keys()
        if missing:
            raise InvalidCommitMessageError(f"Invalid commit message: pickled state lacks {sorted(missing)}")
        check_message_shape(self)

    def is_empty(self) -> bool:
        return not (
            self.new_files or self.compact_before or self.compact_after or self.new_changelog
            or self.compact_changelog or self.index_before or self.index_after
        )

    def all_written_files(self) -> list[DataFileMeta]:
        """Files this message's writer created (what an abort must delete).

        Upgraded files (same name before and after compaction, only the level changes) are not
        new: they stay referenced by the table and must never be deleted on abort.
        """
        upgraded = {f.file_name for f in self.compact_before}
        after = [f for f in self.compact_after if f.file_name not in upgraded]
        return [*self.new_files, *after, *self.new_changelog, *self.compact_changelog]

    def to_json(self) -> str:
        return json.dumps(_encode(asdict(self)))

    @classmethod
    def from_json(cls, text: str) -> CommitMessage:
        """Parse `to_json` output; anything malformed raises `InvalidCommitMessageError`."""
        try:
            d = json.loads(text)
            if not isinstance(d, dict):
                raise TypeError("not a JSON object")
            kwargs: dict[str, Any] = {
                "partition": base64.b64decode(d["partition"], validate=True),
                "bucket": d["bucket"],
                "total_buckets": d["total_buckets"],
            }
            for name in _FILE_FIELDS:
                kwargs[name] = tuple(_file_from_dict(x) for x in d.get(name, []))
            for name in _INDEX_FIELDS:
                kwargs[name] = tuple(_index_from_dict(x) for x in d.get(name, []))
            kwargs["hash_index_view"] = d.get("hash_index_view", "")
            kwargs["key_index_base"] = d.get("key_index_base", -1)
            kwargs["key_index_base_identity"] = d.get("key_index_base_identity", "")
            kwargs["key_index_pending"] = tuple(d.get("key_index_pending", ()))
        except (ValueError, TypeError, KeyError, AttributeError, binascii.Error) as exc:
            raise InvalidCommitMessageError(f"Invalid commit message JSON: {exc!r}") from None
        return cls(**kwargs)

    def validate_for(self, store: FileStore, action: str = "commit to") -> None:
        """Check that this message fits ``table`` (see `validate_messages`)."""
        validate_messages(store, [self], action)


def _bad(msg: str) -> InvalidCommitMessageError:
    return InvalidCommitMessageError(f"Invalid commit message: {msg}")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_file(f: object, where: str) -> None:
    if not isinstance(f, DataFileMeta):
        raise _bad(f"{where} holds {type(f).__name__}, not a DataFileMeta")
    try:
        check_file_name(f.file_name, where)
        if not isinstance(f.extra_files, tuple):
            raise _bad(f"{where}: extra_files of {f.file_name} is not a tuple")
        for x in f.extra_files:
            check_file_name(x, f"extra file of {f.file_name} in {where}")
    except UnsafePathError as exc:
        raise _bad(str(exc)) from None
    if f.external_path is not None:
        raise UnsupportedFeatureError(
            f"Commit message file {f.file_name} has an external path {f.external_path!r}; "
            "external data paths (data-file.external-paths) are not supported"
        )
    for attr in ("file_size", "row_count", "min_sequence_number", "max_sequence_number", "schema_id", "level"):
        v = getattr(f, attr)
        if not _is_int(v) or v < 0:
            raise _bad(f"{where}: file {f.file_name} has {attr} = {v!r} (a non-negative integer is required)")
    # what a manifest decoder refuses as damage must not be committed (manifest_codec._file_from)
    if f.level > MAX_LEVEL:
        raise _bad(f"{where}: file {f.file_name} has level {f.level} (at most {MAX_LEVEL})")
    if f.first_row_id is not None and (not _is_int(f.first_row_id) or f.first_row_id < 0):
        raise _bad(f"{where}: file {f.file_name} has first_row_id = {f.first_row_id!r} (a non-negative integer "
                   "is required)")
    if f.delete_row_count is not None and (not _is_int(f.delete_row_count)
                                           or not 0 <= f.delete_row_count <= f.row_count):
        raise _bad(f"{where}: file {f.file_name} has delete_row_count = {f.delete_row_count!r} (from 0 to its "
                   f"{f.row_count} rows)")
    if f.min_sequence_number > f.max_sequence_number:
        raise _bad(
            f"{where}: file {f.file_name} has min_sequence_number {f.min_sequence_number} "
            f"above max_sequence_number {f.max_sequence_number}"
        )
    if not isinstance(f.min_key, bytes) or not isinstance(f.max_key, bytes):
        raise _bad(f"{where}: file {f.file_name} has keys that are not bytes")
    first = f.first_row_id  # row tracking: the file's ids are first .. first + row_count - 1, BIGINTs
    if first is not None and (not _is_int(first) or first < 0 or first + f.row_count - 1 > 2**63 - 1):
        raise _bad(f"{where}: file {f.file_name} has first_row_id = {first!r} for {f.row_count} rows "
                   "(its row ids must be BIGINTs from 0)")


def _check_index(e: object, where: str, m: CommitMessage) -> None:
    if not isinstance(e, IndexManifestEntry):
        raise _bad(f"{where} holds {type(e).__name__}, not an IndexManifestEntry")
    try:
        check_file_name(e.file_name, where)
    except UnsafePathError as exc:
        raise _bad(str(exc)) from None
    if e.partition != m.partition or e.bucket != m.bucket or e.kind != FileKind.ADD:
        raise _bad(f"{where}: index file {e.file_name} belongs to another bucket or is not an ADD entry")
    if e.external_path is not None:
        raise _bad(f"{where}: index file {e.file_name} has an external path")
    for attr in ("file_size", "row_count"):
        v = getattr(e, attr)
        if not _is_int(v) or v < 0:
            raise _bad(f"{where}: index file {e.file_name} has {attr} = {v!r} (a non-negative integer is required)")
    for r in e.dv_ranges or ():
        if not isinstance(r, DeletionVectorRange) or not all(_is_int(x) and x >= 0 for x in (r.offset, r.length)) \
                or (r.cardinality is not None and (not _is_int(r.cardinality) or r.cardinality < 0)):
            raise _bad(f"{where}: index file {e.file_name} has a deletion-vector range {r!r:.120} that is not "
                       "non-negative integers")
        try:
            check_file_name(r.data_file, f"deletion vector in {where}")
        except UnsafePathError as exc:
            raise _bad(str(exc)) from None


def check_message_shape(m: CommitMessage) -> None:
    """What a message must satisfy for any table: plain file names, no external paths, integers
    where integers belong, sane sequence ranges. Raises `InvalidCommitMessageError`."""
    if not isinstance(m.partition, bytes):
        raise _bad(f"partition is {type(m.partition).__name__}, not bytes")
    if not _is_int(m.bucket) or not _is_int(m.total_buckets):
        raise _bad(f"bucket {m.bucket!r} / total_buckets {m.total_buckets!r} must be integers")
    for name in _FILE_FIELDS:
        files = getattr(m, name)
        if not isinstance(files, tuple):
            raise _bad(f"{name} is {type(files).__name__}, not a tuple")
        for f in files:
            _check_file(f, f"{name} of bucket {m.bucket}")
    for name in _INDEX_FIELDS:
        entries = getattr(m, name)
        if not isinstance(entries, tuple):
            raise _bad(f"{name} is {type(entries).__name__}, not a tuple")
        for e in entries:
            _check_index(e, f"{name} of bucket {m.bucket}", m)
    if not isinstance(m.hash_index_view, str):
        raise _bad(f"hash_index_view is {type(m.hash_index_view).__name__}, not a str")
    if isinstance(m.key_index_base, bool) or not isinstance(m.key_index_base, int) or m.key_index_base < -1:
        raise _bad(f"key_index_base is {m.key_index_base!r}, not a snapshot id, 0 or -1")
    if not isinstance(m.key_index_base_identity, str):
        raise _bad(f"key_index_base_identity is {type(m.key_index_base_identity).__name__}, not a str")
    if m.key_index_base > 0 and not m.key_index_base_identity:
        raise _bad(f"key_index_base {m.key_index_base} comes without the identity of that snapshot "
                   "(key_index_base_identity), which the commit checks")
    if not isinstance(m.key_index_pending, tuple) or not all(isinstance(x, str) for x in m.key_index_pending):
        raise _bad("key_index_pending is not a tuple of file names")
    if m.key_index_pending and m.key_index_base < 0:
        raise _bad("key_index_pending comes without key_index_base (a cross-partition writer's rounds)")
    try:
        for x in m.key_index_pending:
            check_file_name(x, "key_index_pending")
    except UnsafePathError as exc:
        raise _bad(str(exc)) from None
    hashes = [e for e in (*m.index_before, *m.index_after) if e.index_type == HASH_INDEX]
    if hashes and not m.hash_index_view:
        raise _bad(f"bucket {m.bucket} carries hash index file {hashes[0].file_name} without its writer's view of "
                   "the partition's hash index (hash_index_view), which the commit checks")


def validate_messages(store: FileStore, messages: Sequence[CommitMessage], action: str = "commit to") -> None:
    """Check every message against ``table`` before anything acts on any of them.

    Bucket in range for the table's bucket mode (0..N-1 for N fixed buckets, 0 for an append table with
    bucket = -1, any non-negative bucket for a dynamic-bucket primary-key table),
    partition bytes that decode with the arity of the partition keys, levels in
    [0, num-levels - 1], schema ids the table has. Raises `InvalidCommitMessageError` naming the
    table and the problem; nothing has been committed or deleted then.
    """
    name = store.name
    schema = store.schema
    opts = schema.core_options
    n_buckets = opts.bucket
    part_types = schema.types(list(schema.partition_keys))
    max_level = opts.num_levels - 1
    known_schemas: set[int] = {schema.id}  # other ids cost a listing and a read, once each
    for m in messages:
        if not isinstance(m, CommitMessage):
            raise InvalidCommitMessageError(f"Cannot {action} {name}: {type(m).__name__} is not a CommitMessage")
        try:
            check_message_shape(m)
        except InvalidCommitMessageError as exc:
            raise InvalidCommitMessageError(f"Cannot {action} {name}: {exc}") from None
        if n_buckets > 0:
            if not 0 <= m.bucket < n_buckets or m.total_buckets not in (0, n_buckets):
                raise InvalidCommitMessageError(
                    f"Cannot {action} {name}: message names bucket {m.bucket} of {m.total_buckets} "
                    f"but the table has {n_buckets} buckets (0..{n_buckets - 1})"
                )
        elif n_buckets == -1 and schema.primary_keys:
            # dynamic bucket mode: the hash index assigns buckets 0, 1, ... as they fill up, so any
            # non-negative bucket is in range (compaction of Paimon's dynamic-bucket tables)
            if m.bucket < 0 or m.total_buckets not in (-1, 0):
                raise InvalidCommitMessageError(
                    f"Cannot {action} {name}: message names bucket {m.bucket} of {m.total_buckets}; "
                    "a dynamic-bucket table (bucket = -1) has buckets 0, 1, ... and no fixed count"
                )
        elif n_buckets == -1:
            if m.bucket != 0 or m.total_buckets not in (-1, 0):
                raise InvalidCommitMessageError(
                    f"Cannot {action} {name}: message names bucket {m.bucket} of {m.total_buckets}; "
                    "an append table with bucket = -1 keeps its files in bucket 0"
                )
        elif n_buckets == -2 and schema.primary_keys:
            # postpone bucket mode: bucket-postpone, or a real bucket of the partition's own count
            if not (m.bucket == -2 or 0 <= m.bucket < m.total_buckets):
                raise InvalidCommitMessageError(
                    f"Cannot {action} {name}: message names bucket {m.bucket} of {m.total_buckets}; "
                    "a postpone-bucket table has bucket-postpone (-2) and buckets 0..N-1 of N per partition"
                )
        else:
            raise InvalidCommitMessageError(f"Cannot {action} {name}: bucket = {n_buckets} is not supported")
        hashes = [e for e in (*m.index_before, *m.index_after) if e.index_type == HASH_INDEX]
        if hashes and not (n_buckets == -1 and schema.primary_keys):
            raise InvalidCommitMessageError(
                f"Cannot {action} {name}: message carries hash index file {hashes[0].file_name}, but only "
                "dynamic-bucket primary-key tables (bucket = -1) have a hash index"
            )
        try:
            deserialize_row(m.partition, part_types)
            store.partition_path_of(m.partition)
        except (CorruptMetadataError, UnsafePathError, ValueError, TypeError, UnicodeDecodeError) as exc:
            raise InvalidCommitMessageError(
                f"Cannot {action} {name}: partition bytes do not decode as the table's partition "
                f"{list(schema.partition_keys)}: {exc}"
            ) from None
        for field_name in _FILE_FIELDS:
            for f in getattr(m, field_name):
                if f.level > max_level:
                    raise InvalidCommitMessageError(
                        f"Cannot {action} {name}: file {f.file_name} has level {f.level}, "
                        f"above the table's highest level {max_level} (num-levels = {opts.num_levels})"
                    )
                if f.schema_id not in known_schemas:
                    latest_schema = store.latest_schema_id()
                    if f.schema_id > latest_schema:
                        raise InvalidCommitMessageError(
                            f"Cannot {action} {name}: file {f.file_name} has schema id {f.schema_id}, "
                            f"which the table does not have (latest {latest_schema})"
                        )
                    try:
                        store.schema_by_id(f.schema_id)
                    except CorruptMetadataError as exc:
                        raise InvalidCommitMessageError(
                            f"Cannot {action} {name}: file {f.file_name} has schema id {f.schema_id}: {exc}"
                        ) from None
                    known_schemas.add(f.schema_id)


def _encode(v: Any) -> Any:
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    return v


def _stats_from_dict(d: dict[str, Any]) -> SimpleStats:
    nulls = d["null_counts"]
    return SimpleStats(
        base64.b64decode(d["min_values"], validate=True),
        base64.b64decode(d["max_values"], validate=True),
        None if nulls is None else tuple(nulls),
    )


_DATA_FILE_FIELDS = frozenset(f.name for f in fields(DataFileMeta))
_INDEX_ENTRY_FIELDS = frozenset(f.name for f in fields(IndexManifestEntry))


def _index_from_dict(d: dict[str, Any]) -> IndexManifestEntry:
    if not isinstance(d, dict):
        raise TypeError(f"an index entry is {type(d).__name__}, not an object")
    unknown = d.keys() - _INDEX_ENTRY_FIELDS
    if unknown:
        raise ValueError(f"unknown index entry fields {sorted(unknown)}")
    kw = dict(d)
    kw["kind"] = FileKind(kw["kind"])
    kw["partition"] = base64.b64decode(kw["partition"], validate=True)
    if kw.get("dv_ranges") is not None:
        kw["dv_ranges"] = tuple(DeletionVectorRange(*r) for r in kw["dv_ranges"])
    if kw.get("global_index") is not None:
        raise ValueError("global index entries are not carried by commit messages")
    return IndexManifestEntry(**kw)


def _file_from_dict(d: dict[str, Any]) -> DataFileMeta:
    if not isinstance(d, dict):
        raise TypeError(f"a file entry is {type(d).__name__}, not an object")
    unknown = d.keys() - _DATA_FILE_FIELDS
    if unknown:
        raise ValueError(f"unknown file fields {sorted(unknown)}")
    kw = dict(d)
    for k in ("min_key", "max_key"):
        kw[k] = base64.b64decode(kw[k], validate=True)
    if kw.get("embedded_file_index") is not None:
        kw["embedded_file_index"] = base64.b64decode(kw["embedded_file_index"], validate=True)
    kw["key_stats"] = _stats_from_dict(kw["key_stats"])
    kw["value_stats"] = _stats_from_dict(kw["value_stats"])
    for k in ("extra_files", "value_stats_cols", "write_cols", "write_cols_sequences"):
        if kw.get(k) is not None:
            kw[k] = tuple(kw[k])
    return DataFileMeta(**kw)
