"""Deleting a tag against Paimon Java 0.9: both engines free the same files.

The history is built by Java (writes, full compactions, tags, expiry), the warehouse is copied, and
Java deletes the tag in one copy and lake_assets in the other: the files left must be the same,
every remaining tag and snapshot must still read the same in both engines, and nothing is left
for orphan removal.
"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())])


def rows(ids: range, p: str, tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "p": [p] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _history(java: PaimonJava, wh: str) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                      options={"bucket": "2"})
    for k in range(6):
        java.write(wh, "db.t", rows(range(k * 3, k * 3 + 10), "a" if k % 2 else "b", f"w{k}"))
        if k in (1, 3):
            java.create_tag(wh, "db.t", f"t{k}")
        if k in (2, 4):
            java.compact(wh, "db.t", full=True)
    java.create_tag(wh, "db.t", "t-last")
    java.expire_snapshots(wh, "db.t", options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})


@pytest.mark.parametrize("tag", ["t1", "t3"])
def test_both_engines_free_the_same_files(java: PaimonJava, tmp_path: Path, tag: str) -> None:
    base = tmp_path / "base"
    base.mkdir()
    _history(java, str(base))
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    table_dir = Path("db.db") / "t"

    java.delete_tag(str(theirs), "db.t", tag)
    t = Catalog(str(ours)).get_table("db.t")
    result = t.delete_tag(tag)

    assert result.deleted_data_files  # the full compactions replaced what the tag held
    assert _files(ours / table_dir) == _files(theirs / table_dir)
    for name in java.tags(str(theirs), "db.t"):
        assert_same_table(t.to_arrow(tag=name), java.read(str(theirs), "db.t", tag=name))
        assert_same_table(java.read(str(ours), "db.t", tag=name), java.read(str(theirs), "db.t", tag=name))
    assert_same_table(t.to_arrow(), java.read(str(theirs), "db.t"))
    assert t.remove_orphan_files(older_than=timedelta(0)).paths == []


def test_java_reads_after_we_delete_every_tag(java: PaimonJava, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    wh.mkdir()
    _history(java, str(wh))
    t = Catalog(str(wh)).get_table("db.t")
    latest = java.read(str(wh), "db.t")
    for name in ("t3", "t1", "t-last"):
        t.delete_tag(name)
    assert java.tags(str(wh), "db.t") == {}
    assert_same_table(java.read(str(wh), "db.t"), latest)
    assert t.remove_orphan_files(older_than=timedelta(0)).paths == []
    # what is left is what the latest snapshot needs: Java writes on and reads it back
    java.write(str(wh), "db.t", rows(range(100, 103), "a", "after"))
    assert java.read(str(wh), "db.t").num_rows == latest.num_rows + 3
