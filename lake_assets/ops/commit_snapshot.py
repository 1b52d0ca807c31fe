"""The files of one snapshot a commit puts: manifests, manifest lists, index manifest, and the
`Snapshot` record that references them (Paimon's ``FileStoreCommitImpl.tryCommitOnce`` up to the
atomic put, which stays with the committer, `ops/commit.py`).

Nothing written here is referenced until the snapshot lands, so a caller that never puts it
deletes every name listed in ``written``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lake_assets.ops.index_commit import IndexChange, next_index_manifest
from lake_assets.spec.manifest import FileKind, ManifestEntry, ManifestFileMeta
from lake_assets.spec.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_assets.ops.overwrite import Overwrite
    from lake_assets.store.file_store import FileStore
    from lake_assets.store.manifest_io import ManifestIO

WRITER_VERSION = "lake_assets-0.1.0"


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
    base_metas: list[ManifestFileMeta] = []
    if latest is not None:
        base_metas = mio.read_manifest_list(latest.base_manifest_list) + mio.read_manifest_list(
            latest.delta_manifest_list
        )
        base_metas, merged_names = mio.merge_manifests(base_metas, store.schema.core_options.manifest_merge_min_count)
        written += merged_names
    delta_metas = mio.write_manifests(delta)
    written += [m.file_name for m in delta_metas]
    changelog_metas = mio.write_manifests(changelog)
    written += [m.file_name for m in changelog_metas]
    fault("commit.after_manifests")
    base_name, base_size = mio.write_manifest_list(base_metas)
    written.append(base_name)
    fault("commit.after_base_list")
    delta_name, delta_size = mio.write_manifest_list(delta_metas)
    written.append(delta_name)
    fault("commit.after_delta_list")
    cl_name = cl_size = None
    if changelog_metas:
        cl_name, cl_size = mio.write_manifest_list(changelog_metas)
        written.append(cl_name)
        fault("commit.after_changelog_list")
    delta_records = sum(e.file.row_count if e.kind == FileKind.ADD else -e.file.row_count for e in delta)
    prev_total = (latest.total_record_count or 0) if latest is not None else 0
    return Snapshot(
        id=(latest.id + 1) if latest is not None else 1,
        schema_id=store.latest_schema_id(),
        base_manifest_list=base_name,
        base_manifest_list_size=base_size,
        delta_manifest_list=delta_name,
        delta_manifest_list_size=delta_size,
        changelog_manifest_list=cl_name,
        changelog_manifest_list_size=cl_size,
        index_manifest=index_manifest,
        commit_user=commit_user,
        writer_version=WRITER_VERSION,
        commit_identifier=identifier,
        commit_kind=kind,
        time_millis=int(time.time() * 1000),
        total_record_count=prev_total + delta_records,
        delta_record_count=delta_records,
        # Java writes 0 (not null) when the commit produced no changelog, and an empty logOffsets.
        changelog_record_count=sum(e.file.row_count for e in changelog),
        log_offsets={},
        watermark=latest.watermark if latest is not None else None,
        properties=properties or None,
        uuid=str(uuid.uuid4()),
    )


__all__ = ["WRITER_VERSION", "write_snapshot_files"]
