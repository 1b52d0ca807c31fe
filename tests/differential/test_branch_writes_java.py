"""Writes and compaction on a branch (``db.t$branch_b1``), against Paimon Java 0.9.

Java builds the table once: a write to the main branch, a tag ``t1`` and a branch ``b1`` made from
it. lake_assets writes twice to the branch and compacts it (snapshots in ``branch/branch-b1``, files
and manifests in the table's directories, as 0.9's branch writer): Java reads the branch as we do,
and main unchanged; Java writes to the branch after ours and we read what it reads (both engines'
branch commits expire the branch's snapshots per its retention); then the main branch's expiry (at
commit) and orphan removal (ours, and Java 0.9's orphan clean) keep every file the branch
names (Spark's writes and jobs on a branch: test_branch_spark_java.py).
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
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
IDENT = "db.t"
B1 = f"{IDENT}$branch_b1"


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture(scope="module")
def base(java: PaimonJava, tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("branch_writes") / "wh"
    w = str(wh)
    java.create_table(w, IDENT, SCHEMA, primary_keys=["id"],
                      options={"bucket": "2", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    java.write(w, IDENT, rows(range(0, 10), "a"))  # 1
    java.create_tag(w, IDENT, "t1")
    java.create_branch(w, IDENT, "b1", tag="t1")
    return wh


def test_our_branch_writes_are_read_by_java_and_java_writes_after_them(
        java: PaimonJava, base: Path, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    shutil.copytree(base, wh)
    w = str(wh)
    branch = Catalog(w).get_table(B1)
    branch.write_arrow(rows(range(5, 15), "b"))  # b1's 2
    assert_same_rows(java.read(w, B1), branch.to_arrow())
    branch.write_arrow(rows(range(0, 3), "c"))  # b1's 3
    assert_same_rows(java.read(w, B1), branch.to_arrow())
    assert branch.compact(full=True).snapshot_id == 4
    ours = branch.to_arrow()
    assert ours.num_rows == 15 and {"c0", "a3", "b14"} <= set(ours.column("v").to_pylist())
    assert_same_rows(java.read(w, B1), ours)
    # each commit expired the branch's older snapshots per its retention (min 1, max 1)
    assert [s["id"] for s in java.snapshots(w, B1)] == [4]
    # the main branch did not move
    assert [s["id"] for s in java.snapshots(w, IDENT)] == [1]
    assert_same_rows(java.read(w, IDENT), rows(range(0, 10), "a"))
    # Java writes to the branch after ours; we read what it reads
    java.write(w, B1, rows(range(14, 18), "d"))  # b1's 5
    java.compact(w, B1, full=True)  # b1's 6
    after = Catalog(w).get_table(B1)
    assert after.latest_snapshot().id == 6
    # Java's branch commits expire the branch's snapshots as ours do (0.9's newCommit on a branch)
    assert [s.id for s in after.snapshots()] == [6]
    assert_same_rows(after.to_arrow(), java.read(w, B1))
    assert after.to_arrow().num_rows == 18


def test_main_expiry_and_orphan_removal_keep_what_the_branch_wrote(
        java: PaimonJava, base: Path, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    shutil.copytree(base, wh)
    w = str(wh)
    branch = Catalog(w).get_table(B1)
    branch.write_arrow(rows(range(5, 15), "b"))
    branch.compact(full=True)
    main = Catalog(w).get_table(IDENT)
    for tag in ("m", "n"):  # main moves on: snapshots 2 and 3, compacted, the older ones expired
        main.write_arrow(rows(range(0, 10), tag))
    main.compact(full=True)
    # each of main's commits expired the one before (retention min 1, max 1): 1, 2, 3 are gone
    assert [s["id"] for s in java.snapshots(w, IDENT)] == [4]
    assert main.expire_snapshots().expired_snapshots == []
    orphan = wh / "db.db" / "t" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"x")
    os.utime(orphan, (time.time() - 60, time.time() - 60))  # older than the bound below
    removed = main.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert [Path(p).name for p in removed.paths] == ["data-orphan.parquet"]
    theirs = java.remove_orphan_files(w, IDENT, older_than_ms=int(time.time() * 1000) + 60_000)
    assert [p for p in theirs if "/bucket-" in p and not p.rstrip("/").endswith(("bucket-0", "bucket-1"))] == []
    expected = pa.concat_tables([rows(range(0, 5), "a"), rows(range(5, 15), "b")])
    assert_same_rows(java.read(w, B1), expected)
    assert_same_rows(Catalog(w).get_table(B1).to_arrow(), expected)
    assert_same_rows(java.read(w, IDENT), rows(range(0, 10), "n"))

