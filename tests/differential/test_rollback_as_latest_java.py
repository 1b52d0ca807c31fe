"""`Table.rollback_to_as_latest` (Paimon HEAD's ``rollback_to_as_latest``; Java 0.9 predates it)
against Paimon Java 0.9's expiry: the rollback re-adds files a later snapshot deleted, and the tag
it puts on the target keeps them when that snapshot expires. One history, two copies: Java 0.9
expires one, lake_assets the other, until every snapshot before the rollback is gone; then both
engines read every retained snapshot and tag alike, and every file they list exists. A third copy
whose rollback tag was deleted early shows what the tag is for: Java's expiry then deletes
re-added files, where lake_assets' expiry keeps them (it reads retained OVERWRITE snapshots'
re-added files, `expire_files.Restorations`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.rollback_as_latest import ROLLBACK_TAG_PREFIX
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
RETAIN_ONE = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}


def _rows(ids: list[int], v: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids)}, schema=SCHEMA)


def _files_listed(table) -> list[str]:
    store = table.store
    scan = store.file_store_scan()
    holders = [*table.snapshots(), *(t.snapshot for t in store.tag_manager().tags().values())]
    return [store.data_file_path(e.partition, e.bucket, e.file) for s in holders for e in scan.live_entries(s)]


def test_rollback_as_latest_survives_java_and_our_expiry(java: PaimonJava, wh: str, lake: Catalog,
                                                         tmp_path: Path) -> None:
    t = lake.create_table("db.t", SCHEMA, options={"bucket": "-1"})
    t.write_arrow(_rows([1, 2], "a"))          # 1
    t.write_arrow(_rows([3], "b"))             # 2: the target
    t.write_arrow(_rows([9], "c"), overwrite=True)  # 3: deletes the files of 1 and 2
    t.write_arrow(_rows([10], "d"))            # 4
    target = t.to_arrow(snapshot_id=2)
    back = t.rollback_to_as_latest(snapshot_id=2)  # 5: the files of 2, re-added
    assert back.id == 5 and back.commit_kind.name == "OVERWRITE"
    t = lake.get_table("db.t")
    assert [n for n in t.store.tag_manager().tags() if n.startswith(f"{ROLLBACK_TAG_PREFIX}2-")]
    assert_same_table(t.to_arrow(), target)
    assert_same_table(java.read(wh, "db.t"), target)  # Java 0.9 reads the rollback snapshot
    t.write_arrow(_rows([4], "e"))             # 6
    want = t.to_arrow()
    copy, untagged = tmp_path / "copy", tmp_path / "untagged"
    shutil.copytree(Path(wh) / "db.db", copy / "db.db")
    shutil.copytree(Path(wh) / "db.db", untagged / "db.db")
    ours_untagged = tmp_path / "ours_untagged"
    shutil.copytree(Path(wh) / "db.db", ours_untagged / "db.db")
    for tag_file in (ours_untagged / "db.db" / "t" / "tag").iterdir():
        tag_file.unlink()
    # our expiry without the tag, keeping the rollback snapshot 5 but not snapshot 3, which
    # deleted the files 5 re-adds: they stay
    kept = Catalog(str(ours_untagged)).get_table("db.t")
    kept.expire_snapshots(retain_max=3, retain_min=1)
    kept = kept.refresh()
    assert [s.id for s in kept.snapshots()] == [4, 5, 6]
    listed = _files_listed(kept)
    assert listed and all(Path(p).exists() for p in listed), [p for p in listed if not Path(p).exists()]
    assert_same_table(kept.to_arrow(snapshot_id=5), target)
    assert_same_table(java.read(str(ours_untagged), "db.t"), want)
    ours = Catalog(str(copy)).get_table("db.t")
    ours.expire_snapshots(retain_max=1, retain_min=1)
    java.expire_snapshots(wh, "db.t", options=RETAIN_ONE)
    for warehouse, table in ((wh, lake.get_table("db.t")), (str(copy), Catalog(str(copy)).get_table("db.t"))):
        assert [s.id for s in table.snapshots()] == [6]
        assert_same_table(table.to_arrow(), want)
        assert_same_table(java.read(warehouse, "db.t"), want)
        (name,) = table.store.tag_manager().tags()
        assert_same_table(java.read(warehouse, "db.t", tag=name), target)
        assert_same_table(table.to_arrow(tag=name), target)
        listed = _files_listed(table)
        assert listed and all(Path(p).exists() for p in listed), [p for p in listed if not Path(p).exists()]
    # the limit HEAD shares: without the tag (deleted while snapshots 3-5 remain; Paimon's
    # deleteTag deletes no file then), Java's expiry of snapshot 3 deletes files snapshot 6 lists
    bare = Catalog(str(untagged)).get_table("db.t")
    for tag_file in (untagged / "db.db" / "t" / "tag").iterdir():
        tag_file.unlink()
    java.expire_snapshots(str(untagged), "db.t", options=RETAIN_ONE)
    assert [p for p in _files_listed(bare.refresh()) if not Path(p).exists()]
