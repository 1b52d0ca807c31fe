"""Compaction of row-tracking tables, as Paimon HEAD compacts them (ops/compact/row_tracking_rewrite.py):
every row keeps its ``_ROW_ID`` and ``_SEQUENCE_NUMBER``, stored as columns of the rewritten file,
which has no ``_FIRST_ROW_ID``, ``_WRITE_COLS`` of every column plus both, and its rows' sequence
range. pypaimon 2.1 and pypaimon-rust reading such files: tests/interop/test_row_tracking_interop.py."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.errors import UnsupportedFeatureError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.manifest import EMPTY_ROW, DataFileMeta, FileSource
from lake_assets.spec.snapshot import CommitKind

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
TRACKED = {"row-tracking.enabled": "true", "compaction.min.file-num": "2"}
COLUMNS = ["id", "p", "v", "_ROW_ID", "_SEQUENCE_NUMBER"]


def rows(ids: list[int], p: str = "a") -> pa.Table:
    return pa.table({"id": ids, "p": [p] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def state(t) -> list[dict]:  # type: ignore[no-untyped-def]
    return t.to_arrow(columns=COLUMNS).sort_by("_ROW_ID").to_pylist()


def live(t) -> list[DataFileMeta]:  # type: ignore[no-untyped-def]
    return [e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def test_paimon_head_compact_table_expectations(catalog: Catalog) -> None:
    """Paimon HEAD's ``RowTrackingTestBase`` "Row Tracking: compact table" (Spark, ``compaction.min.file-num
    = 2``), up to its UPDATE (lake_assets has no UPDATE): ids and sequence numbers survive two
    compactions, the second of which merges the first's output with two new files into one file
    of sequence range [1, 6] (#7409)."""
    t = catalog.create_table("db.t", pa.schema([("id", pa.int32()), ("data", pa.int32())]), options=TRACKED)
    for i in (1, 2, 3):
        t.write_arrow(pa.table({"id": [i], "data": [i]}, schema=t.schema.arrow_schema))

    def got() -> list[tuple[int, int, int, int]]:
        out = t.to_arrow(columns=["id", "data", "_ROW_ID", "_SEQUENCE_NUMBER"]).sort_by("id").to_pylist()
        return [tuple(r.values()) for r in out]

    assert got() == [(1, 1, 0, 1), (2, 2, 1, 2), (3, 3, 2, 3)]
    t.compact()
    assert t.latest_snapshot().commit_kind == CommitKind.COMPACT
    assert got() == [(1, 1, 0, 1), (2, 2, 1, 2), (3, 3, 2, 3)]
    t.write_arrow(pa.table({"id": [4], "data": [4]}, schema=t.schema.arrow_schema))
    t.write_arrow(pa.table({"id": [5], "data": [5]}, schema=t.schema.arrow_schema))
    t.compact()
    assert t.latest_snapshot().id == 7
    assert [(f.min_sequence_number, f.max_sequence_number) for f in live(t)] == [(1, 6)]
    assert got() == [(1, 1, 0, 1), (2, 2, 1, 2), (3, 3, 2, 3), (4, 4, 3, 5), (5, 5, 4, 6)]


def test_compacted_file_has_paimon_heads_layout(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=TRACKED)
    for i in range(3):
        t.write_arrow(pa.concat_tables([rows([10 * i, 10 * i + 1], "a"), rows([10 * i + 2], "b")]))
    before = state(t)
    result = t.compact(full=True)
    assert result.files_in == 6 and result.files_out == 2
    assert state(t) == before
    assert [s.next_row_id for s in t.snapshots()] == [3, 6, 9, 9]  # a compaction gives out no id
    for f in live(t):
        assert f.first_row_id is None and f.file_source == FileSource.COMPACT
        assert f.write_cols == ("id", "p", "v", "_ROW_ID", "_SEQUENCE_NUMBER")
        assert (f.min_sequence_number, f.max_sequence_number) == (1, 3)
        assert f.value_stats_cols is None and len(f.value_stats.null_counts or ()) == 5
        schema = pq.read_schema(os.path.join(t.store.paths.root, f"p={'a' if f.row_count == 6 else 'b'}",
                                             "bucket-0", f.file_name))
        ids = {n: (schema.field(n).metadata[b"PARQUET:field_id"], schema.field(n).nullable)
               for n in ("_ROW_ID", "_SEQUENCE_NUMBER")}
        assert ids == {"_ROW_ID": (b"2147483642", False), "_SEQUENCE_NUMBER": (b"2147483646", False)}
    # value stats cover the stored columns too: filters prune and read by them
    assert t.to_arrow(filter=[("id", "=", 21)]).column("v").to_pylist() == ["v21"]
    assert [r["_ROW_ID"] for r in t.to_arrow(columns=COLUMNS, filter=[("v", "=", "v12")]).to_pylist()] == [5]
    # a second compaction reads stored ids from the first's output and computed ones from new files
    t.write_arrow(rows([99], "a"))
    t.compact()
    assert state(t) == [*before, {"id": 99, "p": "a", "v": "v99", "_ROW_ID": 9, "_SEQUENCE_NUMBER": 5}]
    assert {(f.min_sequence_number, f.max_sequence_number) for f in live(t)} == {(1, 5), (1, 3)}


def test_deleted_rows_go_and_the_others_keep_their_ids(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={**TRACKED, "deletion-vectors.enabled": "true"})
    t.write_arrow(rows([1, 2, 3]))
    t.write_arrow(rows([4, 5]))
    t.delete_where([("id", "in", [2, 4])])
    before = state(t)
    assert [r["_ROW_ID"] for r in before] == [0, 2, 4]
    t.compact(full=True)
    assert state(t) == before
    assert sum(f.row_count for f in live(t)) == 3


def test_a_file_of_a_column_subset_is_refused_on_a_table_without_data_evolution(catalog: Catalog) -> None:
    """No Paimon writer leaves one there; rewriting it would turn its missing columns into nulls."""
    t = catalog.create_table("db.t", SCHEMA, options=TRACKED)
    t.write_arrow(rows([1]))
    t.write_arrow(rows([2]))
    f = live(t)[-1]
    hand = dataclasses.replace(f, file_name="data-hand-0.parquet", write_cols=("id", "v"), first_row_id=None,
                               min_sequence_number=0, max_sequence_number=0)
    src = os.path.join(t.store.paths.root, "bucket-0")
    pq.write_table(pa.table({"id": [7], "v": ["x"]}), os.path.join(src, hand.file_name))
    hand = dataclasses.replace(hand, file_size=os.path.getsize(os.path.join(src, hand.file_name)))
    t.new_committer("hand").commit([CommitMessage(EMPTY_ROW, 0, -1, new_files=(hand,))], 1)
    snapshots = len(t.snapshots())
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot compact db.t: data file data-hand-0.parquet .*lacks p"):
        t.compact(full=True)
    assert len(t.snapshots()) == snapshots


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["write", "compact", "full", "delete"]),
                          st.lists(st.integers(0, 30), min_size=1, max_size=5), st.sampled_from(["a", "b"])),
                min_size=2, max_size=9))
def test_row_ids_and_sequence_numbers_survive_any_compaction(tmp_path_factory: pytest.TempPathFactory,
                                                             ops: list[tuple[str, list[int], str]]) -> None:
    """Against a model: a row written by snapshot s gets the next free ids in commit order and
    sequence number s; compactions (universal or full, with deletion vectors) change neither, nor
    what a read returns; a delete removes rows and never renumbers the others."""
    cat = Catalog(str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"], options={**TRACKED, "deletion-vectors.enabled": "true"})
    model: dict[int, dict] = {}
    next_id, serial = 0, 0
    for op, values, p in ops:
        if op == "write":
            serial += 1
            ids = [serial * 100 + v for v in values]
            t.write_arrow(rows(ids, p))
            snap = t.latest_snapshot().id
            for i in ids:
                model[next_id] = {"id": i, "p": p, "v": f"v{i}", "_ROW_ID": next_id, "_SEQUENCE_NUMBER": snap}
                next_id += 1
        elif op == "delete":
            gone = {r for r, row in model.items() if row["id"] % 31 in values}
            if gone:
                t.delete_where([("id", "in", [model[r]["id"] for r in gone])])
                for r in gone:
                    del model[r]
        else:
            before = state(t) if model else []
            t.compact(full=op == "full")
            assert (state(t) if model else []) == before
        assert (state(t) if t.latest_snapshot() else []) == [model[r] for r in sorted(model)]


def test_rollback_never_lets_a_retained_tag_share_row_ids_with_new_rows(catalog: Catalog) -> None:
    """A rollback moves nextRowId back to the target's, so the next commits give out the removed
    snapshots' ids again. As Paimon's RollbackHelper.cleanLargerThan, it removes the tags of newer
    snapshots (a compaction's as well), so no retained tag or snapshot holds an id a new row gets:
    every id is held by one row in the table and in each tag that is left."""
    t = catalog.create_table("db.t", SCHEMA, options=TRACKED)
    t.write_arrow(rows([1, 2]))  # snapshot 1: ids 0, 1
    t.create_tag("first", 1)
    t.write_arrow(rows([3]))  # snapshot 2: id 2
    t.create_tag("second", 2)
    t.compact()  # snapshot 3: no new id, each row's ids stored in the output
    t.create_tag("compacted", 3)
    t.write_arrow(rows([4]))  # snapshot 4: id 3
    t.create_tag("later", 4)
    t.rollback_to(snapshot_id=3)
    assert sorted(t.tags()) == ["compacted", "first", "second"]
    t.write_arrow(rows([5]))  # snapshot 4 again: id 3 again, which no tag holds any more
    assert [(r["id"], r["_ROW_ID"]) for r in state(t)] == [(1, 0), (2, 1), (3, 2), (5, 3)]
    assert t.rollback_to(tag="first").id == 1
    assert sorted(t.tags()) == ["first"]
    t.write_arrow(rows([6]))
    assert [(r["id"], r["_ROW_ID"]) for r in state(t)] == [(1, 0), (2, 1), (6, 2)]
    assert t.latest_snapshot().next_row_id == 3
    assert {name: snap.next_row_id for name, snap in t.tags().items()} == {"first": 2}
