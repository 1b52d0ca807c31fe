"""`Table.rollback_to_as_latest` on a row-tracking table: the new latest reads as the target with
the target's row ids, ``nextRowId`` never moves back (the next write's ids follow every id handed
out), every snapshot and tag stays, and our expiry and tag deletion keep the re-added files.
Java 0.9's expiry: tests/differential/test_rollback_as_latest_java.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError, SnapshotNotFoundError
from lake_assets.ops.rollback_as_latest import ROLLBACK_TAG_PREFIX

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
OPTIONS = {"row-tracking.enabled": "true", "bucket": "-1"}
COLUMNS = ["id", "v", "_ROW_ID"]


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [str(i) for i in ids]}, schema=SCHEMA)


def test_rollback_as_latest_keeps_history_and_row_ids_moving_forward(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options=OPTIONS)
    t.write_arrow(_rows([1, 2]))                   # 1: ids 0, 1
    t.write_arrow(_rows([3]))                      # 2: id 2
    t.write_arrow(_rows([7, 8]), overwrite=True)   # 3: ids 3, 4; the files of 1 and 2 deleted
    target = t.to_arrow(columns=COLUMNS, snapshot_id=2).sort_by("_ROW_ID").to_pylist()
    with pytest.raises(SnapshotNotFoundError, match="no snapshot or tag of snapshot 9"):
        t.rollback_to_as_latest(snapshot_id=9)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        t.rollback_to_as_latest(snapshot_id=2, tag="x")
    back = t.rollback_to_as_latest(snapshot_id=2)
    assert (back.id, back.commit_kind.name, back.next_row_id, back.total_record_count) == (4, "OVERWRITE", 5, 3)
    t = catalog.get_table("db.t")
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
    (tag,) = t.store.tag_manager().tags()
    assert tag.startswith(f"{ROLLBACK_TAG_PREFIX}2-")
    assert t.to_arrow(columns=COLUMNS).sort_by("_ROW_ID").to_pylist() == target
    t.write_arrow(_rows([4]))                      # 5: id 5, after every id handed out (3 and 4 too)
    assert t.to_arrow(columns=COLUMNS).sort_by("_ROW_ID").to_pylist() == [*target, {"id": 4, "v": "4", "_ROW_ID": 5}]
    # a rollback to a tag keeps that tag, adds none; the snapshot of 3 comes back with ids 3 and 4
    t.create_tag("three", snapshot_id=3)
    t.rollback_to_as_latest(tag="three")
    t = catalog.get_table("db.t")
    assert sorted(t.store.tag_manager().tags()) == sorted([tag, "three"])
    assert [r["_ROW_ID"] for r in t.to_arrow(columns=COLUMNS).sort_by("_ROW_ID").to_pylist()] == [3, 4]
    assert t.latest_snapshot().next_row_id == 6

    # our expiry down to the latest, then deleting both tags: every listed file exists
    t.rollback_to_as_latest(snapshot_id=5)         # 7: the files of 5 again (deleted by 6)
    t = catalog.get_table("db.t")
    want = t.to_arrow(columns=COLUMNS).sort_by("_ROW_ID").to_pylist()
    t.expire_snapshots(retain_max=1, retain_min=1)
    for name in list(t.store.tag_manager().tags()):
        t.delete_tag(name)
    t = catalog.get_table("db.t")
    assert [s.id for s in t.snapshots()] == [7]
    store = t.store
    listed = [store.data_file_path(e.partition, e.bucket, e.file) for e in store.file_store_scan().live_entries(
        t.latest_snapshot())]
    assert listed and all(Path(p).exists() for p in listed)
    assert t.to_arrow(columns=COLUMNS).sort_by("_ROW_ID").to_pylist() == want
