"""Compaction of data-evolution tables, as Paimon HEAD's ``DataEvolutionCompactCoordinator`` plans
it and ``DataEvolutionNormalCompactTask`` runs it (ops/compact/data_evolution_compact.py). The
planner cases are HEAD's ``DataEvolutionCompactCoordinatorTest`` ones (normal files; blob and
vector-store files are refused by their formats). pypaimon's column updates compacted and read
back by pypaimon 2.1 and pypaimon-rust: tests/interop/test_row_tracking_interop.py."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog, Table
from lake_assets.errors import CorruptMetadataError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact.data_evolution_compact import plan_groups
from lake_assets.options import CoreOptions
from lake_assets.spec.manifest import EMPTY_ROW, DataFileMeta, FileSource, SimpleStats

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
EVOLVING = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "compaction.min.file-num": "2"}
COLUMNS = ["id", "p", "v", "_ROW_ID", "_SEQUENCE_NUMBER"]
MB = 1024 * 1024


def meta(name: str, first: int, rows: int, size: int = 100, seq: int = 1,
         cols: tuple[str, ...] | None = None) -> DataFileMeta:
    return DataFileMeta(name, size, rows, EMPTY_ROW, EMPTY_ROW, SimpleStats.EMPTY, SimpleStats.EMPTY, seq, seq, 0, 0,
                        file_source=FileSource.APPEND, first_row_id=first, write_cols=cols)


def options(target: int, open_cost: int, min_files: int = 2) -> CoreOptions:
    return CoreOptions({"target-file-size": f"{target} b", "source.split.open-file-cost": f"{open_cost} b",
                        "compaction.min.file-num": str(min_files)}, has_primary_key=False)


def names(units: list[list[DataFileMeta]]) -> list[list[str]]:
    return [[f.file_name for f in unit] for unit in units]


def test_planner_cases_of_paimon_head() -> None:
    # testCompactPlannerSingleFile
    assert plan_groups([meta("f1", 0, 100)], options(128 * MB, 4 * MB), "db.t") == []
    # testCompactPlannerContiguousFiles: the bin flushes once it outweighs the target
    files = [meta("f1", 0, 100), meta("f2", 100, 100), meta("f3", 200, 100)]
    assert names(plan_groups(files, options(199, 1), "db.t")) == [["f1", "f2"]]
    assert names(plan_groups(files, options(200, 1), "db.t")) == [["f1", "f2", "f3"]]
    # testCompactPlannerWithRowIdGap: a gap ends a stretch
    files = [meta("f1", 0, 100), meta("f2", 100, 100), meta("f3", 1000, 100), meta("f4", 1100, 100)]
    assert names(plan_groups(files, options(128 * MB, 4 * MB), "db.t")) == [["f1", "f2"], ["f3", "f4"]]
    # testCompactPlannerSkipsLargeFiles (one partition's part): a file over the target is a unit
    # alone, never compacted; the small ones around it are
    files = [meta("large", 0, 100, 200 * MB), meta("f1", 100, 100), meta("f2", 200, 100),
             meta("large2", 300, 100, 200 * MB), meta("f3", 400, 100), meta("f4", 500, 100)]
    assert names(plan_groups(files, options(100 * MB, 4 * MB), "db.t")) == [["f1", "f2"], ["f3", "f4"]]
    # a base file and its column updates are one group: never split across units
    files = [meta("base", 0, 10), meta("upd", 0, 10, seq=2, cols=("v",)), meta("next", 10, 5)]
    assert names(plan_groups(files, options(150, 100), "db.t")) == [["base", "upd"]]
    # files of overlapping ranges that differ: Java fails, and so does this
    with pytest.raises(CorruptMetadataError, match="must span the same range"):
        plan_groups([meta("a", 0, 10), meta("b", 5, 10)], options(128 * MB, 4 * MB), "db.t")


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def two_files(catalog: Catalog) -> Table:
    t = catalog.create_table("db.t", SCHEMA, options=EVOLVING)
    t.write_arrow(pa.table({"id": [1, 2], "p": ["a", "a"], "v": ["x", "y"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [3], "p": ["b"], "v": ["z"]}, schema=SCHEMA))
    return t


def update_v(t: Table, values: list[str], tag: str) -> None:
    """Commit an update of column ``v`` of the first file's rows in pypaimon's layout (by hand:
    lake_assets writes no column updates)."""
    base = min((e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())
                if e.file.first_row_id == 0), key=lambda f: f.max_sequence_number)
    name = f"data-{tag * 8}-1111-1111-1111-111111111111-0.parquet"
    bucket_dir = os.path.join(t.store.paths.root, "bucket-0")
    pq.write_table(pa.table({"v": values}), os.path.join(bucket_dir, name))
    update = dataclasses.replace(base, file_name=name, file_size=os.path.getsize(os.path.join(bucket_dir, name)),
                                 row_count=len(values), write_cols=("v",), min_sequence_number=0,
                                 max_sequence_number=0, value_stats=SimpleStats.EMPTY, value_stats_cols=(),
                                 extra_files=(), file_source=FileSource.APPEND, first_row_id=0)
    # a new commit identifier each time: the committer skips one it already committed
    t.new_committer("hand").commit([CommitMessage(EMPTY_ROW, 0, -1, new_files=(update,))], t.latest_snapshot().id)


def test_compaction_merges_column_updates_and_keeps_row_ids(catalog: Catalog) -> None:
    """Two whole-row files and an update of column ``v`` of the first one's rows (made by hand in
    pypaimon's layout: lake_assets writes no column updates) become one file of every column:
    values and _ROW_ID read the same; _SEQUENCE_NUMBER is the output's max for every row, as after
    HEAD's compaction (it stores no sequence column)."""
    t = two_files(catalog)
    update_v(t, ["X", "Y"], "1")
    before = t.to_arrow(columns=COLUMNS).sort_by("_ROW_ID").to_pylist()
    assert [(r["v"], r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in before] == [("X", 0, 3), ("Y", 1, 3), ("z", 2, 2)]
    result = t.compact()
    assert result.files_in == 3 and result.files_out == 1
    after = t.to_arrow(columns=COLUMNS).sort_by("_ROW_ID").to_pylist()
    assert after == [{**r, "_SEQUENCE_NUMBER": 3} for r in before]
    [f] = [e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]
    assert (f.first_row_id, f.row_count, f.write_cols, f.file_source) == (0, 3, None, FileSource.COMPACT)
    assert (f.min_sequence_number, f.max_sequence_number) == (1, 3)
    assert [s.next_row_id for s in t.snapshots()] == [2, 3, 3, 3]
    # one more commit continues the ids
    t.write_arrow(pa.table({"id": [4], "p": ["a"], "v": ["w"]}, schema=SCHEMA))
    assert t.to_arrow(columns=["id", "_ROW_ID"]).sort_by("_ROW_ID").column("_ROW_ID").to_pylist() == [0, 1, 2, 3]


def test_a_column_update_landing_during_the_compaction_is_a_conflict(catalog: Catalog) -> None:
    """An update of rows the unit merged, committed between the compaction's plan and its commit,
    would leave a file of a row range inside the output's wider one, which no reader can merge:
    the compaction's commit gives up (HEAD's DataEvolutionConflictDetection) and the table reads
    the update."""
    from lake_assets.errors import CommitConflictError
    from lake_assets.ops.commit import TableCommitter
    from lake_assets.ops.compact.plan import plan_compaction
    from lake_assets.ops.compact.rewrite import run_compaction_tasks

    t = two_files(catalog)
    plan = plan_compaction(t.store)
    messages = run_compaction_tasks(t.store, plan.tasks)
    t.update_columns(pa.table({"_ROW_ID": pa.array([0, 1], pa.int64()), "v": ["X", "Y"]}))
    with pytest.raises(CommitConflictError, match="overlap in row ids without spanning the same range"):
        TableCommitter(t.store, "compactor").commit(messages, check_committed=False)
    assert t.to_arrow().sort_by("id").column("v").to_pylist() == ["X", "Y", "z"]
    assert t.latest_snapshot().commit_kind.name == "APPEND"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["write", "update", "compact"]),
                          st.lists(st.integers(0, 30), min_size=1, max_size=4)), min_size=2, max_size=8))
def test_any_compaction_keeps_values_and_row_ids(tmp_path_factory: pytest.TempPathFactory,
                                                 ops: list[tuple[str, list[int]]]) -> None:
    """Against a model: writes give the next ids, updates of ``v`` of the first file's rows win,
    compactions change no value and no id; a row's _SEQUENCE_NUMBER never goes down."""
    cat = Catalog(str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options=EVOLVING)
    model: dict[int, tuple[int, str]] = {}
    seqs: dict[int, int] = {}
    updates = 0
    for op, values in ops:
        if op == "write" or not model:
            for v in values:
                model[len(model)] = (v, f"v{v}")
            t.write_arrow(pa.table({"id": [v for v in values], "p": ["a"] * len(values),
                                    "v": [f"v{v}" for v in values]}, schema=SCHEMA))
        elif op == "update":
            first = next(e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())
                         if e.file.first_row_id == 0)
            updates += 1
            new = [f"u{updates}-{i}" for i in range(first.row_count)]
            update_v(t, new, str(updates % 10))  # names: a hypothesis run makes at most 7 updates
            for i, v in enumerate(new):
                model[i] = (model[i][0], v)
        else:
            t.compact()
        got = t.to_arrow(columns=COLUMNS).sort_by("_ROW_ID").to_pylist()
        assert [(r["_ROW_ID"], r["id"], r["v"]) for r in got] == [(i, *model[i]) for i in sorted(model)]
        for r in got:
            assert r["_SEQUENCE_NUMBER"] >= seqs.get(r["_ROW_ID"], 0)
            seqs[r["_ROW_ID"]] = r["_SEQUENCE_NUMBER"]
