"""Row tracking at commit time: the row ids and sequence numbers a commit gives its new files.

A table with ``row-tracking.enabled = true`` (Paimon 1.1+, append tables with ``bucket = -1``)
gives every row a stable ``_ROW_ID``. Writers leave ``_FIRST_ROW_ID`` unset; the commit assigns
it, after its conflict checks, from the latest snapshot's ``nextRowId`` and records the next free
id in the new snapshot, so a commit retried on a newer snapshot assigns them again (Paimon HEAD's
``RowTrackingCommitUtils.assignRowTracking``, called from ``FileStoreCommitImpl.tryCommitOnce``;
pypaimon 2.1's ``FileStoreCommit._assign_row_tracking_meta`` does the same):

* new files (``_MIN_SEQUENCE_NUMBER`` 0) get the new snapshot's id as both sequence numbers, so a
  row's ``_SEQUENCE_NUMBER`` is the snapshot that wrote it; a file with only a max of 0 keeps its
  min; any other file (a compaction's output) keeps its range;
* files from a writer (``_FILE_SOURCE`` APPEND) without a first row id, whose ``_WRITE_COLS`` do
  not hold ``_ROW_ID``, get the next ids in commit order; compaction outputs keep theirs.

lake_assets' append writers number rows of a bucket from its highest sequence number, so their
files of a row-tracking table are stamped here whatever their range (`stamp_new_files`), as files
of Java's and pypaimon's writers (which write 0) are. Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from lake_assets.errors import CommitError, CorruptMetadataError, InvalidCommitMessageError
from lake_assets.option_classification import is_true
from lake_assets.spec.manifest import DataFileMeta, FileKind, FileSource, ManifestEntry
from lake_assets.spec.snapshot import Snapshot

ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
#: Paimon's system fields of row-tracking tables (``SpecialFields.ROW_ID`` / ``SEQUENCE_NUMBER``).
ROW_TRACKING_FIELDS = (ROW_ID, SEQUENCE_NUMBER)
#: The largest row id: ``_ROW_ID`` is a BIGINT.
MAX_ROW_ID = 2**63 - 1


def row_tracking_enabled(options: Mapping[str, str]) -> bool:
    """Whether the table carries ``row-tracking.enabled = true``."""
    return is_true(options.get("row-tracking.enabled"))


def data_evolution_enabled(options: Mapping[str, str]) -> bool:
    """Whether the table carries ``data-evolution.enabled = true`` (it needs row tracking)."""
    return is_true(options.get("data-evolution.enabled"))


def next_row_id_start(latest: Snapshot | None, table: str) -> int:
    """The first row id a commit on top of ``latest`` gives out (0 for the first snapshot, or one
    whose writer recorded none). A negative ``nextRowId`` (no Paimon writer records one) is
    refused: ids given from it would be negative or collide with the table's."""
    if latest is None or latest.next_row_id is None:
        return 0
    if not 0 <= latest.next_row_id <= MAX_ROW_ID:
        raise CorruptMetadataError(
            f"Cannot commit to {table}: snapshot {latest.id} records nextRowId {latest.next_row_id}, "
            "which is not a row id")
    return latest.next_row_id


def stamp_new_files(entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
    """Writer outputs of a row-tracking table with sequence numbers 0/0, so that `assign_row_tracking`
    stamps them with the snapshot id as it does pypaimon's (see the module docstring)."""
    out: list[ManifestEntry] = []
    for e in entries:
        f = e.file
        if e.kind == FileKind.ADD and f.file_source == FileSource.APPEND and f.first_row_id is None:
            e = dataclasses.replace(e, file=dataclasses.replace(f, min_sequence_number=0, max_sequence_number=0))
        out.append(e)
    return out


def _holds_row_id(f: DataFileMeta) -> bool:
    return f.write_cols is not None and ROW_ID in f.write_cols


def assign_row_tracking(
    snapshot_id: int, first_row_id_start: int, delta: Sequence[ManifestEntry]
) -> tuple[list[ManifestEntry], int]:
    """``delta`` with sequence numbers and first row ids assigned, and the snapshot's ``nextRowId``.

    The entries are grouped by partition first (``row-tracking.partition-group-on-commit``, true by
    default), so each partition's new rows get contiguous ids; Java groups them in a hash map's
    order, this in the order the partitions first appear: any order gives unique ids."""
    by_partition: dict[bytes, list[ManifestEntry]] = {}
    for e in delta:
        by_partition.setdefault(e.partition, []).append(e)
    start = first_row_id_start
    out: list[ManifestEntry] = []
    for e in (e for group in by_partition.values() for e in group):
        f = e.file
        if e.kind != FileKind.ADD:
            # a DELETE names a committed file, which has its ids already
            out.append(e)
            continue
        if f.min_sequence_number == 0:
            f = dataclasses.replace(f, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
        elif f.max_sequence_number == 0:
            f = dataclasses.replace(f, max_sequence_number=snapshot_id)
        if f.file_source is None and f.first_row_id is None and not _holds_row_id(f):
            # neither a writer's nor a compaction's: Java refuses it too ("file source field for
            # row-tracking table must present"); committed, its rows would have no _ROW_ID
            raise InvalidCommitMessageError(
                f"Cannot commit: new file {f.file_name} of a row-tracking table has no _FILE_SOURCE, so "
                "it cannot be told whether its rows need row ids")
        if f.file_source == FileSource.APPEND and f.first_row_id is None and not _holds_row_id(f):
            f = dataclasses.replace(f, first_row_id=start)
            start += f.row_count
        out.append(e if f is e.file else dataclasses.replace(e, file=f))
    if start - 1 > MAX_ROW_ID:
        raise CommitError(f"Cannot commit: its rows would take row ids up to {start - 1}, past the largest "
                          f"BIGINT ({MAX_ROW_ID})")
    return out, start


def row_id_range(f: DataFileMeta, table: str) -> tuple[int, int] | None:
    """The row ids ``f`` holds, first and last (None without a first row id). A range no Paimon
    writer makes (a negative first id or row count, ids past the largest BIGINT) is refused with
    `CorruptMetadataError` naming the file: reading it would give wrong or wrapped ids."""
    if f.first_row_id is None:
        return None
    last = f.first_row_id + f.row_count - 1
    if f.first_row_id < 0 or f.row_count < 0 or last > MAX_ROW_ID:
        raise CorruptMetadataError(
            f"Cannot read {table}: data file {f.file_name} has _FIRST_ROW_ID {f.first_row_id} and "
            f"{f.row_count} rows, which are not row ids")
    return f.first_row_id, last


__all__ = [
    "MAX_ROW_ID",
    "ROW_ID",
    "ROW_TRACKING_FIELDS",
    "SEQUENCE_NUMBER",
    "assign_row_tracking",
    "data_evolution_enabled",
    "next_row_id_start",
    "row_id_range",
    "row_tracking_enabled",
    "stamp_new_files",
]
