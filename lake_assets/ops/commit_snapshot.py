"""The files of one snapshot a commit puts: manifests, manifest lists, index manifest, and the
`Snapshot` record that references them (Paimon's ``FileStoreCommitImpl.tryCommitOnce`` up to the
atomic put, which stays with the committer, `ops/commit.py`).

Nothing written here is referenced until the snapshot lands, so a caller that never puts it
deletes every name listed in ``written``.

`write_snapshot_files` writes them in Paimon's order. Its parts are public for the committer's
ahead writer (`ops/commit_ahead.py`): a snapshot's own manifests and their lists
(`write_delta_files`) depend only on its entries, so they can be written before the snapshot it
follows is known; its base list (`write_base_list`) and record (`snapshot_record`) need that one.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_assets.ops.commit_inherit import inherited_log_offsets, inherited_statistics
from lake_assets.ops.index_commit import IndexChange, next_index_manifest
from lake_assets.ops.row_tracking import assign_row_tracking, next_row_id_start, row_tracking_enabled, stamp_new_files
from lake_assets.spec.manifest import FileKind, ManifestEntry, ManifestFileMeta
from lake_assets.spec.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_assets.ops.overwrite import Overwrite
    from lake_assets.store.file_store import FileStore
    from lake_assets.store.manifest_io import ManifestIO

WRITER_VERSION = "lake_assets-0.1.0"

# the fault points a snapshot's files pass, in Paimon's order (the changelog list's only with one)
MANIFEST_STEPS = ("commit.after_manifests", "commit.after_base_list", "commit.after_delta_list")
CHANGELOG_LIST_STEP = "commit.after_changelog_list"


@dataclass(frozen=True)
class DeltaFiles:
    """A snapshot's delta and changelog manifests and the lists naming them."""

    delta_list: tuple[str, int]
    changelog_list: tuple[str, int] | None


def write_snapshot_files(
    store: FileStore,
    mio: ManifestIO,
    latest: Snapshot | None,
    kind: CommitKind,
    delta: list[ManifestEntry],
    changelog: list[ManifestEntry],
    *,
    identifier: int,
    commit_user: str,
    properties: dict[str, str] | None,
    written: list[str],
    indexes: Sequence[IndexChange] = (),
    overwrite: Overwrite | None = None,
    fault: Callable[[str], None],
) -> Snapshot:
    """Write the files of the snapshot following ``latest`` and return it (not yet put).

    Every file name goes into ``written`` as it is written; ``fault`` is told each named step
    (`FileStore.fault_point`, or a recorder when another thread writes them)."""
    # the index manifest first: a conflict on a bucket's index is found before anything else is written
    scan = store.file_store_scan()
    overwritten = (None if overwrite is None
                   else lambda part: overwrite.matches(scan.partition_values(part)))
    index_manifest = next_index_manifest(store, mio, latest, indexes, overwritten, written)
    base_metas = merged_base_metas(store, mio, latest, written)
    next_row_id = None
    if row_tracking_enabled(store.schema.options):
        # after the conflict checks, from the snapshot this attempt follows: a retry reassigns
        new_id = latest.id + 1 if latest is not None else 1
        delta, next_row_id = assign_row_tracking(new_id, next_row_id_start(latest, store.name),
                                                 stamp_new_files(delta))
    delta_metas = _write_manifests(mio, delta, written)
    changelog_metas = _write_manifests(mio, changelog, written)
    fault(MANIFEST_STEPS[0])
    base_list = _write_list(mio, base_metas, written)
    fault(MANIFEST_STEPS[1])
    delta_list = _write_list(mio, delta_metas, written)
    fault(MANIFEST_STEPS[2])
    changelog_list = None
    if changelog_metas:
        changelog_list = _write_list(mio, changelog_metas, written)
        fault(CHANGELOG_LIST_STEP)
    return snapshot_record(store, latest, kind, delta, changelog, DeltaFiles(delta_list, changelog_list),
                           base_list=base_list, index_manifest=index_manifest, identifier=identifier,
                           commit_user=commit_user, properties=properties, next_row_id=next_row_id)


def write_delta_files(
    mio: ManifestIO, delta: list[ManifestEntry], changelog: list[ManifestEntry], written: list[str]
) -> DeltaFiles:
    """A snapshot's own manifests and their lists (names into ``written``): they do not depend
    on the snapshot it follows."""
    delta_metas = _write_manifests(mio, delta, written)
    changelog_metas = _write_manifests(mio, changelog, written)
    delta_list = _write_list(mio, delta_metas, written)
    changelog_list = _write_list(mio, changelog_metas, written) if changelog_metas else None
    return DeltaFiles(delta_list, changelog_list)


def merged_base_metas(
    store: FileStore, mio: ManifestIO, latest: Snapshot | None, written: list[str]
) -> list[ManifestFileMeta]:
    """The manifests of the snapshot following ``latest``'s base list: every manifest of
    ``latest``, small ones merged once enough piled up (merged manifests into ``written``)."""
    if latest is None:
        return []
    metas = mio.read_manifest_list(latest.base_manifest_list) + mio.read_manifest_list(latest.delta_manifest_list)
    metas, merged_names = mio.merge_manifests(metas, store.schema.core_options.manifest_merge_min_count)
    written += merged_names
    return metas


def write_base_list(store: FileStore, mio: ManifestIO, latest: Snapshot | None, written: list[str]) -> tuple[str, int]:
    """The base manifest list of the snapshot following ``latest`` (`merged_base_metas`)."""
    return _write_list(mio, merged_base_metas(store, mio, latest, written), written)


def snapshot_record(
    store: FileStore,
    latest: Snapshot | None,
    kind: CommitKind,
    delta: list[ManifestEntry],
    changelog: list[ManifestEntry],
    files: DeltaFiles,
    *,
    base_list: tuple[str, int],
    index_manifest: str | None,
    identifier: int,
    commit_user: str,
    properties: dict[str, str] | None,
    next_row_id: int | None = None,
) -> Snapshot:
    """The `Snapshot` following ``latest`` over the lists written for it, stamped now - or, if
    that is not after ``latest``'s stamp, 1 ms after it. ``next_row_id``: the row-tracking
    counter after this commit's new files (`ops.row_tracking`); unset, ``latest``'s is carried, as
    Java's compactions carry it.

    Commit times then increase with ids. Time travel by timestamp needs that: Java's
    ``earlierOrEqualTimeMills`` binary-searches the ids by time and, on equal times, returns
    whichever snapshot its search meets first, while lake_assets takes the newest. A writer's
    APPEND and COMPACT snapshots are often made within one millisecond (the COMPACT's record is
    written ahead, `commit_ahead`), and a writer whose clock is behind the last committer's
    would otherwise stamp a snapshot before its parent."""
    now = int(time.time() * 1000)
    time_millis = max(now, latest.time_millis + 1) if latest is not None and latest.time_millis is not None else now
    delta_records = sum(e.file.row_count if e.kind == FileKind.ADD else -e.file.row_count for e in delta)
    prev_total = (latest.total_record_count or 0) if latest is not None else 0
    cl_name, cl_size = files.changelog_list if files.changelog_list is not None else (None, None)
    schema_id = store.latest_schema_id()
    return Snapshot(
        id=(latest.id + 1) if latest is not None else 1,
        schema_id=schema_id,
        base_manifest_list=base_list[0],
        base_manifest_list_size=base_list[1],
        delta_manifest_list=files.delta_list[0],
        delta_manifest_list_size=files.delta_list[1],
        changelog_manifest_list=cl_name,
        changelog_manifest_list_size=cl_size,
        index_manifest=index_manifest,
        commit_user=commit_user,
        writer_version=WRITER_VERSION,
        commit_identifier=identifier,
        commit_kind=kind,
        time_millis=time_millis,
        total_record_count=prev_total + delta_records,
        delta_record_count=delta_records,
        # Java writes 0 (not null) when the commit produced no changelog.
        changelog_record_count=sum(e.file.row_count for e in changelog),
        # carried forward as Java's commits carry them (commit_inherit.py)
        log_offsets=inherited_log_offsets(latest),
        watermark=latest.watermark if latest is not None else None,
        statistics=inherited_statistics(store, latest, schema_id),
        properties=properties or None,
        next_row_id=next_row_id if next_row_id is not None else (latest.next_row_id if latest is not None else None),
        uuid=str(uuid.uuid4()),
    )


def _write_manifests(mio: ManifestIO, entries: list[ManifestEntry], written: list[str]) -> list[ManifestFileMeta]:
    metas = mio.write_manifests(entries)
    written += [m.file_name for m in metas]
    return metas


def _write_list(mio: ManifestIO, metas: list[ManifestFileMeta], written: list[str]) -> tuple[str, int]:
    name, size = mio.write_manifest_list(metas)
    written.append(name)
    return name, size


__all__ = [
    "CHANGELOG_LIST_STEP",
    "MANIFEST_STEPS",
    "WRITER_VERSION",
    "DeltaFiles",
    "merged_base_metas",
    "snapshot_record",
    "write_base_list",
    "write_delta_files",
    "write_snapshot_files",
]
