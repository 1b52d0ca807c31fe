"""Deleting a tag frees the files only it kept (Paimon's TagManager.deleteTag with TagDeletion)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError, InvalidArgumentError, SnapshotNotFoundError
from lake_assets.store import manifest_io

_EVERYTHING = datetime.now() + timedelta(days=1)


@pytest.fixture
def kv(catalog: Catalog):
    # full compaction at every commit: each snapshot replaces the bucket's files, so a tag of an
    # expired snapshot is the only holder of its files
    return catalog.create_table(
        "db.kv", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
        options={"bucket": "2", "full-compaction.delta-commits": "1"},
    )


def _write(t, ks, v):
    return t.write_arrow(pa.table({"k": ks, "v": [v] * len(ks)}, schema=t.arrow_schema))


def _files(t) -> set[str]:
    return {s.path for s in t.file_io.walk_files(t.paths.root)}


def _data_files(t) -> set[str]:
    return {p for p in _files(t) if "/bucket-" in p}


def _state(t, **kw) -> dict:
    return {r["k"]: r["v"] for r in t.to_arrow(**kw).to_pylist()}


def _expire_all_but_latest(t) -> None:
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=_EVERYTHING)


def test_deleting_the_only_holder_frees_its_files_and_leaves_no_orphans(kv):
    _write(kv, [1, 2, 3], 1)
    kv.create_tag("v1")
    for i in range(2, 5):
        _write(kv, [1, 2, 3], i)
    _expire_all_but_latest(kv)
    held_by_tag = _data_files(kv)
    before = _files(kv)
    assert _state(kv, tag="v1") == {1: 1, 2: 1, 3: 1}

    result = kv.delete_tag("v1")

    assert result.deleted_data_files and result.deleted_manifests and result.files_kept is None
    gone = before - _files(kv)
    assert gone == set(result.deleted_data_files) | set(result.deleted_manifests) | {kv.paths.tag_file("v1")}
    assert held_by_tag - _data_files(kv) == set(result.deleted_data_files)
    assert "v1" not in kv.tags()
    assert _state(kv) == {1: 4, 2: 4, 3: 4}
    # nothing is left for orphan removal: the deletion took exactly what only the tag held
    assert kv.remove_orphan_files(older_than=timedelta(0)).paths == []


def test_a_tag_of_a_retained_snapshot_frees_nothing(kv):
    _write(kv, [1], 1)
    kv.create_tag("v1")
    _write(kv, [1], 2)
    before = _files(kv)
    result = kv.delete_tag("v1")
    assert result.summary()["deleted_data_files"] == 0
    assert _files(kv) == before - {kv.paths.tag_file("v1")}
    assert _state(kv, snapshot_id=1) == {1: 1}


def test_another_tag_of_the_same_snapshot_keeps_the_files(kv):
    _write(kv, [1, 2], 1)
    kv.create_tag("a")
    kv.create_tag("b")
    _write(kv, [1, 2], 2)
    _expire_all_but_latest(kv)
    before = _files(kv)
    assert not kv.delete_tag("a").deleted_data_files
    assert _files(kv) == before - {kv.paths.tag_file("a")}
    assert _state(kv, tag="b") == {1: 1, 2: 1}


def test_files_a_neighbouring_tag_shares_are_kept(catalog: Catalog):
    # no compaction: the files of the first snapshot stay live in every later one
    t = catalog.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", "write-only": "true"})
    _write(t, [1, 2], 1)
    t.create_tag("v1")
    _write(t, [3], 2)
    t.create_tag("v2")
    t.compact(full=True)
    _write(t, [4], 3)
    _expire_all_but_latest(t)
    result = t.delete_tag("v1")
    # every file of v1 is in v2: nothing of the data goes
    assert result.deleted_data_files == []
    assert _state(t, tag="v2") == {1: 1, 2: 1, 3: 2}
    result = t.delete_tag("v2")
    assert len(result.deleted_data_files) == 2  # the two level-0 files the full compaction replaced
    assert _state(t) == {1: 1, 2: 1, 3: 2, 4: 3}
    assert t.remove_orphan_files(older_than=timedelta(0)).paths == []


def test_unreadable_metadata_keeps_the_tag_and_every_file(kv):
    _write(kv, [1], 1)
    kv.create_tag("v1")
    _write(kv, [1], 2)
    kv.create_tag("v2")
    _write(kv, [1], 3)
    _expire_all_but_latest(kv)
    v2 = kv.tags()["v2"]
    kv.file_io.write_bytes(kv.paths.manifest_file(v2.base_manifest_list), b"not avro")
    manifest_io._cache_slot.cache_clear()  # the damage must be seen on storage
    before = _files(kv)
    with pytest.raises(CorruptMetadataError, match=r"tag 'v1'.*kept and nothing was deleted"):
        kv.delete_tag("v1")
    assert _files(kv) == before
    assert "v1" in kv.tags()


def test_a_branch_made_from_the_tag_keeps_it(kv):
    """As Paimon's createBranch(name, tag): the tag's and its snapshot's files copied into the
    branch. The tag is then the only thing keeping the branch's files from Java's expiry."""
    _write(kv, [1], 1)
    tag = kv.create_tag("v1")
    _write(kv, [1], 2)
    _expire_all_but_latest(kv)
    branch = kv.paths.root + "/branch/branch-dev"
    fio = kv.file_io
    fio.write_bytes(f"{branch}/schema/schema-0", fio.read_bytes(kv.store.paths.schema_file(0)))
    fio.write_bytes(f"{branch}/tag/tag-v1", fio.read_bytes(kv.paths.tag_file("v1")))
    fio.write_bytes(f"{branch}/snapshot/snapshot-{tag.snapshot.id}", tag.snapshot.to_json().encode())
    before = _files(kv)
    with pytest.raises(InvalidArgumentError, match=rf"branch 'dev' was created from its snapshot {tag.snapshot.id}"):
        kv.delete_tag("v1")
    assert _files(kv) == before and "v1" in kv.tags()


def test_a_crash_after_the_tag_file_leaves_orphans_only(kv):
    _write(kv, [1, 2], 1)
    kv.create_tag("v1")
    _write(kv, [1, 2], 2)
    _expire_all_but_latest(kv)

    class Crash(Exception):
        pass

    def hook(step: str) -> None:
        if step == "tag_delete.after_tag_file":
            raise Crash(step)

    kv.store.fault_hook = hook
    with pytest.raises(Crash):
        kv.delete_tag("v1")
    kv.store.fault_hook = None
    assert "v1" not in kv.tags()
    assert _state(kv) == {1: 2, 2: 2}
    orphans = kv.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert orphans.paths
    assert _state(kv) == {1: 2, 2: 2}
    with pytest.raises(SnapshotNotFoundError):
        kv.delete_tag("v1")


def test_retention_of_automatic_tags_frees_their_files(catalog: Catalog):
    t = catalog.create_table(
        "db.auto", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
        options={"bucket": "1", "full-compaction.delta-commits": "1", "tag.automatic-creation": "process-time",
                 "tag.creation-period": "daily", "tag.num-retained-max": "1"},
    )
    _write(t, [1], 1)
    t.create_tag("2020-01-01")  # named like an automatic daily tag: counted by tag.num-retained-max
    only_the_tag = _live(t, t.tags()["2020-01-01"])
    _write(t, [1], 2)
    _expire_all_but_latest(t)
    assert only_the_tag <= _data_files(t)
    _write(t, [1], 3)  # creates today's automatic tag, then trims the oldest one
    assert "2020-01-01" not in t.tags()
    assert not only_the_tag & _data_files(t)
    assert _state(t) == {1: 3}
    # expiry later meets DELETE entries of files the tag deletion already removed: no harm
    _expire_all_but_latest(t)
    assert _state(t) == {1: 3}
    assert t.remove_orphan_files(older_than=timedelta(0)).paths == []


def _live(t, snap) -> set[str]:
    return {t.store.data_file_path(e.partition, e.bucket, e.file) for e in t.store.file_store_scan().live_entries(snap)}
