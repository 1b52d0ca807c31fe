"""Rollback of a row-tracking table against pypaimon 2.1 (Paimon Java 0.9 predates row tracking):
see docs/format.md §7.7 "Rollback and tags" for what Paimon HEAD does with ``nextRowId``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog

from .paimon import read_ipc
from .test_row_tracking_interop import OPTIONS, SCHEMA, RowTrackingPaimon, _ipc, _ours
from .test_row_tracking_interop import driver as driver  # the fixture


def test_rollback_gives_out_the_target_ids_again_as_pypaimon_does(driver: RowTrackingPaimon, tmp_warehouse: str,
                                                                  tmp_path: Path) -> None:
    """Paimon HEAD's (and pypaimon 2.1's) ``rollback_to`` removes newer snapshots and tags and leaves
    ``nextRowId`` to the target (`RollbackHelper.cleanLargerThan`): the next commit gives out the
    target's ids again, which no retained snapshot or tag holds. lake_assets' `rollback_to` on a copy
    of the same table does the same: the same ids, snapshots and tags after the same commits."""
    work = tmp_path
    batch = [_ipc(work, f"b{i}", pa.table({"id": pa.array([10 * i, 10 * i + 1], pa.int64()), "p": ["a", "b"],
                                            "v": ["x", "y"]}, schema=SCHEMA)) for i in range(4)]
    driver.steps(tmp_warehouse, work, [
        {"op": "create", "table": "db.t", "schema": _ipc(work, "s", SCHEMA), "options": OPTIONS},
        *({"op": "write", "table": "db.t", "data": b} for b in batch[:3]),
        {"op": "tag", "table": "db.t", "tag": "one", "snapshot_id": 1},
        {"op": "tag", "table": "db.t", "tag": "three", "snapshot_id": 3},
    ])
    theirs_wh, ours_wh = Path(tmp_warehouse), tmp_path / "copy"
    shutil.copytree(theirs_wh, ours_wh)
    driver.steps(str(theirs_wh), work, [{"op": "rollback", "table": "db.t", "to": 1},
                                        {"op": "write", "table": "db.t", "data": batch[3]}])
    t = Catalog(str(ours_wh)).get_table("db.t")
    assert t.latest_snapshot().next_row_id == 6
    t.rollback_to(snapshot_id=1)
    t.write_arrow(read_ipc(batch[3]))
    for wh in (theirs_wh, ours_wh):
        t = Catalog(str(wh)).get_table("db.t")
        assert [s.id for s in t.snapshots()] == [1, 2]
        assert [s.next_row_id for s in t.snapshots()] == [2, 4]  # ids 2 and 3 given out again
        assert sorted(t.tags()) == ["one"], wh  # "three" held ids 2-5: removed with its snapshot
        assert _ours(Catalog(str(wh)), "db.t", ["id", "_ROW_ID"]) == [
            {"id": 0, "_ROW_ID": 0}, {"id": 1, "_ROW_ID": 1}, {"id": 30, "_ROW_ID": 2}, {"id": 31, "_ROW_ID": 3}]
