"""The checks a job judges on its own run (`lake_assets.job_checks`), as summary entries.

Each is computed after the job's work, from metadata and listings only, and never fails a finished
job: a check that cannot be computed (a manifest that cannot be read, say) is a failed check whose
metadata says why, for the run has already committed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from lake_assets.errors import LakeError
from lake_assets.job_checks import (
    COMPACTED_SMALL_FILES,
    EXTRA_PARTITIONS,
    EXTRA_SMALL_FILE_BYTES,
    EXTRA_SMALL_FILE_THRESHOLD,
    ORPHANS_OLDER_THAN_BOUND,
    RETAINED_SNAPSHOTS_READABLE,
    check_result,
)
from lake_assets.ops.orphans import ORPHAN_AGE_FLOOR, index_file_paths, retained_snapshots
from lake_assets.spark.jobs.logs import log
from lake_assets.table import Table
from lake_assets.table_support import POSTPONE_BUCKET

SAMPLE = 10


def compacted_small_files(table: Table, extras: Mapping[str, Any]) -> dict[str, Any] | None:
    """`COMPACTED_SMALL_FILES` on the partitions the Dagster asset asked for (its Pipes extras name
    them and its small-file policy); None without a policy (a run Dagster did not start)."""
    threshold = extras.get(EXTRA_SMALL_FILE_THRESHOLD)
    if not isinstance(threshold, int):
        return None
    small_bytes = extras.get(EXTRA_SMALL_FILE_BYTES)
    scope = set(extras.get(EXTRA_PARTITIONS) or ())
    try:
        rows = table.health(small_file_threshold=small_bytes if isinstance(small_bytes, int) else None).to_pylist()
    except (LakeError, OSError) as exc:
        return check_result(COMPACTED_SMALL_FILES, False, {"error": f"{type(exc).__name__}: {exc}"})
    rows = [r for r in rows if not scope or r["partition"] in scope]
    over = [r for r in rows if r["bucket"] != POSTPONE_BUCKET and r["small_file_count"] > threshold]
    postponed = [r for r in rows if r["bucket"] == POSTPONE_BUCKET and r["file_count"] > 0]
    return check_result(COMPACTED_SMALL_FILES, not over and not postponed, {
        "small_file_threshold": threshold,
        "partitions": ", ".join(sorted(scope)) or "all",
        "buckets_over": len(over),
        "max_small_files": max((r["small_file_count"] for r in rows if r["bucket"] != POSTPONE_BUCKET), default=0),
        "postponed_files": sum(r["file_count"] for r in postponed),
        "over": [f"{r['partition'] or '(unpartitioned)'} bucket {r['bucket']}: {r['small_file_count']} small files"
                 for r in over[:SAMPLE]],
    })


def retained_snapshots_readable(table: Table) -> dict[str, Any]:
    """`RETAINED_SNAPSHOTS_READABLE`: every retained snapshot's manifest lists are there, and so is
    every file the earliest and the latest retained snapshot and each tag read (manifests, data and
    their extra files, index files).

    The earliest retained snapshot is the one an expiry's deletes could break (it deletes what the
    expired snapshots named and the earliest no longer does); a snapshot between them reads the
    earliest's files plus those retained deltas added, which no expiry deletes."""
    store = table.store
    try:
        snapshots = retained_snapshots(store)  # CorruptMetadataError on a hole between them
        paths = [store.paths.manifest_file(name) for snap in snapshots
                 for name in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list) if name]
        read = {snap.id: snap for snap in (snapshots[0], snapshots[-1])} if snapshots else {}
        tags = list(store.tag_manager().tags().values())
        scan = store.file_store_scan()
        for snap in [*read.values(), *(tag.snapshot for tag in tags)]:
            paths += [store.paths.manifest_file(meta.file_name) for meta in scan.data_manifests(snap)]
            for entry in scan.live_entries(snap):  # reads those manifests: a missing one raises
                paths.append(store.data_file_path(entry.partition, entry.bucket, entry.file))
                partition = store.partition_path_of(entry.partition)
                paths += [store.paths.data_file(partition, entry.bucket, x) for x in entry.file.extra_files]
            if snap.index_manifest:
                paths += index_file_paths(store, snap.index_manifest, may_be_gone=False)
        missing = table.file_io.missing(paths)
    except (LakeError, OSError) as exc:  # a list or manifest that cannot be read: not readable
        return check_result(RETAINED_SNAPSHOTS_READABLE, False, {"error": f"{type(exc).__name__}: {exc}"})
    return check_result(RETAINED_SNAPSHOTS_READABLE, not missing, {
        "retained_snapshots": len(snapshots),
        "snapshots_read": ", ".join(str(i) for i in sorted(read)) or "none",
        "tags_read": len(tags),
        "files_looked_up": len(set(paths)),
        "missing_files": len(missing),
        "missing": missing[:SAMPLE],
    })


def orphans_older_than_bound(table: Table, paths: Sequence[str], *, now_ms: int, older_than_ms: int,
                             allow_recent: bool) -> tuple[dict[str, Any], set[str]]:
    """`ORPHANS_OLDER_THAN_BOUND`, before the deletes, and the paths too young to delete: the
    modification times of ``paths`` listed again (one listing per directory) against ``now_ms -
    older_than_ms`` and, unless ``allow_recent``, the floor. A path no longer listed is gone already
    (nothing to delete); one whose directory cannot be listed counts as too young."""
    bound_ms = now_ms - older_than_ms
    if not allow_recent:
        bound_ms = min(bound_ms, now_ms - int(ORPHAN_AGE_FLOOR.total_seconds() * 1000))
    by_dir: dict[str, set[str]] = {}
    for path in paths:
        by_dir.setdefault(posixpath.dirname(path), set()).add(path)
    modified: dict[str, int | None] = {}
    try:
        for directory, wanted in by_dir.items():
            for status in table.file_io.list_without_links(directory):
                if status.path in wanted:
                    modified[status.path] = status.modified_ms
    except OSError as exc:
        return (check_result(ORPHANS_OLDER_THAN_BOUND, False, {"error": f"{type(exc).__name__}: {exc}"}),
                set(paths))
    # a file without a modification time cannot be proven old: it counts as too young
    young = sorted(p for p, ms in modified.items() if ms is None or ms >= bound_ms)
    times = [ms for ms in modified.values() if ms is not None]
    if young:
        log.error("orphan files younger than the bound were found for deletion (kept): %s", young[:SAMPLE])
    return check_result(ORPHANS_OLDER_THAN_BOUND, not young, {
        "files": len(paths),
        "bound_age_s": round((now_ms - bound_ms) / 1000, 3),
        "youngest_age_s": round((now_ms - max(times)) / 1000, 3) if times else None,
        "younger_files": len(young),
        "younger": young[:SAMPLE],
    }), set(young)
