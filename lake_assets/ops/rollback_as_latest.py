"""Rollback as latest: a new snapshot that restores an older one's files, keeping every snapshot,
tag and row id handed out (Paimon HEAD's ``FileStoreCommitImpl.rollbackToAsLatest`` and Flink's
``sys.rollback_to_as_latest``).

The new snapshot (id latest + 1, kind OVERWRITE) lists the latest's files as its base and, as its
delta, a DELETE of each latest file the target lacks and an ADD of each target file the latest
lacks (the very file, re-added by name); it takes the target's schema id, index manifest,
watermark, statistics, properties and record count, and ``nextRowId`` = max(latest's, target's),
so ids are never handed out twice. No expiration runs after it.

Why the re-added files survive expiry. A target file F that a later snapshot D deleted is
re-added by the new snapshot R. Expiry of D (Paimon 0.9 and HEAD: ``createDataFileSkipperForTags``
spares the files of the nearest tag *below* the expiring snapshot; lake_assets: the files of any
tag below) would delete F, unless a tag keeps it. So, as HEAD's procedure does, the target is
tagged first: a rollback to a tag keeps that tag; one to a snapshot id creates
``rollback-to-as-latest-<id>-<uuid>`` on it. Every tag between the target and D holds F too (F was
live there), so the nearest tag below D always holds it; index manifests and index files
the target shares with R are spared by 0.9's ``findOverlappedSnapshots`` the same way. This holds
while the tag exists: a tag deleted while snapshots between the target and R remain (Paimon's
``deleteTag`` deletes no file then, and nothing keeps F afterwards) lets any engine's later
expiry delete F (tests/differential/test_rollback_as_latest_java.py shows it with Java 0.9). Paimon
HEAD has the same limit: keep the tag until the snapshots between the target and the rollback have
expired. lake_assets' own tag deletion spares every file a retained snapshot lists; its snapshot
expiry does not rely on the tag: it keeps what retained OVERWRITE snapshots re-add
(`ops/expire_files.Restorations`); Paimon's expiry does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid

from lake_assets.errors import CommitConflictError, InvalidArgumentError, SnapshotNotFoundError
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.commit_snapshot import snapshot_record, write_base_list, write_delta_files
from lake_assets.spec.manifest import FileKind, ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.store.file_store import FileStore
from lake_assets.store.read_once import reads_once

ROLLBACK_TAG_PREFIX = "rollback-to-as-latest-"
# Paimon's BatchWriteBuilder.COMMIT_IDENTIFIER, which the rollback snapshot carries
ROLLBACK_IDENTIFIER = 2**63 - 1


@reads_once
def rollback_to_as_latest(store: FileStore, *, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
    """Commit a snapshot whose files are the target's (a snapshot id, or a tag) and return it.

    A snapshot id is first tagged ``rollback-to-as-latest-<id>-<uuid>`` (the tag keeps the
    files the new snapshot re-adds, see the module doc); the tag is removed again when the
    snapshot does not land. `CommitConflictError` when another commit took the next id (nothing
    changed: retry), `SnapshotNotFoundError` for an unknown target."""
    from lake_assets.ops.tagging import create_tag

    sm = store.snapshot_manager
    tags = store.tag_manager()
    latest = sm.latest()
    if latest is None:
        raise SnapshotNotFoundError(f"Cannot roll back {store.name}: the table has no snapshot")
    created: str | None = None
    if tag is not None:
        target = tags.get(tag).snapshot
        current = sm.try_snapshot(target.id)
        if target.id > latest.id or (current is not None and current.base_manifest_list != target.base_manifest_list):
            raise InvalidArgumentError(
                f"Cannot roll back {store.name} to tag {tag!r} as latest: its snapshot {target.id} belongs to a "
                "history an earlier rollback discarded")
    else:
        assert snapshot_id is not None  # the caller passes exactly one
        found = sm.try_snapshot(snapshot_id)
        if found is None:
            found = next((t.snapshot for t in tags.tags().values() if t.snapshot.id == snapshot_id), None)
        if found is None:
            raise SnapshotNotFoundError(f"Cannot roll back {store.name}: no snapshot or tag of snapshot {snapshot_id}")
        target = found
        created = f"{ROLLBACK_TAG_PREFIX}{target.id}-{uuid.uuid4()}"
        create_tag(store, created, target)
    committer = TableCommitter(store, f"{ROLLBACK_TAG_PREFIX}{uuid.uuid4()}")
    try:
        landed = _commit(store, committer, latest, target)
    except BaseException:
        if created is not None and not committer.may_have_landed:
            with contextlib.suppress(Exception):
                tags.delete(created)
        raise
    return landed


def _commit(store: FileStore, committer: TableCommitter, latest: Snapshot, target: Snapshot) -> Snapshot:
    scan = store.file_store_scan()
    now = {e.identifier(): e for e in scan.live_entries(latest)}
    then = {e.identifier(): e for e in scan.live_entries(target)}
    delta = [dataclasses.replace(e, kind=FileKind.DELETE) for k, e in now.items() if k not in then]
    delta += [ManifestEntry(FileKind.ADD, e.partition, e.bucket, e.total_buckets, e.file)
              for k, e in then.items() if k not in now]
    mio = store.manifest_io()
    written: list[str] = []
    try:
        base_list = write_base_list(store, mio, latest, written)
        files = write_delta_files(mio, delta, [], written)
        record = snapshot_record(store, latest, CommitKind.OVERWRITE, delta, [], files, base_list=base_list,
                                 index_manifest=target.index_manifest, identifier=ROLLBACK_IDENTIFIER,
                                 commit_user=committer.commit_user, properties=target.properties)
        ids = [n for n in (latest.next_row_id, target.next_row_id) if n is not None]
        snapshot = dataclasses.replace(
            record, schema_id=target.schema_id, total_record_count=target.total_record_count,
            watermark=target.watermark, statistics=target.statistics, next_row_id=max(ids) if ids else None)
        sid = committer.put_snapshot(snapshot)  # a lost race is None, an open outcome raises
    except BaseException:
        if not committer.may_have_landed:
            mio.delete(written)
        raise
    if sid is None:
        mio.delete(written)
        raise CommitConflictError(
            f"Cannot roll back {store.name} to snapshot {target.id} as latest: another commit took snapshot "
            f"{latest.id + 1}; nothing changed, retry")
    store.snapshot_manager.write_latest_hint(sid)
    return snapshot


__all__ = ["ROLLBACK_TAG_PREFIX", "rollback_to_as_latest"]
