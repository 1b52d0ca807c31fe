"""Row tracking and data evolution against pypaimon 2.1, the reference engine here (Paimon Java
0.9, our usual oracle, predates both features; pypaimon 2.1 implements Paimon HEAD's commit-time
row-id assignment and its ``DataEvolutionSplitRead`` merge).

* pypaimon writes a row-tracking, data-evolution table (two commits, a column update by
  ``_ROW_ID``, and an update of a column lake_assets added): lake_assets reads the same rows, row
  ids and sequence numbers as pypaimon, at the latest and at an older snapshot, whole and in
  batches.
* lake_assets writes one: pypaimon reads the row ids lake_assets assigned, updates a column of
  lake_assets' files, and a later lake_assets commit continues from pypaimon's ``nextRowId``.
* Expiry down to the latest snapshot and orphan removal keep every file pypaimon's read of the
  latest snapshot needs (its base files come from expired snapshots); a rollback to a tag taken
  before the update drops the update and keeps the base files.
* pypaimon-rust 0.4 reads the merged rows and ``_ROW_ID`` (also of lake_assets' column updates) and its
  commit continues the ids.
* lake_assets' column updates (`Table.update_columns`) are read and streamed by pypaimon as by us.

Each test drives pypaimon through one subprocess call per phase (`row_tracking_driver.py`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_assets import Catalog

from .paimon import Pypaimon, PypaimonRust, read_ipc, write_ipc

OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "bucket": "-1"}
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
FIELDS = ["id", "p", "v", "_ROW_ID", "_SEQUENCE_NUMBER"]


class RowTrackingPaimon(Pypaimon):
    """pypaimon 2.1 running a list of steps in one process (`row_tracking_driver.py`)."""

    driver = Path(__file__).with_name("row_tracking_driver.py")

    def steps(self, warehouse: str, work: Path, steps: list[dict[str, Any]]) -> None:
        path = work / f"steps-{len(list(work.glob('steps-*')))}.json"
        path.write_text(json.dumps(steps))
        self.run("steps", warehouse, str(path))


@pytest.fixture
def driver(pypaimon: Pypaimon) -> RowTrackingPaimon:
    return RowTrackingPaimon(pypaimon.python)


def _ipc(work: Path, name: str, table: pa.Table | pa.Schema) -> str:
    path = work / f"{name}.arrow"
    write_ipc(table, path)
    return str(path)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.sort_by("_ROW_ID").to_pylist()


def _ours(cat: Catalog, name: str, columns: list[str], snapshot_id: int | None = None) -> list[dict[str, Any]]:
    t = cat.get_table(name)
    whole = t.to_arrow(columns=columns, snapshot_id=snapshot_id)
    batched = pa.Table.from_batches(list(t.to_batches(columns=columns, snapshot_id=snapshot_id, batch_size=2)),
                                    schema=whole.schema)
    assert _rows(batched) == _rows(whole)  # the streaming read merges as the whole read does
    return _rows(whole)


def test_lake_assets_reads_what_pypaimon_wrote_and_updated(driver: RowTrackingPaimon, tmp_warehouse: str,
                                                           tmp_path: Path) -> None:
    work = tmp_path
    first = pa.table({"id": [1, 2, 3, 4], "p": ["a", "b", "a", "b"], "v": ["v1", "v2", "v3", "v4"]}, schema=SCHEMA)
    second = pa.table({"id": [5, 6], "p": ["a", "a"], "v": ["v5", "v6"]}, schema=SCHEMA)
    driver.steps(tmp_warehouse, work, [
        {"op": "create", "table": "db.t", "schema": _ipc(work, "schema", SCHEMA), "partition_keys": ["p"],
         "options": OPTIONS},
        {"op": "write", "table": "db.t", "data": _ipc(work, "first", first)},
        {"op": "write", "table": "db.t", "data": _ipc(work, "second", second)},
        {"op": "read", "table": "db.t", "columns": FIELDS, "out": str(work / "before.arrow")},
    ])
    before = _rows(read_ipc(work / "before.arrow"))
    assert sorted(r["_ROW_ID"] for r in before) == list(range(6))
    # the update rewrites v of some rows of both commits' files by row id
    ids = {r["id"]: r["_ROW_ID"] for r in before}
    update = pa.table({"_ROW_ID": pa.array([ids[1], ids[5]], pa.int64()), "v": ["V1", "V5"]})
    cat = Catalog(tmp_warehouse)
    driver.steps(tmp_warehouse, work, [{"op": "update", "table": "db.t", "data": _ipc(work, "u1", update),
                                        "columns": ["v"]}])
    # a column added here, filled by pypaimon's update: files of that column alone
    cat.get_table("db.t").update_schema().add_column("w", pa.int64()).commit()
    added = pa.table({"_ROW_ID": pa.array([ids[2], ids[3]], pa.int64()), "w": pa.array([20, 30], pa.int64())})
    fields = [*FIELDS, "w"]
    driver.steps(tmp_warehouse, work, [
        {"op": "update", "table": "db.t", "data": _ipc(work, "u2", added), "columns": ["w"]},
        {"op": "read", "table": "db.t", "columns": fields, "out": str(work / "latest.arrow")},
        {"op": "read", "table": "db.t", "columns": FIELDS, "snapshot_id": 3, "out": str(work / "at3.arrow")},
        {"op": "read", "table": "db.t", "columns": ["w", "_ROW_ID"], "out": str(work / "w.arrow")},
    ])
    theirs = _rows(read_ipc(work / "latest.arrow"))
    t = cat.get_table("db.t")
    assert any(e.file.write_cols is not None for e in t.store.file_store_scan().live_entries(t.latest_snapshot()))
    assert _ours(cat, "db.t", fields) == theirs
    assert {r["id"]: (r["v"], r["w"]) for r in theirs} == {
        1: ("V1", None), 2: ("v2", 20), 3: ("v3", 30), 4: ("v4", None), 5: ("V5", None), 6: ("v6", None)}
    assert _ours(cat, "db.t", FIELDS, snapshot_id=3) == _rows(read_ipc(work / "at3.arrow"))
    assert _ours(cat, "db.t", ["w", "_ROW_ID"]) == _rows(read_ipc(work / "w.arrow"))
    # without system columns: the same rows
    plain = t.to_arrow().sort_by("id").to_pylist()
    assert plain == [{k: r[k] for k in ("id", "p", "v", "w")} for r in sorted(theirs, key=lambda r: r["id"])]
    # a filter on an updated column sees the merged value (no file pruned by its own stats)
    assert t.to_arrow(filter=pc.field("v") == "V5").column("id").to_pylist() == [5]
    # health counts pypaimon's update files' rows once (per partition, as pypaimon reads them), and
    # reports no LSM numbers (tests/unit/test_health_row_tracking.py)
    health = t.health().to_pylist()
    by_partition = Counter(f"p={r['p']}" for r in theirs)
    assert {r["partition"]: r["row_count"] for r in health} == dict(by_partition)
    assert sum(r["file_count"] for r in health) > len(by_partition)  # update files besides the bases
    assert all(r["sorted_runs"] is None and r["level0_file_count"] is None for r in health)


def test_pypaimon_reads_row_ids_lake_assets_assigned(driver: RowTrackingPaimon, tmp_warehouse: str,
                                                     tmp_path: Path) -> None:
    work = tmp_path
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    t = cat.get_table("db.t")
    t.write_arrow(pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"], "v": ["x", "y", "z"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [4, 5], "p": ["b", "b"], "v": ["u", "w"]}, schema=SCHEMA))
    ours = _ours(cat, "db.t", FIELDS)
    # ids are unique, contiguous per partition within a commit, and sequence = the committing snapshot
    assert [r["_ROW_ID"] for r in ours] == list(range(5))
    assert {r["id"]: r["_SEQUENCE_NUMBER"] for r in ours} == {1: 1, 2: 1, 3: 1, 4: 2, 5: 2}
    assert t.latest_snapshot().next_row_id == 5
    ids = {r["id"]: r["_ROW_ID"] for r in ours}
    update = pa.table({"_ROW_ID": pa.array([ids[3], ids[4]], pa.int64()), "v": ["Z", "U"]})
    driver.steps(tmp_warehouse, work, [
        {"op": "read", "table": "db.t", "columns": FIELDS, "out": str(work / "r1.arrow")},
        {"op": "update", "table": "db.t", "data": _ipc(work, "u", update), "columns": ["v"]},
    ])
    assert _rows(read_ipc(work / "r1.arrow")) == ours
    # our next commit takes ids from pypaimon's snapshot on
    t = cat.get_table("db.t")
    assert t.latest_snapshot().next_row_id == 5
    t.write_arrow(pa.table({"id": [6], "p": ["a"], "v": ["s"]}, schema=SCHEMA))
    assert t.latest_snapshot().next_row_id == 6
    driver.steps(tmp_warehouse, work, [{"op": "read", "table": "db.t", "columns": FIELDS,
                                        "out": str(work / "r2.arrow")}])
    theirs = _rows(read_ipc(work / "r2.arrow"))
    assert _ours(cat, "db.t", FIELDS) == theirs
    assert {r["id"]: (r["v"], r["_ROW_ID"]) for r in theirs} == {
        1: ("x", ids[1]), 2: ("y", ids[2]), 3: ("Z", ids[3]), 4: ("U", ids[4]), 5: ("w", ids[5]), 6: ("s", 5)}


def test_expiry_and_orphans_keep_the_files_of_a_row_range(driver: RowTrackingPaimon, tmp_warehouse: str,
                                                          tmp_path: Path) -> None:
    work = tmp_path
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, options=OPTIONS)
    t = cat.get_table("db.t")
    t.write_arrow(pa.table({"id": [1, 2], "p": ["a", "a"], "v": ["x", "y"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [3], "p": ["a"], "v": ["z"]}, schema=SCHEMA))
    t.create_tag("before_update", snapshot_id=2)
    tagged = _ours(cat, "db.t", FIELDS)
    update = pa.table({"_ROW_ID": pa.array([1, 2], pa.int64()), "v": ["Y", "Z"]})
    driver.steps(tmp_warehouse, work, [
        {"op": "update", "table": "db.t", "data": _ipc(work, "u", update), "columns": ["v"]},
        {"op": "read", "table": "db.t", "columns": FIELDS, "out": str(work / "before.arrow")},
    ])
    before = _rows(read_ipc(work / "before.arrow"))
    t = cat.get_table("db.t")
    expired = t.expire_snapshots(retain_min=1, retain_max=1)
    assert [s.id for s in t.snapshots()] == [3]
    assert expired is not None
    orphans = t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    # every data file left is one the latest snapshot lists (expiry deleted the others)
    assert [p for p in orphans.paths if os.path.basename(p).startswith("data-")] == []
    driver.steps(tmp_warehouse, work, [{"op": "read", "table": "db.t", "columns": FIELDS,
                                        "out": str(work / "after.arrow")}])
    assert _rows(read_ipc(work / "after.arrow")) == before
    assert _ours(cat, "db.t", FIELDS) == before
    # a rollback to the tag drops the update's files and keeps the base files both snapshots share
    cat.get_table("db.t").rollback_to(tag="before_update")
    driver.steps(tmp_warehouse, work, [{"op": "read", "table": "db.t", "columns": FIELDS,
                                        "out": str(work / "rolled.arrow")}])
    assert _rows(read_ipc(work / "rolled.arrow")) == _ours(cat, "db.t", FIELDS) == tagged
    assert [r["v"] for r in tagged] == ["x", "y", "z"]


def test_pypaimon_rust_reads_merged_rows_and_continues_row_ids(driver: RowTrackingPaimon, rust: PypaimonRust,
                                                               tmp_warehouse: str, tmp_path: Path) -> None:
    """pypaimon-rust 0.4 (the reference for this direction; its SQL exposes ``_ROW_ID``, not
    ``_SEQUENCE_NUMBER``) reads lake_assets' files merged with a pypaimon update, and its commit
    takes row ids from lake_assets' ``nextRowId`` on, which lake_assets reads back."""
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options=OPTIONS)
    t.write_arrow(pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"], "v": ["x", "y", "z"]}, schema=SCHEMA))
    update = pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["X"]})
    driver.steps(tmp_warehouse, tmp_path, [{"op": "update", "table": "db.t", "data": _ipc(tmp_path, "u", update),
                                            "columns": ["v"]}])
    rust.write_batch(tmp_warehouse, "db.t", pa.table({"id": [9], "p": ["c"], "v": ["r"]}, schema=SCHEMA))
    t = cat.get_table("db.t")
    assert [s.next_row_id for s in t.snapshots()] == [3, 3, 4]
    ours = [{k: r[k] for k in ("id", "v", "_ROW_ID")} for r in _ours(cat, "db.t", FIELDS)]
    theirs = rust.query(tmp_warehouse, 'SELECT id, v, "_ROW_ID" FROM paimon.db.t')
    assert sorted(theirs, key=lambda r: r["_ROW_ID"]) == ours == [
        {"id": 1, "v": "X", "_ROW_ID": 0}, {"id": 2, "v": "y", "_ROW_ID": 1}, {"id": 3, "v": "z", "_ROW_ID": 2},
        {"id": 9, "v": "r", "_ROW_ID": 3}]
    # lake_assets' own column update, over pypaimon's file of the range and of rust's row
    t.update_columns(pa.table({"_ROW_ID": pa.array([0, 1, 3], pa.int64()), "v": ["L0", "L1", "L3"]}))
    theirs = rust.query(tmp_warehouse, 'SELECT id, v, "_ROW_ID" FROM paimon.db.t')
    assert sorted(theirs, key=lambda r: r["_ROW_ID"]) == [
        {"id": 1, "v": "L0", "_ROW_ID": 0}, {"id": 2, "v": "L1", "_ROW_ID": 1}, {"id": 3, "v": "z", "_ROW_ID": 2},
        {"id": 9, "v": "L3", "_ROW_ID": 3}]


def _changes(t: Any, snapshots: list[int], columns: list[str]) -> list[dict[str, Any]]:
    """Our change reads of each snapshot, as the driver's ``changes`` step lists pypaimon's."""
    out = []
    for sid in snapshots:
        got = t.read_changes(sid - 1, sid, columns=columns).drop_columns(["_row_kind"])
        out += [{**r, "_snapshot": sid} for r in got.to_pylist()]
    return sorted(out, key=lambda r: (r["_snapshot"], r["_ROW_ID"]))


def test_column_updates_of_lake_assets_and_pypaimon_read_and_stream_alike(
        driver: RowTrackingPaimon, tmp_warehouse: str, tmp_path: Path) -> None:
    """lake_assets' `update_columns` files (an updated column, and a column added later) are read
    by pypaimon as by us, pypaimon updates over them and we over pypaimon's; each snapshot's
    changes - a column update's rows with its columns only - are what pypaimon's stream reads."""
    work = tmp_path
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "p": ["a", "b", "a", "b"], "v": ["v1", "v2", "v3", "v4"]},
                           schema=SCHEMA))
    t.write_arrow(pa.table({"id": [5, 6], "p": ["a", "a"], "v": ["v5", "v6"]}, schema=SCHEMA))
    t.update_schema().add_column("w", pa.int64()).commit()
    t = cat.get_table("db.t")
    ids = {r["id"]: r["_ROW_ID"] for r in _ours(cat, "db.t", FIELDS)}
    t.update_columns(pa.table({"_ROW_ID": pa.array([ids[1], ids[5]], pa.int64()), "v": ["V1", "V5"],
                               "w": pa.array([10, 50], pa.int64())}))  # snapshot 3
    t.update_columns(pa.table({"_ROW_ID": pa.array([ids[4]], pa.int64()), "w": pa.array([40], pa.int64())}))
    fields = [*FIELDS, "w"]
    plain = ["id", "p", "v", "w", "_ROW_ID"]
    driver.steps(tmp_warehouse, work, [
        {"op": "read", "table": "db.t", "columns": fields, "out": str(work / "ours.arrow")},
        {"op": "changes", "table": "db.t", "columns": plain, "snapshots": [2, 3, 4], "out": str(work / "c1.arrow")},
        {"op": "update", "table": "db.t", "columns": ["v"],
         "data": _ipc(work, "u", pa.table({"_ROW_ID": pa.array([ids[3], ids[5]], pa.int64()), "v": ["P3", "P5"]}))},
        {"op": "read", "table": "db.t", "columns": fields, "out": str(work / "theirs.arrow")},
        # pypaimon's column-subset write of new rows (with_write_type): the other columns are null
        {"op": "create", "table": "db.s", "schema": _ipc(work, "schema", SCHEMA), "options": OPTIONS},
        {"op": "write", "table": "db.s", "columns": ["id"],
         "data": _ipc(work, "ids", pa.table({"id": pa.array([1, 2], pa.int64())}))},
        {"op": "write", "table": "db.s", "data": _ipc(work, "full", pa.table(
            {"id": [3], "p": ["x"], "v": ["y"]}, schema=SCHEMA))},
        {"op": "read", "table": "db.s", "columns": FIELDS, "out": str(work / "subset.arrow")},
    ])
    subset = _rows(read_ipc(work / "subset.arrow"))
    assert _ours(cat, "db.s", FIELDS) == subset
    assert [(r["id"], r["p"], r["_ROW_ID"]) for r in subset] == [(1, None, 0), (2, None, 1), (3, "x", 2)]
    assert _rows(read_ipc(work / "ours.arrow")) == _ours(cat, "db.t", fields, snapshot_id=4)
    assert {r["id"]: (r["v"], r["w"]) for r in _rows(read_ipc(work / "ours.arrow"))} == {
        1: ("V1", 10), 2: ("v2", None), 3: ("v3", None), 4: ("v4", 40), 5: ("V5", 50), 6: ("v6", None)}
    theirs = sorted(read_ipc(work / "c1.arrow").to_pylist(), key=lambda r: (r["_snapshot"], r["_ROW_ID"]))
    assert _changes(cat.get_table("db.t"), [2, 3, 4], plain) == theirs
    assert [r["id"] for r in theirs if r["_snapshot"] == 3] == [None] * 4  # the update's rows: its columns only
    t = cat.get_table("db.t")
    assert _ours(cat, "db.t", fields) == _rows(read_ipc(work / "theirs.arrow"))
    # our update over pypaimon's file of the same range, then pypaimon reads it back
    t.update_columns(pa.table({"_ROW_ID": pa.array([ids[6]], pa.int64()), "v": ["L6"]}))
    driver.steps(tmp_warehouse, work, [{"op": "read", "table": "db.t", "columns": fields,
                                        "out": str(work / "last.arrow")}])
    last = _rows(read_ipc(work / "last.arrow"))
    assert _ours(cat, "db.t", fields) == last
    assert {r["id"]: r["v"] for r in last} == {1: "V1", 2: "v2", 3: "P3", 4: "v4", 5: "P5", 6: "L6"}
    # filters on the newest values and on _ROW_ID select what pypaimon's rows hold
    t = cat.get_table("db.t")
    for term in [("v", "=", "P5"), ("v", "=", "v5"), ("w", ">=", 40), ("_ROW_ID", "<", 2)]:
        col, op, lit = term
        want = sorted(r["id"] for r in last if r[col] is not None and (
            r[col] == lit if op == "=" else r[col] >= lit if op == ">=" else r[col] < lit))
        assert sorted(t.to_arrow(columns=["id"], filter=[term]).column("id").to_pylist()) == want, term


def test_engines_reading_a_compacted_row_tracking_table(driver: RowTrackingPaimon, rust: PypaimonRust,
                                                        tmp_warehouse: str, tmp_path: Path) -> None:
    """lake_assets compacts a row-tracking table in Paimon HEAD's form (ids stored as columns, no
    ``_FIRST_ROW_ID``: ops/compact/row_tracking_rewrite.py) after pypaimon and lake_assets wrote it.
    Every engine reads the same rows; the ids they read of the compacted file are pinned here."""
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, partition_keys=["p"], options={"row-tracking.enabled": "true", "bucket": "-1",
                                                                    "compaction.min.file-num": "2"})
    driver.steps(tmp_warehouse, tmp_path, [
        {"op": "write", "table": "db.t", "data": _ipc(tmp_path, "w1", pa.table(
            {"id": [1, 2], "p": ["a", "a"], "v": ["x", "y"]}, schema=SCHEMA))}])
    t = cat.get_table("db.t")
    t.write_arrow(pa.table({"id": [3], "p": ["a"], "v": ["z"]}, schema=SCHEMA))
    before = _ours(cat, "db.t", FIELDS)
    t.compact()
    assert _ours(cat, "db.t", FIELDS) == before
    files = [e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]
    assert [(f.first_row_id, f.write_cols) for f in files] == [(None, tuple(FIELDS))]
    driver.steps(tmp_warehouse, tmp_path, [{"op": "read", "table": "db.t", "columns": FIELDS,
                                            "out": str(tmp_path / "compacted.arrow")}])
    theirs = read_ipc(tmp_path / "compacted.arrow").sort_by("id").to_pylist()
    # pypaimon 2.1 reads the data and the stored _SEQUENCE_NUMBER, but a null _ROW_ID for every row of
    # a file without _FIRST_ROW_ID: DataFileBatchReader._assign_row_tracking fills nulls there and
    # never looks at the stored column (Java HEAD's DataFileRecordReader takes the stored value,
    # falling back to _FIRST_ROW_ID + position). pypaimon's limitation, not another form to write.
    assert [{**r, "_ROW_ID": None} for r in sorted(before, key=lambda r: r["id"])] == theirs
    # pypaimon-rust 0.4 fails on the table: it requires a _FIRST_ROW_ID of every file of a
    # row-tracking table, which Paimon HEAD's compaction output never has (RowTrackingCommitUtils:
    # "for compact file, do not assign first row id"). Its limitation, pinned; the table is fine.
    with pytest.raises(AssertionError, match=r"Row-tracked file 'data-.*' is missing first_row_id"):
        rust.query(tmp_warehouse, "SELECT id, p, v FROM paimon.db.t")
    # a pypaimon commit after the compaction continues from nextRowId: no id is given twice
    driver.steps(tmp_warehouse, tmp_path, [
        {"op": "write", "table": "db.t", "data": _ipc(tmp_path, "w2", pa.table(
            {"id": [4], "p": ["a"], "v": ["w"]}, schema=SCHEMA))}])
    assert [r["_ROW_ID"] for r in _ours(cat, "db.t", FIELDS)] == [0, 1, 2, 3]


def test_engines_read_a_compacted_data_evolution_table(driver: RowTrackingPaimon, rust: PypaimonRust,
                                                       tmp_warehouse: str, tmp_path: Path) -> None:
    """pypaimon writes a data-evolution table and updates a column by ``_ROW_ID``; lake_assets
    compacts the base files and the update into one file of every column (HEAD's
    ``DataEvolutionNormalCompactTask``: a ``_FIRST_ROW_ID``, no stored system column). pypaimon 2.1
    and pypaimon-rust 0.4 read the same rows and ids as before; ``_SEQUENCE_NUMBER`` is the
    output's max for every row, as after HEAD's compaction; pypaimon's next commit continues the ids."""
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, options={**OPTIONS, "compaction.min.file-num": "2"})
    update = pa.table({"_ROW_ID": pa.array([1, 2], pa.int64()), "v": ["Y", "Z"]})
    driver.steps(tmp_warehouse, tmp_path, [
        {"op": "write", "table": "db.t", "data": _ipc(tmp_path, "w1", pa.table(
            {"id": [1, 2], "p": ["a", "b"], "v": ["x", "y"]}, schema=SCHEMA))},
        {"op": "write", "table": "db.t", "data": _ipc(tmp_path, "w2", pa.table(
            {"id": [3], "p": ["a"], "v": ["z"]}, schema=SCHEMA))},
        {"op": "update", "table": "db.t", "data": _ipc(tmp_path, "u", update), "columns": ["v"]}])
    before = _ours(cat, "db.t", FIELDS)
    assert [(r["v"], r["_ROW_ID"]) for r in before] == [("x", 0), ("Y", 1), ("Z", 2)]
    result = cat.get_table("db.t").compact()
    assert result.files_out == 1 and result.files_in >= 3
    t = cat.get_table("db.t")
    top = max(r["_SEQUENCE_NUMBER"] for r in before)
    assert _ours(cat, "db.t", FIELDS) == [{**r, "_SEQUENCE_NUMBER": top} for r in before]
    driver.steps(tmp_warehouse, tmp_path, [{"op": "read", "table": "db.t", "columns": FIELDS,
                                            "out": str(tmp_path / "compacted.arrow")}])
    assert _rows(read_ipc(tmp_path / "compacted.arrow")) == _ours(cat, "db.t", FIELDS)
    theirs = rust.query(tmp_warehouse, 'SELECT id, v, "_ROW_ID" FROM paimon.db.t')
    assert sorted(theirs, key=lambda r: r["_ROW_ID"]) == [{k: r[k] for k in ("id", "v", "_ROW_ID")} for r in before]
    driver.steps(tmp_warehouse, tmp_path, [
        {"op": "write", "table": "db.t", "data": _ipc(tmp_path, "w3", pa.table(
            {"id": [4], "p": ["b"], "v": ["w"]}, schema=SCHEMA))}])
    assert [r["_ROW_ID"] for r in _ours(cat, "db.t", FIELDS)] == [0, 1, 2, 3]
    assert t.refresh().latest_snapshot().next_row_id == 4
