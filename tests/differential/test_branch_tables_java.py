"""A branch opened as a table (``db.t$branch_b1``), against Paimon Java 0.9.

Java builds the history once: two writes to the main branch, a tag ``t1``, a branch ``b1`` created
from it (``createBranch(name, tag)`` copies the tag's snapshot, tag and schema files into
``branch/branch-b1``), two writes to the branch (its snapshots 3 and 4, files in the table's own
bucket directory, manifests in its ``manifest/``), a branch tag ``bt`` and a write and full
compaction of the main branch (its snapshots 3 and 4). lake_assets opens the branch and reads what
Java reads: latest, time travel by id and by the branch's own tags, incremental reads, streams and
the Spark source. Expiry of the branch keeps what main and its tags name; what else would delete on a
branch is refused naming it, and changes nothing (writes: test_branch_writes_java.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import UnsupportedFeatureError
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
IDENT = "db.t"
B1 = f"{IDENT}$branch_b1"
TABLE = Path("db.db") / "t"


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def history(java: PaimonJava, tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("branch_tables") / "wh"
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


def test_the_branch_reads_what_java_reads(java: PaimonJava, history: Path) -> None:
    w = str(history)
    branch = Catalog(w).get_table(B1)
    assert branch.name == B1
    assert [s.id for s in branch.snapshots()] == [2, 3, 4]  # the tag's copy, then its own
    assert sorted(branch.tags()) == ["bt", "t1"]  # its own tag directory
    ours = branch.to_arrow()
    values = set(ours.column("v").to_pylist())
    # the tag's rows, the branch's two writes over them, none of main's later writes
    assert ours.num_rows == 20 and {"x0", "a4", "b5", "c19"} <= values and "d20" not in values
    assert_same_rows(ours, java.read(w, B1))
    assert_same_rows(pa.Table.from_batches(list(branch.to_batches()), schema=ours.schema), ours)
    # The main branch is untouched by the branch and the other way round.
    main = Catalog(w).get_table(IDENT)
    assert [s.id for s in main.snapshots()] == [1, 2, 3, 4] and sorted(main.tags()) == ["t1"]
    assert_same_rows(main.to_arrow(), java.read(w, IDENT))
    assert main.to_arrow().num_rows == 25


def test_time_travel_on_the_branch(java: PaimonJava, history: Path) -> None:
    w = str(history)
    branch = Catalog(w).get_table(B1)
    for sid in (2, 3, 4):
        assert_same_rows(branch.to_arrow(snapshot_id=sid), java.read(w, B1, snapshot_id=sid))
    # A branch's tags are its own (branch/branch-b1/tag), as Paimon HEAD reads them (apache/paimon
    # #9044). Java 0.9's scan of a tag looks in the main branch's tag directory (its
    # StaticFromTagStartingScanner predates the fix): its read of "t1" finds main's copy of the same
    # snapshot, and of the branch's own "bt" fails; the tag's snapshot reads what ours does.
    assert_same_rows(branch.to_arrow(tag="t1"), java.read(w, B1, tag="t1"))
    with pytest.raises(JavaError, match="Tag 'bt' doesn't exist"):
        java.read(w, B1, tag="bt")
    assert branch.tags()["bt"].id == 3
    assert_same_rows(branch.to_arrow(tag="bt"), java.read(w, B1, snapshot_id=3))
    assert branch.to_arrow(tag="bt").num_rows == 20 and branch.to_arrow(tag="t1").num_rows == 15
    # Main's snapshot 3 is another history: the branch's 3 reads the branch's rows.
    assert_same_rows(branch.to_arrow(snapshot_id=3), java.read(w, B1, snapshot_id=3))
    assert "d20" not in branch.to_arrow(snapshot_id=3).column("v").to_pylist()


def test_change_reads_and_streams_of_the_branch(java: PaimonJava, history: Path) -> None:
    w = str(history)
    branch = Catalog(w).get_table(B1)
    theirs = java.read_changes(w, B1, 2, 4)
    assert theirs.num_rows == 12
    assert_same_rows(branch.read_changes(2, 4), theirs)
    stream = branch.stream(mode="from-snapshot", snapshot_id=3)
    reader = stream.change_reader()
    streamed = [reader.read(s) for b in stream.poll(10) for s in b.splits]
    assert_same_rows(pa.concat_tables(streamed), theirs)


def test_a_tag_created_on_the_branch_is_java_readable(java: PaimonJava, history: Path, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    shutil.copytree(history, wh)
    branch = Catalog(str(wh)).get_table(B1)
    branch.create_tag("ours", 3)
    assert (wh / TABLE / "branch" / "branch-b1" / "tag" / "tag-ours").is_file()
    assert not (wh / TABLE / "tag" / "tag-ours").exists()
    assert_same_rows(branch.to_arrow(tag="ours"), java.read(str(wh), B1, snapshot_id=3))
    assert sorted(java.tags(str(wh), B1)) == ["bt", "ours", "t1"]  # Java's tags of the branch list it
    assert java.tags(str(wh), B1)["ours"] == 3
    assert sorted(java.tags(str(wh), IDENT)) == ["t1"]


def test_orphan_removal_of_the_branch_is_refused(java: PaimonJava, history: Path, tmp_path: Path) -> None:
    """Rollback, tag deletion and schema changes of the branch: test_branch_maintenance_java.py."""
    wh = tmp_path / "wh"
    shutil.copytree(history, wh)
    before = _files(wh)
    branch = Catalog(str(wh)).get_table(B1)
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot remove orphan files of db\.t\$branch_b1: "):
        branch.remove_orphan_files(dry_run=False, allow_recent=True)
    assert _files(wh) == before
    assert_same_rows(java.read(str(wh), B1), Catalog(str(wh)).get_table(B1).to_arrow())


def test_health_of_the_branch(history: Path) -> None:
    health = Catalog(str(history)).get_table(B1).health()
    main = Catalog(str(history)).get_table(IDENT).health()
    # The branch has its two level-0 files on top of the tag's; main was compacted to one file.
    assert sum(health.column("file_count").to_pylist()) > sum(main.column("file_count").to_pylist())


def test_the_spark_source_reads_the_branch(java: PaimonJava, history: Path, spark) -> None:  # type: ignore[no-untyped-def]
    from lake_assets.spark import read_table

    w = str(history)
    df = spark.read.format("lake").option("warehouse", w).load(B1)
    assert_same_rows(pa.Table.from_pylist([r.asDict() for r in df.collect()], schema=SCHEMA), java.read(w, B1))
    by_option = spark.read.format("lake").option("warehouse", w).option("branch", "b1").load(IDENT)
    assert_same_rows(pa.Table.from_pylist([r.asDict() for r in by_option.collect()], schema=SCHEMA),
                     java.read(w, B1))
    native = read_table(spark, w, B1)  # Spark's Parquet reader for the files that need no merge
    assert_same_rows(pa.Table.from_pylist([r.asDict() for r in native.collect()], schema=SCHEMA), java.read(w, B1))


def test_create_and_delete_branch_write_what_java_writes(java: PaimonJava, history: Path, tmp_path: Path) -> None:
    """Our create_branch (empty, from a tag) leaves exactly the files Java 0.9's createBranch
    leaves on an identical copy; Java reads the branches; delete_branch removes the directory."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(history, ours)
    shutil.copytree(history, theirs)
    t = Catalog(str(ours)).get_table(IDENT)
    t.create_branch("nb", tag="t1")
    t.create_branch("empty")
    java.create_branch(str(theirs), IDENT, "nb", tag="t1")
    java.create_branch(str(theirs), IDENT, "empty")
    assert _files(ours / TABLE) == _files(theirs / TABLE)
    assert sorted(java.branches(str(ours), IDENT)) == ["b1", "empty", "nb"]
    at_t1 = java.read(str(ours), IDENT, tag="t1")
    assert_same_rows(java.read(str(ours), f"{IDENT}$branch_nb"), at_t1)
    assert_same_rows(Catalog(str(ours)).get_table(f"{IDENT}$branch_nb").to_arrow(), at_t1)
    java.write(str(ours), f"{IDENT}$branch_empty", rows(range(3), "e"))  # Java writes to our empty branch
    assert_same_rows(Catalog(str(ours)).get_table(f"{IDENT}$branch_empty").to_arrow(), rows(range(3), "e"))
    t.delete_branch("nb")
    assert not (ours / TABLE / "branch" / "branch-nb").exists()
    assert sorted(java.branches(str(ours), IDENT)) == ["b1", "empty"]


def test_expiry_of_the_branch_keeps_what_main_names(java: PaimonJava, history: Path, tmp_path: Path) -> None:
    """The branch's snapshots 2 (main's t1, copied), 3 (tag bt), 4 and Java's full compaction 5 and
    write 6 of the branch: expiring all but 6 deletes the branch's snapshot files and the level-0
    file of 4 that only the branch named (5 compacted it away; bt holds 3's), nothing main reads."""
    wh = tmp_path / "wh"
    shutil.copytree(history, wh)
    w = str(wh)
    java.compact(w, B1, full=True)  # b1's 5
    java.write(w, B1, rows(range(40, 42), "y"))  # b1's 6
    before = {name: java.read(w, name) for name in (IDENT, B1)}
    main_t1, bt = java.read(w, IDENT, tag="t1"), Catalog(w).get_table(B1).to_arrow(tag="bt")
    branch = Catalog(w).get_table(B1)
    result = branch.expire_snapshots(retain_min=1, retain_max=1)
    assert result.expired_snapshots == [2, 3, 4, 5]
    assert [s.id for s in branch.snapshots()] == [6]
    assert len(result.deleted_data_files) == 1  # snapshot 4's file: 2's are main's (t1), 3's bt's
    assert not (wh / TABLE / "branch" / "branch-b1" / "snapshot" / "snapshot-2").exists()
    for name, table in before.items():
        assert_same_rows(java.read(w, name), table)
    assert_same_rows(java.read(w, IDENT, tag="t1"), main_t1)
    assert_same_rows(Catalog(w).get_table(B1).to_arrow(tag="bt"), bt)
    assert [s.id for s in Catalog(w).get_table(IDENT).snapshots()] == [1, 2, 3, 4]


def test_branch_expiry_keeps_main_snapshots_files_where_java_09s_breaks_them(
        java: PaimonJava, history: Path, tmp_path: Path) -> None:
    """Java 0.9's expiry of a branch keeps what main's tags hold, not main's snapshots: with t1
    deleted (Java's deleteTag allows it), the branch's compaction and expiry delete t1's files,
    which main's retained snapshot 2 still reads. Ours keeps every file main names."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for wh in (ours, theirs):
        shutil.copytree(history, wh)
        java.delete_tag(str(wh), IDENT, "t1")
        java.delete_tag(str(wh), B1, "bt")
        java.compact(str(wh), B1, full=True)
        java.write(str(wh), B1, rows(range(40, 42), "y"))
    main_at_2 = java.read(str(ours), IDENT, snapshot_id=2)
    java.expire_snapshots(str(theirs), B1, options={"snapshot.num-retained.min": "1",
                                                    "snapshot.num-retained.max": "1"})
    with pytest.raises(JavaError):
        java.read(str(theirs), IDENT, snapshot_id=2)
    result = Catalog(str(ours)).get_table(B1).expire_snapshots(retain_min=1, retain_max=1)
    assert result.expired_snapshots == [2, 3, 4, 5]
    assert_same_rows(java.read(str(ours), IDENT, snapshot_id=2), main_at_2)
    assert_same_rows(java.read(str(ours), B1), java.read(str(theirs), B1))
