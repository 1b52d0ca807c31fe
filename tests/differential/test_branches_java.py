"""Maintenance of a table with branches, against Paimon Java 0.9.

Java builds the history: writes, a tag ``t1``, a branch ``b1`` created from it
(``createBranch(name, tag)``: the tag's snapshot, tag and schema files copied into
``branch/branch-b1``, so the branch starts on the main branch's manifests and data files), an empty
branch ``fresh`` (``createBranch(name)``), writes to both branches (their files land in the table's
own bucket directory) and a compaction of the main branch, which drops the tag's files from main.

lake_assets then expires the main branch and removes orphans, and Java reads every branch and the
main branch in full afterwards. Its orphan removal deletes exactly the files Java 0.9's
``OrphanFilesClean`` (which walks every branch) deletes on an identical copy.

Java 0.9's expiry of the main branch knows nothing of branches: a branch's files survive only
while the tag it was created from keeps them on the main branch. Java deletes such a tag without a
word, and its next expiry breaks the branch (pinned below); lake_assets keeps every file a branch
names, tag or no tag, and refuses to delete the tag a branch was created from.
"""

from __future__ import annotations

import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError, UnsupportedFeatureError
from lake_assets.ops.orphans import referenced_files
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
IDENT = "db.t"
B1, FRESH = f"{IDENT}$branch_b1", f"{IDENT}$branch_fresh"
RETAIN_ONE = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}
OLD = time.time() - 10 * 86400
TABLE = Path("db.db") / "t"


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _age(root: Path) -> None:
    """Make every file and directory of the table older than any orphan bound we use."""
    for p in [root, *root.rglob("*")]:
        os.utime(p, (OLD, OLD))


def _plant(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"leftover")
    return path


@pytest.fixture(scope="module")
def history(java: PaimonJava, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, pa.Table]]:
    """The warehouse Java built (see the module doc) and what Java reads from each branch of it."""
    wh = tmp_path_factory.mktemp("branches")
    w = str(wh)
    # changelog-producer input: the branch's first snapshot (a copy of the tag's) names a changelog
    # list that the main branch's expiry deletes (Java's keeps only a tag's data and manifests)
    java.create_table(w, IDENT, SCHEMA, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    java.write(w, IDENT, rows(range(0, 10), "a"))  # 1
    java.write(w, IDENT, rows(range(5, 15), "b"))  # 2
    java.create_tag(w, IDENT, "t1")
    java.create_branch(w, IDENT, "b1", tag="t1")
    java.create_branch(w, IDENT, "fresh")
    java.write(w, B1, rows(range(12, 20), "c"))  # b1's snapshot 3: level 0 on top of the tag's files
    java.create_tag(w, B1, "bt")
    java.write(w, FRESH, rows(range(100, 104), "f"))  # fresh's snapshot 1
    java.write(w, IDENT, rows(range(20, 30), "d"))  # 3
    java.compact(w, IDENT, full=True)  # 4: the tag's files leave the main branch
    java.write(w, IDENT, rows(range(0, 3), "e"))  # 5
    assert sorted(java.branches(w, IDENT)) == ["b1", "fresh"]
    expected = {name: java.read(w, name) for name in (IDENT, B1, FRESH)}
    expected["t1"] = java.read(w, IDENT, tag="t1")
    assert expected[B1].num_rows == 20 and expected[FRESH].num_rows == 4
    return wh, expected


def _copy(history: tuple[Path, dict[str, pa.Table]], to: Path) -> Path:
    shutil.copytree(history[0], to)
    return to


def _assert_every_branch_reads(java: PaimonJava, wh: Path, expected: dict[str, pa.Table]) -> None:
    for name in (IDENT, B1, FRESH):
        assert_same_rows(java.read(str(wh), name), expected[name])


def test_expiry_and_orphan_removal_keep_every_branch(java: PaimonJava, history, tmp_path: Path) -> None:
    expected = history[1]
    ours, theirs = _copy(history, tmp_path / "ours"), _copy(history, tmp_path / "theirs")
    t = Catalog(str(ours)).get_table(IDENT)
    assert t.branches() == ["b1", "fresh"]

    result = t.expire_snapshots(retain_min=1, retain_max=1)
    assert result.expired_snapshots == [1, 2, 3, 4]
    assert java.expire_snapshots(str(theirs), IDENT, options=RETAIN_ONE) == 4
    _assert_every_branch_reads(java, ours, expected)
    assert_same_rows(java.read(str(ours), IDENT, tag="t1"), expected["t1"])
    # Java deleted what we deleted, and we kept only files a branch names (snapshot 2's changelog,
    # which the branch's copy of it names and Java's expiry deletes)
    kept_more = _files(ours / TABLE) - _files(theirs / TABLE)
    assert _files(theirs / TABLE) - _files(ours / TABLE) <= {"snapshot/EARLIEST"}
    branch_names = {p.rsplit("/", 1)[-1] for p in referenced_files(t.store, main=False)}
    assert kept_more and {p.rsplit("/", 1)[-1] for p in kept_more} <= branch_names
    assert any(p.startswith("manifest/") for p in kept_more) and any(p.startswith("bucket-0/changelog-")
                                                                   for p in kept_more)

    # orphans: strays in the table's and a branch's directories, everything old enough
    for wh in (ours, theirs):
        root = wh / TABLE
        _plant(root / "bucket-0" / "data-stray-0.parquet")
        _plant(root / "manifest" / "manifest-stray-0")
        _plant(root / "branch" / "branch-b1" / "snapshot" / ".snapshot-9.0f1e.tmp")
        _plant(root / "branch" / "branch-fresh" / "changelog" / "stray")
        _age(root)
    bound = int((time.time() - 3600) * 1000)
    java_set = java.remove_orphan_files(str(ours), IDENT, older_than_ms=bound, dry_run=True)
    found = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=True).paths
    assert sorted(found) == sorted(java_set)
    stray = {"bucket-0/data-stray-0.parquet", "manifest/manifest-stray-0",
             "branch/branch-b1/snapshot/.snapshot-9.0f1e.tmp", "branch/branch-fresh/changelog/stray"}
    assert stray <= {str(Path(p).relative_to(ours / TABLE)) for p in found}
    # On Java's own copy (after Java's expiry, which deleted snapshot 2's changelog list) Java 0.9
    # also deletes t1's base and delta lists: a tag (and b1's copies of it) whose changelog list is
    # gone counts for nothing in 0.9's OrphanFilesClean (one read of all three lists, FileNotFound
    # drops the whole snapshot), so it would break tag t1 and branch b1. Paimon 1.0+ reads each
    # list on its own (#4181) and keeps them; so does lake_assets.
    t_theirs = Catalog(str(theirs)).get_table(IDENT)
    ours_on_theirs = t_theirs.remove_orphan_files(older_than=timedelta(hours=1), dry_run=True).paths
    java_on_theirs = java.remove_orphan_files(str(theirs), IDENT, older_than_ms=bound, dry_run=True)
    t1 = t_theirs.tags()["t1"]
    assert set(java_on_theirs) - set(ours_on_theirs) == {
        str(theirs / TABLE / "manifest" / n) for n in (t1.base_manifest_list, t1.delta_manifest_list)}
    assert set(ours_on_theirs) <= set(java_on_theirs)

    done = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False).paths
    assert sorted(done) == sorted(found)
    _assert_every_branch_reads(java, ours, expected)
    assert_same_rows(java.read(str(ours), IDENT, tag="t1"), expected["t1"])  # what b1 started from
    assert java.remove_orphan_files(str(ours), IDENT, older_than_ms=bound, dry_run=True) == []
    assert_same_rows(t.refresh().to_arrow(), expected[IDENT])


def test_expiry_keeps_a_branch_whose_tag_java_deleted(java: PaimonJava, history, tmp_path: Path) -> None:
    """Java deletes the tag b1 was created from (its snapshot is still retained, so no file goes)."""
    expected = history[1]
    ours, theirs = _copy(history, tmp_path / "ours"), _copy(history, tmp_path / "theirs")
    for wh in (ours, theirs):
        java.delete_tag(str(wh), IDENT, "t1")

    # Java 0.9's expiry of main then deletes files b1 reads: the branch is broken
    java.expire_snapshots(str(theirs), IDENT, options=RETAIN_ONE)
    with pytest.raises(JavaError):
        java.read(str(theirs), B1)

    t = Catalog(str(ours)).get_table(IDENT)
    t.expire_snapshots(retain_min=1, retain_max=1)
    _assert_every_branch_reads(java, ours, expected)
    _age(ours / TABLE)
    t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False)
    _assert_every_branch_reads(java, ours, expected)
    assert java.remove_orphan_files(str(ours), IDENT, older_than_ms=int((time.time() - 3600) * 1000),
                                    dry_run=True) == []


def test_the_tag_a_branch_was_created_from_is_kept(java: PaimonJava, history, tmp_path: Path) -> None:
    expected = history[1]
    wh = _copy(history, tmp_path / "wh")
    t = Catalog(str(wh)).get_table(IDENT)
    before = _files(wh / TABLE)
    refused = r"Cannot delete tag '{}' of db\.t: branch 'b1' was created from its snapshot 2"
    with pytest.raises(InvalidArgumentError, match=refused.format("t1")):
        t.delete_tag("t1")
    assert _files(wh / TABLE) == before
    # another tag of the same snapshot keeps the files on the main branch: t1 may go
    java.create_tag(str(wh), IDENT, "t1-again", snapshot_id=2)
    t.delete_tag("t1")
    t.expire_snapshots(retain_min=1, retain_max=1)  # t1-again now alone keeps snapshot 2's files on main
    before = _files(wh / TABLE)
    with pytest.raises(InvalidArgumentError, match=refused.format("t1-again")):
        t.delete_tag("t1-again")
    assert _files(wh / TABLE) == before
    _assert_every_branch_reads(java, wh, expected)
    # why: Java 0.9 deletes it, with the files only it kept on main, and the branch is broken
    java.delete_tag(str(wh), IDENT, "t1-again")
    with pytest.raises(JavaError):
        java.read(str(wh), B1)


def test_tag_deletion_keeps_what_a_branch_reads(java: PaimonJava, history, tmp_path: Path) -> None:
    """With the tag b1 was created from gone (Java deleted it while its snapshot was retained),
    deleting another tag frees only the files no branch names: b1 still reads the files of
    snapshots 1 and 2 that the deleted tag's snapshot 3 held too."""
    expected = history[1]
    wh = _copy(history, tmp_path / "wh")
    java.delete_tag(str(wh), IDENT, "t1")
    java.create_tag(str(wh), IDENT, "t-late", snapshot_id=3)  # b1 has a snapshot 3 too: another commit
    t = Catalog(str(wh)).get_table(IDENT)
    t.expire_snapshots(retain_min=1, retain_max=1)
    result = t.delete_tag("t-late")
    assert len(result.deleted_data_files) == 1  # the file main's snapshot 3 wrote
    assert result.deleted_manifests  # and snapshot 3's own lists
    _assert_every_branch_reads(java, wh, expected)


def test_a_branch_opens_as_a_table_that_is_not_maintained(history, tmp_path: Path) -> None:
    """Opened by its identifier, a branch reads what Java read (tests/differential/
    test_branch_tables_java.py has the rest); orphan removal is the main branch's: refused on it."""
    wh = _copy(history, tmp_path / "wh")
    branch = Catalog(str(wh)).get_table(B1)
    assert_same_rows(branch.to_arrow(), history[1][B1])
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot remove orphan files of db\.t\$branch_b1: "):
        branch.remove_orphan_files(dry_run=False, allow_recent=True)


def test_a_rollback_that_would_delete_a_branchs_tag_is_refused(java: PaimonJava, history, tmp_path: Path) -> None:
    """Java 0.9's rollback to snapshot 1 deletes t1 (and, here, the files of snapshot 2, which b1
    reads); lake_assets refuses it and changes nothing. A rollback keeping t1 goes ahead."""
    expected = history[1]
    ours, theirs = _copy(history, tmp_path / "ours"), _copy(history, tmp_path / "theirs")
    t = Catalog(str(ours)).get_table(IDENT)
    before = _files(ours / TABLE)
    with pytest.raises(InvalidArgumentError, match=r"Cannot roll back db\.t to snapshot 1: it deletes tag 't1' "
                                                   r"\(snapshot 2\), and branch 'b1' was created from it"):
        t.rollback_to(snapshot_id=1)
    assert _files(ours / TABLE) == before
    t.rollback_to(tag="t1")  # t1 stays: allowed
    _assert_every_branch_reads(java, ours, {**expected, IDENT: expected["t1"]})
    java.rollback(str(theirs), IDENT, snapshot_id=1)
    with pytest.raises(JavaError):
        java.read(str(theirs), B1)
