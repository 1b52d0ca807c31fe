"""Trust boundaries of crafted metadata: snapshots, manifests and index manifests naming files
outside the table, and symlinked directories, never make expiry or orphan removal delete outside
it; they stop with a clear `LakeError` and the sentinels next to the warehouse stay the same."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest

from lake_assets import CorruptMetadataError, LakeError
from lake_assets.errors import UnsafePathError
from lake_assets.formats.manifest_codec import encode_index_manifest
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import FileKind, IndexManifestEntry, ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.store import manifest_io
from tests.reliability.trust_env import (
    OLD,
    STRING,
    Env,
    batch,
    fresh_env,
)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return fresh_env(tmp_path)


# ------------------------------------------------------------------------------ crafted metadata


def _craft_snapshot(env: Env, delta: list[ManifestEntry], base_of: int | None = None, **overrides) -> Snapshot:
    """Commit a snapshot whose delta holds ``delta`` as-is (as a buggy or hostile writer would);
    its base is the live state of snapshot ``base_of`` (default: the latest)."""
    t = env.table
    mio = t.store.manifest_io()
    latest = t.snapshot_manager.latest()
    of = latest if base_of is None else t.snapshot_manager.snapshot(base_of)
    base = mio.read_manifest_list(of.base_manifest_list) + mio.read_manifest_list(of.delta_manifest_list)
    base_name, base_size = mio.write_manifest_list(base)
    delta_name, delta_size = mio.write_manifest_list(mio.write_manifests(delta))
    snap = Snapshot(
        id=latest.id + 1, schema_id=t.schema.id, base_manifest_list=base_name, base_manifest_list_size=base_size,
        delta_manifest_list=delta_name, delta_manifest_list_size=delta_size, commit_user="crafted",
        commit_identifier=latest.id + 1, commit_kind=CommitKind.COMPACT, time_millis=int(time.time() * 1000),
        total_record_count=latest.total_record_count, delta_record_count=0,
    )
    snap = dataclasses.replace(snap, **overrides)
    assert t.snapshot_manager.try_commit(snap)
    t.snapshot_manager.write_latest_hint(snap.id)
    manifest_io._cache_slot.cache_clear()  # as another process: decode from storage
    return snap


def _live_entry(env: Env) -> ManifestEntry:
    return env.table.store.file_store_scan().live_entries(env.table.snapshot_manager.latest())[0]


@pytest.mark.parametrize("case", ["parent", "external"])
def test_expiry_never_deletes_a_file_a_crafted_manifest_names_outside(env: Env, case: str) -> None:
    e = _live_entry(env)
    if case == "parent":
        rel = os.path.relpath(env.victim, env.table.paths.bucket_dir(env.table.store.partition_path_of(e.partition),
                                                                      e.bucket))
        f = dataclasses.replace(e.file, file_name=rel)
    else:
        f = dataclasses.replace(e.file, external_path=str(env.victim))
    # snapshot 2 "deletes" the crafted file; snapshot 3 holds snapshot 1's files, so expiring 1 and 2
    # makes expiry look at what 2 deleted
    _craft_snapshot(env, [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, f)])
    _craft_snapshot(env, [], base_of=1)
    with contextlib.suppress(LakeError):  # stopping is fine; deleting outside is not
        env.table.expire_snapshots(retain_min=1, retain_max=1)
    env.assert_outside_untouched()
    env.assert_table_unchanged(3)


def test_crafted_manifest_stops_orphan_removal(env: Env) -> None:
    e = _live_entry(env)
    f = dataclasses.replace(e.file, file_name=str(env.victim))
    _craft_snapshot(env, [ManifestEntry(FileKind.ADD, e.partition, e.bucket, e.total_buckets, f)])
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        env.table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    env.assert_outside_untouched()


@pytest.mark.parametrize("field", ["changelogManifestList", "baseManifestList", "indexManifest", "statistics"])
def test_snapshot_naming_a_list_outside_the_table_stops_expiry(env: Env, field: str) -> None:
    """The issue's example: a snapshot whose changelog list is ../.. made expiry delete outside."""
    t = env.table
    t.write_arrow(batch([4]))
    t.write_arrow(batch([5]))
    path = Path(t.paths.snapshot_file(1))
    d = json.loads(path.read_text())
    d[field] = os.path.relpath(env.victim, t.paths.manifest_dir)
    path.write_text(json.dumps(d))
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        t.expire_snapshots(retain_min=1, retain_max=1)
    env.assert_outside_untouched()
    assert t.snapshot_manager.latest_id() == 3
    assert len(env.read()) == 5  # the latest snapshot is intact


def test_manifest_list_naming_a_manifest_outside_is_corrupt(env: Env) -> None:
    t = env.table
    mio = t.store.manifest_io()
    latest = t.snapshot_manager.latest()
    metas = mio.read_manifest_list(latest.delta_manifest_list)
    bad = [dataclasses.replace(metas[0], file_name=os.path.relpath(env.victim, t.paths.manifest_dir))]
    name, size = mio.write_manifest_list(bad)
    _craft_snapshot(env, [], delta_manifest_list=name, delta_manifest_list_size=size)
    _craft_snapshot(env, [], base_of=1)  # snapshot 2 (the crafted list) can expire now
    manifest_io._cache_slot.cache_clear()
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    with contextlib.suppress(LakeError):  # stopping is fine; deleting outside is not
        t.expire_snapshots(retain_min=1, retain_max=1)
    env.assert_outside_untouched()
    env.assert_table_unchanged(3)


# ------------------------------------------------------------------------------ symlinks


def test_orphan_removal_does_not_follow_a_symlinked_directory(env: Env) -> None:
    t = env.table
    link = Path(t.paths.root) / "dt=evil"
    link.symlink_to(env.outside, target_is_directory=True)
    res = t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert not any(p.startswith(str(link)) for p in res.paths)
    assert link.is_symlink()  # the link itself is left alone too (it may be a relocated directory)
    env.assert_outside_untouched()
    env.assert_table_unchanged(1)


def test_expiry_does_not_delete_through_a_symlinked_bucket_directory(env: Env) -> None:
    t = env.table
    t.write_arrow(batch([1, 2, 3], v="b"))  # replaces every row: snapshot 1's files become expirable
    t.compact(full=True)
    # relocate one bucket directory out of the table, leaving a symlink behind
    e = t.store.file_store_scan().live_entries(t.snapshot_manager.snapshot(1))[0]
    bucket_dir = Path(t.paths.bucket_dir(t.store.partition_path_of(e.partition), e.bucket))
    moved = env.tmp / "moved-bucket"
    bucket_dir.rename(moved)
    bucket_dir.symlink_to(moved, target_is_directory=True)
    moved_before = {p.name: p.read_bytes() for p in moved.iterdir()}
    env.before = env.outside_state()
    with pytest.raises(UnsafePathError, match="symlink"):
        t.expire_snapshots(retain_min=1, retain_max=1)
    assert {p.name: p.read_bytes() for p in moved.iterdir()} == moved_before
    env.assert_outside_untouched()


def _with_index_manifest(env: Env, file_name: str) -> Path:
    """Point the latest snapshot at an index manifest naming ``file_name`` under ``index/`` (as a
    Paimon engine writes for hash indexes), and put an old index file there."""
    t = env.table
    index_file = Path(t.paths.index_dir) / "index-5b0e7f1c-0"
    index_file.parent.mkdir(parents=True, exist_ok=True)
    index_file.write_bytes(b"hash index")
    os.utime(index_file, (OLD, OLD))
    entry = IndexManifestEntry(FileKind.ADD, serialize_row(["d1"], [STRING]), 0, "HASH", file_name, 10, 1)
    name = "index-manifest-5b0e7f1c-0"
    Path(t.paths.manifest_file(name)).write_bytes(encode_index_manifest([entry]))
    path = Path(t.paths.snapshot_file(1))
    d = json.loads(path.read_text())
    d["indexManifest"] = name
    path.write_text(json.dumps(d))
    return index_file


def test_orphan_removal_keeps_index_files_a_snapshot_references(env: Env) -> None:
    index_file = _with_index_manifest(env, "index-5b0e7f1c-0")
    res = env.table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert str(index_file) not in res.paths
    assert index_file.exists()


def test_an_index_manifest_naming_a_file_outside_stops_orphan_removal(env: Env) -> None:
    index_file = _with_index_manifest(env, os.path.relpath(env.victim, env.table.paths.index_dir))
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        env.table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert index_file.exists()
    env.assert_outside_untouched()
