"""Column-subset writes of new rows to a data-evolution table (`Table.write_arrow(...,
write_columns=[...])`, pypaimon's ``with_write_type``) against pypaimon 2.1 and pypaimon-rust 0.4.
Paimon Java 0.9, our usual oracle, predates row tracking and data evolution.

Both ways in one test: lake_assets writes subsets of new rows to a partitioned table and fills one
row by a column update; pypaimon reads them, updates one of ours and writes its own subset;
lake_assets reads pypaimon's and fills its rows; pypaimon-rust 0.4 reads every file of the result.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog

from .paimon import PypaimonRust, read_ipc
from .test_row_tracking_interop import FIELDS, OPTIONS, SCHEMA, RowTrackingPaimon, _ipc, _ours, _rows
from .test_row_tracking_interop import driver as driver  # the fixture


def test_column_subset_writes_are_read_alike_by_pypaimon_and_pypaimon_rust(
        driver: RowTrackingPaimon, rust: PypaimonRust, tmp_warehouse: str, tmp_path: Path) -> None:
    work = tmp_path
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    t.write_arrow(pa.table({"id": [1, 2], "p": ["a", "b"], "v": ["x", "y"]}, schema=SCHEMA))
    # new rows of id and p only (any column order): v reads null until set
    t.write_arrow(pa.table({"p": ["a", "b", "a"], "id": pa.array([3, 4, 5], pa.int64())}), write_columns=["p", "id"])
    new = [e.file for e in t.store.file_store_scan().delta_entries(t.latest_snapshot())]
    assert sorted((f.write_cols, f.row_count) for f in new) == [(("id", "p"), 1), (("id", "p"), 2)]
    assert t.latest_snapshot().next_row_id == 5
    ours = _ours(cat, "db.t", FIELDS)
    assert [(r["id"], r["v"]) for r in ours] == [(1, "x"), (2, "y"), (3, None), (5, None), (4, None)]
    ids = {r["id"]: r["_ROW_ID"] for r in ours}
    t.update_columns(pa.table({"_ROW_ID": pa.array([ids[3]], pa.int64()), "v": ["L3"]}))
    # every column is an ordinary write (no _WRITE_COLS), as pypaimon makes it
    t.write_arrow(pa.table({"v": ["z"], "p": ["b"], "id": pa.array([6], pa.int64())}), write_columns=["v", "p", "id"])
    assert [e.file.write_cols for e in t.store.file_store_scan().delta_entries(t.latest_snapshot())] == [None]
    driver.steps(tmp_warehouse, work, [
        {"op": "read", "table": "db.t", "columns": FIELDS, "out": str(work / "ours.arrow")},
        # pypaimon's update of v over our subset file of partition b, then its own subset of new rows
        {"op": "update", "table": "db.t", "columns": ["v"],
         "data": _ipc(work, "u", pa.table({"_ROW_ID": pa.array([ids[4]], pa.int64()), "v": ["P4"]}))},
        {"op": "write", "table": "db.t", "columns": ["id", "p"],
         "data": _ipc(work, "sub", pa.table({"id": pa.array([7, 8], pa.int64()), "p": ["a", "a"]}))},
        {"op": "read", "table": "db.t", "columns": FIELDS, "out": str(work / "theirs.arrow")},
    ])
    assert _rows(read_ipc(work / "ours.arrow")) == _ours(cat, "db.t", FIELDS, snapshot_id=4)
    theirs = _rows(read_ipc(work / "theirs.arrow"))
    assert _ours(cat, "db.t", FIELDS) == theirs
    assert {r["id"]: (r["p"], r["v"], r["_ROW_ID"]) for r in theirs} == {
        1: ("a", "x", 0), 2: ("b", "y", 1), 3: ("a", "L3", ids[3]), 4: ("b", "P4", ids[4]), 5: ("a", None, ids[5]),
        6: ("b", "z", 5), 7: ("a", None, 6), 8: ("a", None, 7)}
    # we fill pypaimon's subset rows; pypaimon-rust reads every file (ours, pypaimon's, both updates)
    t = cat.get_table("db.t")
    t.update_columns(pa.table({"_ROW_ID": pa.array([6, 7], pa.int64()), "v": ["L7", "L8"]}))
    want = sorted(({"id": r["id"], "v": r["v"], "_ROW_ID": r["_ROW_ID"]} for r in theirs), key=lambda r: r["_ROW_ID"])
    want[6]["v"], want[7]["v"] = "L7", "L8"
    assert [{k: r[k] for k in ("id", "v", "_ROW_ID")} for r in _ours(cat, "db.t", FIELDS)] == want
    assert sorted(rust.query(tmp_warehouse, 'SELECT id, v, "_ROW_ID" FROM paimon.db.t'),
                  key=lambda r: r["_ROW_ID"]) == want


