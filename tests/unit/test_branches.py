"""Branches as maintenance of the main branch sees them (`lake_assets.store.branches`), on branches
laid out as Paimon's ``BranchManager.createBranch`` lays them out (tests/differential/
test_branches_java.py runs Paimon Java 0.9 itself)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError, NoSuchTableError

_EVERYTHING = datetime.now() + timedelta(days=1)


@pytest.fixture
def kv(catalog: Catalog):
    return catalog.create_table("db.kv", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                                options={"bucket": "1", "full-compaction.delta-commits": "1"})


def _write(t, ks, v):
    return t.write_arrow(pa.table({"k": ks, "v": [v] * len(ks)}, schema=t.arrow_schema))


def _files(t) -> set[str]:
    return {s.path for s in t.file_io.walk_files(t.paths.root)}


def _branch_from_snapshot(t, name: str, snapshot_id: int) -> str:
    """Paimon's createBranch(name, tag), but from a snapshot: its file and its schema copied."""
    branch = f"{t.paths.root}/branch/branch-{name}"
    fio = t.file_io
    fio.write_bytes(f"{branch}/schema/schema-0", fio.read_bytes(t.store.paths.schema_file(0)))
    fio.write_bytes(f"{branch}/snapshot/snapshot-{snapshot_id}", fio.read_bytes(t.paths.snapshot_file(snapshot_id)))
    return branch


def test_a_table_without_branches(kv) -> None:
    _write(kv, [1], 1)
    assert kv.branches() == []
    kv.file_io.write_bytes(f"{kv.paths.root}/branch/branch-/x", b"")  # no name: no branch
    assert kv.branches() == []


def test_expiry_and_orphan_removal_keep_a_branchs_files_without_any_tag(kv) -> None:
    """A branch whose snapshot no tag of the main branch holds (its tag was deleted): every file the
    branch names stays, and the branch reads as it did."""
    _write(kv, [1, 2], 1)
    branch = _branch_from_snapshot(kv, "dev", 1)
    _write(kv, [1, 2], 2)  # and a full compaction: snapshot 1's files leave the main branch
    _write(kv, [3], 3)
    assert kv.branches() == ["dev"]
    held = kv.to_arrow(snapshot_id=1)
    result = kv.expire_snapshots(retain_min=1, retain_max=1, older_than=_EVERYTHING)
    assert result.expired_snapshots == list(range(1, kv.latest_snapshot().id))
    orphans = kv.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert orphans.paths == []
    # the branch's snapshot still reads in full: put it back on the main branch to read it
    kv.file_io.write_bytes(kv.paths.snapshot_file(1), kv.file_io.read_bytes(f"{branch}/snapshot/snapshot-1"))
    assert kv.to_arrow(snapshot_id=1).sort_by("k") == held.sort_by("k")


def test_without_the_branch_the_same_expiry_deletes_those_files(kv) -> None:
    """The control of the test above: the files are kept because of the branch."""
    _write(kv, [1, 2], 1)
    _write(kv, [1, 2], 2)
    _write(kv, [3], 3)
    result = kv.expire_snapshots(retain_min=1, retain_max=1, older_than=_EVERYTHING)
    assert result.deleted_data_files and result.deleted_manifests


def test_a_branch_without_a_schema_stops_maintenance(kv) -> None:
    """Paimon's orphan clean aborts on such a branch; so do lake_assets' expiry and orphan removal,
    and nothing changes."""
    _write(kv, [1], 1)
    _write(kv, [1], 2)
    kv.file_io.write_bytes(f"{kv.paths.root}/branch/branch-broken/snapshot/snapshot-1",
                           kv.file_io.read_bytes(kv.paths.snapshot_file(1)))
    before = _files(kv)
    with pytest.raises(CorruptMetadataError, match=r"Branch 'broken' of db\.kv has no schema file"):
        kv.expire_snapshots(retain_min=1, retain_max=1, older_than=_EVERYTHING)
    with pytest.raises(CorruptMetadataError, match=r"Branch 'broken' of db\.kv has no schema file"):
        kv.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert _files(kv) == before


def test_orphan_removal_cleans_a_branchs_snapshot_directory(kv) -> None:
    _write(kv, [1], 1)
    branch = _branch_from_snapshot(kv, "dev", 1)
    stray = f"{branch}/snapshot/.snapshot-2.0f1e.tmp"
    kept = [f"{branch}/snapshot/LATEST", f"{branch}/schema/.schema-1.0f1e.tmp"]  # a hint; schema/ is not listed
    for p in [stray, *kept]:
        kv.file_io.write_bytes(p, b"1")
        os.utime(p, (0, 0))  # old enough whatever the clock's granularity
    found = kv.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert found.paths == [stray]
    assert all(kv.file_io.exists(p) for p in kept)


def test_a_missing_branch_is_named(catalog: Catalog, kv) -> None:
    with pytest.raises(NoSuchTableError, match=r"Branch 'dev' of db\.kv does not exist"):
        catalog.get_table("db.kv$branch_dev")


def test_a_symlinked_branch_counts_but_is_never_cleaned_through_the_link(kv, tmp_path) -> None:
    _write(kv, [1, 2], 1)
    elsewhere = tmp_path / "elsewhere"
    moved = _branch_from_snapshot(kv, "dev", 1)
    os.rename(moved, elsewhere)
    os.symlink(elsewhere, moved)
    stray = elsewhere / "snapshot" / ".snapshot-2.0f1e.tmp"
    stray.write_bytes(b"1")
    os.utime(stray, (0, 0))
    _write(kv, [1, 2], 2)
    assert kv.branches() == ["dev"]
    kv.expire_snapshots(retain_min=1, retain_max=1, older_than=_EVERYTHING)
    assert kv.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths == []
    assert stray.exists()
    kv.file_io.write_bytes(kv.paths.snapshot_file(1), (elsewhere / "snapshot" / "snapshot-1").read_bytes())
    assert kv.to_arrow(snapshot_id=1).num_rows == 2  # the branch's files are all there


def test_tag_expiry_keeps_the_tag_a_branch_was_created_from(kv, caplog) -> None:
    """Tags past ``tag.default-time-retained`` go (Paimon's TagTimeExpire), but not the one a branch
    was made from: kept with a warning, and the others still expire."""
    from lake_assets.ops.tag_auto import expire_tags

    _write(kv, [1], 1)
    base = kv.create_tag("base", time_retained=timedelta(seconds=1))
    _write(kv, [1], 2)
    kv.create_tag("other", time_retained=timedelta(seconds=1))
    branch = _branch_from_snapshot(kv, "dev", base.snapshot.id)
    kv.file_io.write_bytes(f"{branch}/tag/tag-base", kv.file_io.read_bytes(kv.paths.tag_file("base")))
    assert expire_tags(kv.store, now=datetime.now() + timedelta(days=1)) == ["other"]
    assert list(kv.tags()) == ["base"]
    assert "Tag 'base' of db.kv is past its retention but kept: Cannot delete tag 'base'" in caplog.text


def test_a_damaged_branch_stops_maintenance_naming_it(kv) -> None:
    """A branch snapshot naming a manifest list that is gone (another engine's expiry deleted it):
    what the branch reads cannot be told, so expiry and orphan removal delete nothing."""
    _write(kv, [1], 1)
    branch = _branch_from_snapshot(kv, "dev", 1)
    snap = json.loads(kv.file_io.read_bytes(f"{branch}/snapshot/snapshot-1"))
    snap["baseManifestList"] = "manifest-list-gone-0"
    kv.file_io.write_bytes(f"{branch}/snapshot/snapshot-1", json.dumps(snap).encode())
    _write(kv, [1], 2)
    before = _files(kv)
    with pytest.raises(CorruptMetadataError, match=r"snapshot 1 of branch 'dev' of db\.kv: the branch is damaged"):
        kv.expire_snapshots(retain_min=1, retain_max=1, older_than=_EVERYTHING)
    with pytest.raises(CorruptMetadataError, match=r"snapshot 1 of branch 'dev' of db\.kv: the branch is damaged"):
        kv.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert _files(kv) == before
