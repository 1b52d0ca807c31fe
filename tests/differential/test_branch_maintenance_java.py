"""Rollback, tag deletion and schema changes of a branch (``db.t$branch_b1``), against Paimon Java 0.9.

Java builds the history once: two writes to the main branch, a tag ``t1``, a branch ``b1`` made from
it (its snapshot 2 and tag ``t1`` are copies of main's), two writes to the branch (3, tagged ``bt``,
and 4) and a write and full compaction of main (its 3 and 4). Each test works on a copy: what
lake_assets does on the branch is compared with what Java 0.9 does on another copy (the metadata it
leaves) and read back by Java, and the main branch reads as before.
"""

from __future__ import annotations

import json
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
IDENT = "db.t"
B1 = f"{IDENT}$branch_b1"
TABLE = Path("db.db") / "t"
BRANCH = TABLE / "branch" / "branch-b1"


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


@pytest.fixture(scope="module")
def history(java: PaimonJava, tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("branch_maintenance") / "wh"
    w = str(wh)
    java.create_table(w, IDENT, SCHEMA, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    java.write(w, IDENT, rows(range(0, 10), "a"))  # 1
    java.write(w, IDENT, rows(range(5, 15), "b"))  # 2
    java.create_tag(w, IDENT, "t1")
    java.create_branch(w, IDENT, "b1", tag="t1")
    java.write(w, B1, rows(range(12, 20), "c"))  # b1's 3
    java.create_tag(w, B1, "bt")
    java.write(w, B1, rows(range(0, 4), "x"))  # b1's 4
    java.write(w, IDENT, rows(range(20, 30), "d"))  # main's 3
    java.compact(w, IDENT, full=True)  # main's 4
    return wh


def _copies(history: Path, tmp_path: Path) -> tuple[Path, Path]:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(history, ours)
    shutil.copytree(history, theirs)
    return ours, theirs


@pytest.mark.parametrize("target", [{"snapshot_id": 3}, {"tag": "bt"}, {"snapshot_id": 2}])
def test_rollback_of_the_branch_leaves_what_java_leaves(
        java: PaimonJava, history: Path, tmp_path: Path, target: dict[str, int | str]) -> None:
    """Snapshots, tags and changelogs of the branch newer than the target go, as Java 0.9's
    rollback of the branch; main's files, snapshots and tags stay (ours deletes no data file)."""
    ours, theirs = _copies(history, tmp_path)
    main_before = java.read(str(ours), IDENT)
    # Java 0.9 reads a tag of a branch from main's tag directory: by its snapshot id (bt is 3)
    at_target = java.read(str(ours), B1, snapshot_id=int(target.get("snapshot_id", 3)))
    branch = Catalog(str(ours)).get_table(B1)
    rolled = branch.rollback_to(**target)  # type: ignore[arg-type]
    java.rollback(str(theirs), B1, **target)  # type: ignore[arg-type]
    for d in ("snapshot", "tag", "changelog", "schema"):
        assert _names(ours / BRANCH / d) == _names(theirs / BRANCH / d), d
    assert [s["id"] for s in java.snapshots(str(ours), B1)] == list(range(2, rolled.id + 1))
    assert java.tags(str(ours), B1) == java.tags(str(theirs), B1)
    assert_same_rows(java.read(str(ours), B1), at_target)
    assert_same_rows(Catalog(str(ours)).get_table(B1).to_arrow(), at_target)
    # main untouched: its snapshots, its tag, what it reads
    assert [s["id"] for s in java.snapshots(str(ours), IDENT)] == [1, 2, 3, 4]
    assert_same_rows(java.read(str(ours), IDENT), main_before)
    assert_same_rows(java.read(str(ours), IDENT, tag="t1"), java.read(str(theirs), IDENT, tag="t1"))
    # Java writes on the rolled-back branch (the next id), we read what it reads
    java.write(str(ours), B1, rows(range(50, 52), "y"))
    assert_same_rows(Catalog(str(ours)).get_table(B1).to_arrow(), java.read(str(ours), B1))
    assert Catalog(str(ours)).get_table(B1).latest_snapshot().id == rolled.id + 1
    # main's orphan removal (ours and Java's) collects the branch's discarded files, main and b1 read on
    removed = Catalog(str(ours)).get_table(IDENT).remove_orphan_files(
        older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert any(Path(p).name.startswith("data-") for p in removed.paths)  # the files of b1's 4 (and 3)
    java.remove_orphan_files(str(ours), IDENT, older_than_ms=int(time.time() * 1000) + 60_000)
    assert_same_rows(java.read(str(ours), IDENT), main_before)
    assert_same_rows(java.read(str(ours), B1), Catalog(str(ours)).get_table(B1).to_arrow())


def test_rollback_to_as_latest_of_the_branch_is_read_by_java(java: PaimonJava, history: Path, tmp_path: Path) -> None:
    """A new branch snapshot with the files of its snapshot 2 (main's t1, copied): Java reads it;
    the expiry of the branch and of main, and main's orphan removal, keep what it re-adds; Java
    writes on top (Java 0.9 has no rollback_to_as_latest: the branch reads as its snapshot 2)."""
    ours = tmp_path / "ours"
    shutil.copytree(history, ours)
    w = str(ours)
    at_2 = java.read(w, B1, snapshot_id=2)
    branch = Catalog(w).get_table(B1)
    assert branch.rollback_to_as_latest(snapshot_id=2).id == 5
    assert_same_rows(java.read(w, B1), at_2)
    assert any(n.startswith("rollback-to-as-latest-2-") for n in java.tags(w, B1))
    assert java.tags(w, IDENT) == {"t1": 2}
    branch.expire_snapshots(retain_min=1, retain_max=1)
    main = Catalog(w).get_table(IDENT)
    main.expire_snapshots(retain_min=1, retain_max=1)
    main.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert_same_rows(java.read(w, B1), at_2)
    java.write(w, B1, rows(range(3), "q"))
    assert_same_rows(Catalog(w).get_table(B1).to_arrow(), java.read(w, B1))


def test_a_branch_tag_deletion_frees_what_only_it_held_and_keeps_mains_files(
        java: PaimonJava, history: Path, tmp_path: Path) -> None:
    """After the branch's full compaction and expiry, its tag ``bt`` alone holds the file of the
    branch's write 3, and its tag ``t1`` (a copy of main's) only files main still names: deleting
    ``bt`` deletes that one file, deleting ``t1`` none; Java reads main's history and the branch."""
    ours = tmp_path / "ours"
    shutil.copytree(history, ours)
    w = str(ours)
    branch = Catalog(w).get_table(B1)
    snap3 = branch.snapshot_manager.snapshot(3)
    written_by_3 = {e.file.file_name for e in branch.store.file_store_scan().delta_entries(snap3)}
    branch.compact(full=True)  # b1's 5
    assert branch.expire_snapshots(retain_min=1, retain_max=1).expired_snapshots == [2, 3, 4]
    main_reads = {sid: java.read(w, IDENT, snapshot_id=sid) for sid in (1, 2, 3, 4)}
    result = branch.delete_tag("bt")
    assert {Path(p).name for p in result.deleted_data_files} == written_by_3
    assert not (ours / BRANCH / "tag" / "tag-bt").exists()
    assert branch.delete_tag("t1").deleted_data_files == []
    assert (ours / TABLE / "tag" / "tag-t1").is_file()  # main's own tag
    assert java.tags(w, B1) == {} and java.tags(w, IDENT) == {"t1": 2}
    for sid, table in main_reads.items():
        assert_same_rows(java.read(w, IDENT, snapshot_id=sid), table)
    assert_same_rows(java.read(w, IDENT, tag="t1"), main_reads[2])
    assert_same_rows(java.read(w, B1), Catalog(w).get_table(B1).to_arrow())


def test_a_schema_change_of_the_branch_writes_what_java_writes(
        java: PaimonJava, history: Path, tmp_path: Path) -> None:
    """Adding a column to the branch writes ``schema-1`` in the branch's ``schema/`` (Java 0.9's
    ``SchemaManager`` of the branch does the same), main keeps its schema; both engines write and
    read the new column on the branch, and main reads as before."""
    ours, theirs = _copies(history, tmp_path)
    main_before = java.read(str(ours), IDENT)
    branch = Catalog(str(ours)).get_table(B1)
    branch.update_schema().add_column("n", pa.int32()).set_option("snapshot.num-retained.max", "50").commit()
    java.alter_table(str(theirs), B1, {"change": "add_column", "name": "n", "type": "INT"},
                     {"change": "set_option", "key": "snapshot.num-retained.max", "value": "50"})
    assert _names(ours / BRANCH / "schema") == _names(theirs / BRANCH / "schema") == ["schema-0", "schema-1"]
    ours_schema, theirs_schema = (json.loads((wh / BRANCH / "schema" / "schema-1").read_text())
                                  for wh in (ours, theirs))
    assert ours_schema.pop("timeMillis") > 0 and theirs_schema.pop("timeMillis") > 0
    assert ours_schema == theirs_schema
    assert _names(ours / TABLE / "schema") == ["schema-0"]
    assert [f["name"] for f in java.schema(str(ours), IDENT)["fields"]] == ["id", "v"]
    wide = pa.schema([*SCHEMA, ("n", pa.int32())])
    branch = Catalog(str(ours)).get_table(B1)
    branch.write_arrow(pa.table({"id": [1], "v": ["z1"], "n": [7]}, schema=wide))
    java.write(str(ours), B1, pa.table({"id": [2], "v": ["z2"], "n": [8]}, schema=wide))
    got = Catalog(str(ours)).get_table(B1).to_arrow()
    assert got.column_names == ["id", "v", "n"]
    assert_same_rows(java.read(str(ours), B1), got)
    assert {r["id"]: r["n"] for r in got.to_pylist() if r["n"] is not None} == {1: 7, 2: 8}
    assert_same_rows(java.read(str(ours), IDENT), main_before)
    main = Catalog(str(ours)).get_table(IDENT)
    assert main.to_arrow().column_names == ["id", "v"]
    # main's maintenance reads the branch's manifests (files of the branch's schema 1) and keeps them
    main.expire_snapshots(retain_min=1, retain_max=1)
    main.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert_same_rows(java.read(str(ours), B1), got)
    assert_same_rows(java.read(str(ours), IDENT), main_before)


def _metadata(wh: Path) -> dict[str, bytes]:
    """The main branch's snapshot, schema and tag files (hints left out) and its changelogs."""
    out = {}
    for d in ("snapshot", "schema", "tag", "changelog"):
        for p in sorted((wh / TABLE / d).glob("*-*")) if (wh / TABLE / d).exists() else ():
            out[f"{d}/{p.name}"] = p.read_bytes()
    return out


def test_fast_forward_writes_what_java_writes(java: PaimonJava, history: Path, tmp_path: Path) -> None:
    """After the branch's schema change and a main tag ``t3`` of a discarded snapshot: main's
    snapshots 2-4, its schema 0 and tags t1 and t3 go, the branch's snapshots 2-4, schemas 0-1 and
    tags t1 and bt are copied, exactly the files Java 0.9's fastForward leaves. Java's main
    ``EARLIEST`` hint is the branch's (2), hiding main's snapshot 1 from every engine; ours names 1."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(history, ours)
    java.alter_table(str(ours), B1, {"change": "add_column", "name": "n", "type": "INT"})
    java.write(str(ours), B1, pa.table({"id": [40], "v": ["n40"], "n": [4]},
                                       schema=pa.schema([*SCHEMA, ("n", pa.int32())])))
    java.create_tag(str(ours), IDENT, "t3", snapshot_id=3)
    shutil.copytree(ours, theirs)
    branch_rows = java.read(str(ours), B1)
    main_1 = java.read(str(ours), IDENT, snapshot_id=1)
    latest = Catalog(str(ours)).get_table(IDENT).fast_forward("b1")
    java.fast_forward(str(theirs), IDENT, "b1")
    branch_snapshots = sorted(p.name for p in (ours / BRANCH / "snapshot").glob("snapshot-*"))
    assert latest.id == java.snapshots(str(theirs), IDENT)[-1]["id"] == len(branch_snapshots) + 1
    assert _metadata(ours) == _metadata(theirs)
    assert sorted(_metadata(ours)) == sorted(["schema/schema-0", "schema/schema-1", "snapshot/snapshot-1",
                                              *(f"snapshot/{n}" for n in branch_snapshots), "tag/tag-bt", "tag/tag-t1"])
    assert (theirs / TABLE / "snapshot" / "EARLIEST").read_text() == "2"  # Java's hint hides snapshot 1
    assert (ours / TABLE / "snapshot" / "EARLIEST").read_text() == "1"
    assert (ours / TABLE / "snapshot" / "LATEST").read_text() == str(latest.id)
    main = Catalog(str(ours)).get_table(IDENT)
    assert_same_rows(main.to_arrow(), branch_rows)
    assert_same_rows(java.read(str(ours), IDENT), branch_rows)
    assert_same_rows(java.read(str(ours), IDENT, snapshot_id=1), main_1)
    assert java.tags(str(ours), IDENT) == {"bt": 3, "t1": 2}
    assert [f["name"] for f in java.schema(str(ours), IDENT)["fields"]] == ["id", "v", "n"]
    # Java writes on the fast-forwarded main, we read it; main's orphan removal keeps both histories' reads
    java.write(str(ours), IDENT, pa.table({"id": [41], "v": ["m"], "n": [5]},
                                          schema=pa.schema([*SCHEMA, ("n", pa.int32())])))
    assert_same_rows(Catalog(str(ours)).get_table(IDENT).to_arrow(), java.read(str(ours), IDENT))
    removed = Catalog(str(ours)).get_table(IDENT).remove_orphan_files(
        older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert any(Path(p).name.startswith("data-") for p in removed.paths)  # main's discarded writes
    assert_same_rows(java.read(str(ours), IDENT, snapshot_id=1), main_1)
    assert_same_rows(java.read(str(ours), B1), branch_rows)


def test_fast_forward_refusals_change_nothing(java: PaimonJava, history: Path, tmp_path: Path) -> None:
    """What Java 0.9 refuses (main, a missing branch) or breaks (a branch without snapshots: a
    NullPointerException; an empty branch's own history after main's; a tag another branch was
    created from deleted) is refused naming it, and nothing changes."""
    from lake_assets.errors import InvalidArgumentError, NoSuchTableError

    ours = tmp_path / "ours"
    shutil.copytree(history, ours)
    w = str(ours)
    t = Catalog(w).get_table(IDENT)
    t.create_branch("empty")
    java.create_tag(w, IDENT, "t3", snapshot_id=3)
    t.create_branch("from3", tag="t3")
    before = _metadata(ours)
    with pytest.raises(InvalidArgumentError, match=r"to branch 'main': it is the main branch"):
        t.fast_forward("main")
    with pytest.raises(NoSuchTableError, match=r"to branch 'nope': it does not exist"):
        t.fast_forward("nope")
    with pytest.raises(InvalidArgumentError, match=r"branch 'empty': the branch has no snapshot"):
        t.fast_forward("empty")
    # b1 forks at 2: main's t3 (3) goes, and branch from3 was created from it
    with pytest.raises(InvalidArgumentError, match=r"deletes or replaces the main branch's tag 't3' \(snapshot 3\), "
                                                   r"and branch 'from3' was created from it"):
        t.fast_forward("b1")
    # the branch made empty wrote its own snapshots 1 and 2, and expired 1: main keeps its own 1
    empty = Catalog(w).get_table(f"{IDENT}$branch_empty")
    for v in ("e", "f"):
        empty.write_arrow(rows(range(2), v))
    empty.expire_snapshots(retain_min=1, retain_max=1)
    before = _metadata(ours)
    with pytest.raises(InvalidArgumentError, match=r"earliest snapshot 2 is not the main branch's, which keeps "
                                                   r"snapshots 1-1 before it"):
        t.fast_forward("empty")
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot fast-forward db\.t\$branch_b1: it is a branch"):
        Catalog(w).get_table(B1).fast_forward("b1")
    assert _metadata(ours) == before

