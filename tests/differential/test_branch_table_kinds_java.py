"""Writes and compaction on a branch of unaware-bucket append, dynamic-bucket and deletion-vector
tables, against Paimon Java 0.9 (fixed-bucket tables: test_branch_writes_java.py).

Per kind, Java creates the table, writes main, tags ``t1``, makes branch ``b1`` from the tag and
writes to the branch first (its hash index or deletion vectors in the branch's index manifest).
lake_assets writes twice on top and compacts; Java reads the branch as we do and main unchanged;
then Java writes keys we wrote (a dynamic-bucket key must go to the bucket our index gave it, a
deletion vector must mark our rows) and compacts, and we read what it reads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
IDENT = "db.t"
B1 = f"{IDENT}$branch_b1"

# (primary keys, partition keys, options); "cross": keys move between partitions (each write's
# ``v`` is its partition), Paimon's cross-partition upsert
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], dict[str, str]]] = {
    "append": ((), (), {"bucket": "-1", "compaction.max.file-num": "3"}),
    "dynamic": (("id",), (), {"bucket": "-1", "dynamic-bucket.target-row-num": "4"}),
    "dv": (("id",), (), {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "cross": (("id",), ("v",), {"bucket": "-1"}),
    "dynamic_dv": (("id",), (), {"bucket": "-1", "dynamic-bucket.target-row-num": "4",
                             "deletion-vectors.enabled": "true"}),
}


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def expected(keyed: bool, *parts: pa.Table) -> pa.Table:
    """What reading ``parts`` written in order gives: all rows (append) or the last per key."""
    if not keyed:
        return pa.concat_tables(parts)
    last: dict[int, str] = {}
    for part in parts:
        last.update(zip(part.column("id").to_pylist(), part.column("v").to_pylist(), strict=True))
    return pa.table({"id": list(last), "v": list(last.values())}, schema=SCHEMA)


@pytest.fixture(scope="module", params=sorted(KINDS))
def kind_base(request: pytest.FixtureRequest, java: PaimonJava,
              tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    kind: str = request.param
    keys, partitions, options = KINDS[kind]
    wh = tmp_path_factory.mktemp(f"branch_{kind}") / "wh"
    w = str(wh)
    java.create_table(w, IDENT, SCHEMA, primary_keys=keys, partition_keys=partitions, options=options)
    java.write(w, IDENT, rows(range(0, 10), "a"))  # 1
    java.create_tag(w, IDENT, "t1")
    java.create_branch(w, IDENT, "b1", tag="t1")
    java.write(w, B1, rows(range(8, 12), "j"))  # b1's 2
    return kind, wh


def test_branch_writes_of_each_table_kind_agree_with_java(
        java: PaimonJava, kind_base: tuple[str, Path], tmp_path: Path) -> None:
    kind, base = kind_base
    keyed = bool(KINDS[kind][0])
    wh = tmp_path / "wh"
    shutil.copytree(base, wh)
    w = str(wh)
    main_snapshots = [s["id"] for s in java.snapshots(w, IDENT)]
    history = [rows(range(0, 10), "a"), rows(range(8, 12), "j")]
    branch = Catalog(w).get_table(B1)
    forked = branch.latest_snapshot().id
    for part in (rows(range(5, 15), "b"), rows(range(0, 3), "c")):
        branch.write_arrow(part)
        history.append(part)
    ours = branch.to_arrow()
    assert_same_rows(ours, expected(keyed, *history))
    assert_same_rows(java.read(w, B1), ours)
    assert [s["id"] for s in java.snapshots(w, B1)] == [s.id for s in branch.snapshots()]
    for sid in range(forked + 1, branch.latest_snapshot().id):
        assert_same_rows(java.read(w, B1, snapshot_id=sid), branch.to_arrow(snapshot_id=sid))
    # the main branch did not move, and nothing went to a branch index directory
    assert [s["id"] for s in java.snapshots(w, IDENT)] == main_snapshots
    assert_same_rows(java.read(w, IDENT), rows(range(0, 10), "a"))
    assert not (wh / "db.db" / "t" / "branch" / "branch-b1" / "index").exists()
    # Java writes keys we wrote, on the branch, and compacts what we wrote; we read what it reads
    part = rows(range(12, 16), "d")
    java.write(w, B1, part)
    history.append(part)
    if keyed:
        java.compact(w, B1, full=True)
    else:
        assert java.append_compact(w, B1)["tasks"] > 0  # Spark's compact procedure on the branch
    assert_same_rows(Catalog(w).get_table(B1).to_arrow(), expected(keyed, *history))
    assert_same_rows(java.read(w, B1), expected(keyed, *history))
    # we write and compact what Java wrote; Java reads it
    part = rows(range(14, 20), "e")
    branch.write_arrow(part)
    history.append(part)
    compacted = branch.compact(full=True)
    assert compacted.files_in > 1 and compacted.snapshot_id == branch.latest_snapshot().id
    assert_same_rows(java.read(w, B1), expected(keyed, *history))
    assert_same_rows(branch.to_arrow(), expected(keyed, *history))
    assert [s["id"] for s in java.snapshots(w, IDENT)] == main_snapshots


def test_delete_where_on_a_branch_agrees_with_java(java: PaimonJava, tmp_path: Path) -> None:
    """Row deletes of a deletion-vector append table's branch: our vectors in the branch's index
    manifest, read by Java; Java's deletes (Spark's DELETE path) and compaction on top, read by us;
    main keeps its rows."""
    w = str(tmp_path / "wh")
    java.create_table(w, IDENT, SCHEMA, options={"bucket": "-1", "deletion-vectors.enabled": "true",
                                                 "compaction.max.file-num": "2"})
    java.write(w, IDENT, rows(range(0, 10), "a"))
    java.create_tag(w, IDENT, "t1")
    java.create_branch(w, IDENT, "b1", tag="t1")
    java.write(w, B1, rows(range(10, 14), "j"))
    branch = Catalog(w).get_table(B1)
    result = branch.delete_where([("id", "<", 3)])
    assert (result.rows_deleted, result.files_marked) == (3, 1)
    left = rows(range(3, 14), "")
    assert_same_rows(java.read(w, B1, projection=["id"]), left.select(["id"]))
    assert java.append_dv_delete(w, B1, [("id", ">=", 12)])["files_marked"] == 1
    left = rows(range(3, 12), "")
    assert_same_rows(Catalog(w).get_table(B1).to_arrow(columns=["id"]), left.select(["id"]))
    assert java.append_compact(w, B1)["tasks"] > 0
    assert_same_rows(Catalog(w).get_table(B1).to_arrow(columns=["id"]), left.select(["id"]))
    assert_same_rows(java.read(w, B1, projection=["id"]), left.select(["id"]))
    assert_same_rows(java.read(w, IDENT), rows(range(0, 10), "a"))
    assert [s["id"] for s in java.snapshots(w, IDENT)] == [1]
