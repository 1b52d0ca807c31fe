"""Column updates of data-evolution tables (`Table.update_columns`), filters on ``_ROW_ID``, pruning
by merged stats and change reads, against a model: a dict from row id to row.

Interop with pypaimon 2.1 (the reference engine: it writes and reads the same column files):
tests/interop/test_row_tracking_interop.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.errors import (
    CommitConflictError,
    InvalidArgumentError,
    InvalidDataError,
    LakeError,
    SchemaError,
    UnsupportedFeatureError,
)
from lake_assets.ops.column_update import prepare_column_update
from lake_assets.predicate import FilterError

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string()), ("w", pa.int64())])
OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
FIELDS = ["id", "p", "v", "w", "_ROW_ID"]


def _new(tmp_path: Path, name: str = "db.t", **options: str) -> Any:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(name, SCHEMA, partition_keys=["p"], options={**OPTIONS, **options})


def _rows(ids: list[int], p: str) -> pa.Table:
    return pa.table({"id": ids, "p": [p] * len(ids), "v": [f"v{i}" for i in ids], "w": [i * 10 for i in ids]},
                    schema=SCHEMA)


def _read(t: Any, columns: list[str] = FIELDS, **kw: Any) -> dict[int, dict[str, Any]]:
    got = t.to_arrow(columns=columns, **kw).to_pylist()
    out = {r["_ROW_ID"]: r for r in got}
    assert len(out) == len(got)  # every row its own id
    return out


def _files(t: Any) -> set[str]:
    return {f for _, _, fs in os.walk(t.store.paths.root) for f in fs if f.startswith("data-")}


class Model:
    """The table as a dict: row id -> row; writes learn the ids the commit gave."""

    def __init__(self) -> None:
        self.rows: dict[int, dict[str, Any]] = {}
        self.next_key = 0

    def write(self, t: Any, n: int, p: str) -> None:
        keys = list(range(self.next_key, self.next_key + n))
        self.next_key += n
        t.write_arrow(_rows(keys, p))
        ids = {r["id"]: r["_ROW_ID"] for r in t.to_arrow(columns=["id", "_ROW_ID"], filter=[("id", ">=", keys[0])]
                                                         ).to_pylist()}
        for k, r in zip(keys, _rows(keys, p).to_pylist(), strict=True):
            self.rows[ids[k]] = {**r, "_ROW_ID": ids[k]}


def _matches(row: dict[str, Any], col: str, op: str, lit: Any) -> bool:
    value = row[col]
    if value is None:
        return False
    return {"=": value == lit, "<": value < lit, ">=": value >= lit}[op]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_updates_reads_and_filters_follow_the_model(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
                                                    ) -> None:
    t = _new(tmp_path_factory.mktemp("de"))
    model = Model()
    model.write(t, data.draw(st.integers(1, 6)), "a")
    for step in range(data.draw(st.integers(2, 5))):
        kind = data.draw(st.sampled_from(["write", "update", "update"]))
        if kind == "write":
            model.write(t, data.draw(st.integers(1, 5)), data.draw(st.sampled_from(["a", "b"])))
            continue
        ids = data.draw(st.lists(st.sampled_from(sorted(model.rows)), min_size=1, unique=True))
        cols = data.draw(st.lists(st.sampled_from(["v", "w"]), min_size=1, unique=True))
        update: dict[str, Any] = {"_ROW_ID": pa.array(ids, pa.int64())}
        if "v" in cols:
            update["v"] = [data.draw(st.sampled_from(["x", "y", None])) for _ in ids]
        if "w" in cols:
            update["w"] = pa.array([data.draw(st.one_of(st.none(), st.integers(-5, 5))) for _ in ids], pa.int64())
        assert t.update_columns(pa.table(update)) == t.latest_snapshot().id
        for i, rid in enumerate(ids):
            for c in cols:
                model.rows[rid][c] = update[c][i].as_py() if isinstance(update[c], pa.Array) else update[c][i]
        assert _read(t) == model.rows, f"after step {step}"
    # filters on updated columns and on _ROW_ID: the rows the model selects, ranges pruned or not
    lo = data.draw(st.sampled_from(sorted(model.rows)))
    for col, op, lit in [("v", "=", "x"), ("v", "=", "v0"), ("w", ">=", 0), ("w", "<", 0), ("_ROW_ID", ">=", lo),
                         ("_ROW_ID", "<", lo)]:
        want = {k: r for k, r in model.rows.items() if _matches(r, col, op, lit)}
        assert _read(t, filter=[(col, op, lit)]) == want, (col, op, lit)
        # a filter on a column not read still selects by the newest values
        assert sorted(t.to_arrow(columns=["id"], filter=[(col, op, lit)]).column("id").to_pylist()) == sorted(
            r["id"] for r in want.values())
    batched = pa.Table.from_batches(list(t.to_batches(columns=FIELDS, batch_size=2)))
    assert {r["_ROW_ID"]: r for r in batched.to_pylist()} == model.rows


def test_a_new_column_filled_by_an_update_and_pruning_by_merged_stats(tmp_path: Path) -> None:
    t = _new(tmp_path)
    t.write_arrow(_rows([1, 2, 3], "a"))  # ids 0..2
    t.write_arrow(_rows([4, 5], "a"))  # ids 3..4
    t.update_schema().add_column("score", pa.float64()).commit()
    t.update_columns(pa.table({"_ROW_ID": pa.array([4], pa.int64()), "score": [0.5]}))
    got = t.to_arrow(columns=["id", "score", "_ROW_ID"]).sort_by("_ROW_ID").to_pylist()
    assert [(r["id"], r["score"]) for r in got] == [(1, None), (2, None), (3, None), (4, None), (5, 0.5)]
    update_file = [f for s in t.plan() for f in s.files if f.write_cols is not None]
    assert [(f.write_cols, f.first_row_id, f.row_count) for f in update_file] == [(("score",), 3, 2)]
    # the range of ids 0..2 holds no score at all (all null): pruned for a comparison, kept for IS NULL
    assert [sorted(f.first_row_id for f in s.files) for s in t.plan(filter=[("score", ">", 0.1)])] == [[3, 3]]
    assert t.to_arrow(columns=["id"], filter=[("score", ">", 0.1)]).column("id").to_pylist() == [5]
    assert sorted(t.to_arrow(filter=[("score", "is null")]).column("id").to_pylist()) == [1, 2, 3, 4]
    # an older file's own stats say w >= 40 for ids 3..4; the newest value decides
    t.update_columns(pa.table({"_ROW_ID": pa.array([3], pa.int64()), "w": pa.array([-1], pa.int64())}))
    assert t.to_arrow(columns=["id"], filter=[("w", "<", 0)]).column("id").to_pylist() == [4]
    assert [sorted(f.first_row_id for f in s.files) for s in t.plan(filter=[("w", "<", 0)])] == [[3, 3, 3]]
    # _ROW_ID prunes by the files' ranges
    assert [sorted(f.first_row_id for f in s.files) for s in t.plan(filter=[("_ROW_ID", "<", 3)])] == [[0]]
    assert t.to_arrow(columns=["id"], filter=[("_ROW_ID", "in", [1, 4])]).column("id").to_pylist() == [2, 5]


def test_a_row_tracking_table_without_data_evolution_filters_on_row_ids(tmp_path: Path) -> None:
    t = _new(tmp_path, "db.rt", **{"data-evolution.enabled": "false"})
    t.write_arrow(_rows([1, 2], "a"))
    t.write_arrow(_rows([3], "b"))
    assert [len(s.files) for s in t.plan(filter=[("_ROW_ID", "=", 2)])] == [1]
    assert t.to_arrow(columns=["id"], filter=[("_ROW_ID", "=", 2)]).column("id").to_pylist() == [3]
    assert t.to_arrow(columns=["id"], filter=[("_SEQUENCE_NUMBER", "=", 1)]).column("id").to_pylist() == [1, 2]
    with pytest.raises(UnsupportedFeatureError, match=r"data-evolution\.enabled = true"):
        t.update_columns(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["x"]}))
    plain = Catalog(str(tmp_path / "wh")).create_table("db.plain", SCHEMA)
    plain.write_arrow(_rows([1], "a"))
    with pytest.raises(FilterError, match="no column '_ROW_ID'"):
        plain.to_arrow(filter=[("_ROW_ID", "=", 0)])


@pytest.mark.parametrize(("update", "error", "match"), [
    ({"v": ["x"]}, InvalidArgumentError, "needs a _ROW_ID column"),
    ({"_ROW_ID": [0]}, InvalidArgumentError, "no column to update"),
    ({"_ROW_ID": [0, 0], "v": ["x", "y"]}, InvalidArgumentError, r"duplicate _ROW_ID values, e.g. \[0\]"),
    ({"_ROW_ID": pa.array([0, None], pa.int64()), "v": ["x", "y"]}, InvalidArgumentError, "1 rows have a null"),
    ({"_ROW_ID": ["0"], "v": ["x"]}, InvalidArgumentError, "must be an integer column"),
    ({"_ROW_ID": [7], "v": ["x"]}, InvalidArgumentError, "no row of snapshot 2 has _ROW_ID 7"),
    ({"_ROW_ID": [9, -1, 2], "v": ["x", "y", "z"]}, InvalidArgumentError, r"_ROW_ID -1 \(nor \[9\]\)"),
    ({"_ROW_ID": [0], "p": ["b"]}, InvalidArgumentError, r"partition columns \['p'\] cannot be updated"),
    ({"_ROW_ID": [0], "_SEQUENCE_NUMBER": [9]}, InvalidArgumentError, "system columns"),
    ({"_ROW_ID": [0], "nope": [1]}, InvalidArgumentError, r"unknown columns \['nope'\]"),
    ({"_ROW_ID": [0], "w": ["ten"]}, SchemaError, "column 'w' has type string"),
    ({"_ROW_ID": [0], "id": pa.array([None], pa.int64())}, InvalidDataError, "NOT NULL"),
])
def test_bad_updates_are_refused_and_change_nothing(tmp_path: Path, update: dict[str, Any], error: type[LakeError],
                                                    match: str) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), *list(SCHEMA)[1:]])
    t = cat.create_table("db.t", schema, partition_keys=["p"], options=OPTIONS)
    t.write_arrow(_rows([1, 2], "a").cast(schema))
    t.write_arrow(_rows([3], "b").cast(schema))
    before, files = _read(t), _files(t)
    with pytest.raises(error, match=match):
        t.update_columns(pa.table(update))
    assert _read(t) == before and _files(t) == files and t.latest_snapshot().id == 2
    assert t.update_columns(pa.table({"_ROW_ID": pa.array([], pa.int64()), "v": pa.array([], pa.string())})) is None


def _prepare(t: Any, update: dict[str, Any]) -> tuple[list[Any], int]:
    messages, read_at = prepare_column_update(t.store, pa.table(update))
    return messages, read_at.id


def _commit(t: Any, prepared: tuple[list[Any], int]) -> list[int]:
    messages, read_at = prepared
    return list(t.new_committer("u").commit(messages, 1, check_committed=False, row_ids_read_at=read_at))


def test_racing_updates_conflict_on_the_same_columns_of_a_range_only(tmp_path: Path) -> None:
    t = _new(tmp_path)
    t.write_arrow(_rows([1, 2, 3], "a"))  # ids 0..2, one range
    ids = pa.array([0], pa.int64())
    first = _prepare(t, {"_ROW_ID": ids, "v": ["first"]})
    same = _prepare(t, {"_ROW_ID": pa.array([2], pa.int64()), "v": ["lost"]})
    other = _prepare(t, {"_ROW_ID": ids, "w": pa.array([7], pa.int64())})
    assert _commit(t, first) == [2]
    # another update of v of the same range read snapshot 1: committed, it would put back v1..v3
    # over "first" (its file holds the whole range's v); Paimon HEAD refuses it the same way
    files = _files(t)
    with pytest.raises(CommitConflictError, match=r"snapshot 2 \(APPEND\) wrote columns of rows \[0, 2\]"):
        _commit(t, same)
    assert not {f.file_name for m in same[0] for f in m.new_files} & _files(t) and _files(t) < files
    # w of the same range is no conflict: both land, each column from its newest file
    assert _commit(t, other) == [3]
    assert [(r["v"], r["w"]) for _, r in sorted(_read(t).items())] == [("first", 7), ("v2", 20), ("v3", 30)]
    # new rows committed meanwhile (fresh ids) are no conflict either
    late = _prepare(t, {"_ROW_ID": pa.array([1], pa.int64()), "v": ["late"]})
    t.write_arrow(_rows([4], "a"))
    assert _commit(t, late) == [5]
    assert [r["v"] for _, r in sorted(_read(t).items())] == ["first", "late", "v3", "v4"]


def test_an_update_of_a_range_rewritten_meanwhile_is_stale(tmp_path: Path) -> None:
    t = _new(tmp_path)
    t.write_arrow(_rows([1, 2], "a"))
    stale = _prepare(t, {"_ROW_ID": pa.array([1], pa.int64()), "v": ["x"]})
    t.write_arrow(_rows([7, 8], "a"), overwrite=True)  # the partition's rows get new ids 2..3
    with pytest.raises(CommitConflictError, match=r"update of rows \[0, 1\] .* is stale: snapshot 2 no longer"):
        _commit(t, stale)
    assert [r["v"] for _, r in sorted(_read(t).items())] == ["v7", "v8"]
    assert not {f.file_name for m in stale[0] for f in m.new_files} & _files(t)


def test_change_reads_return_what_each_snapshot_wrote(tmp_path: Path) -> None:
    """As Paimon HEAD's delta split of a snapshot (and pypaimon's stream, checked in the interop
    test): a column update's rows carry its columns and ``_ROW_ID``, the other columns null."""
    t = _new(tmp_path)
    t.write_arrow(_rows([1, 2], "a"))
    t.update_columns(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "w": pa.array([-2], pa.int64())}))
    changes = t.read_changes(1, 2, columns=["id", "v", "w", "_ROW_ID"]).to_pylist()
    assert changes == [{"id": None, "v": None, "w": 10, "_ROW_ID": 0, "_row_kind": "+I"},
                       {"id": None, "v": None, "w": -2, "_ROW_ID": 1, "_row_kind": "+I"}]
    stream = t.stream(mode="latest-full")  # the merged rows of snapshot 2, then its changes
    reader = t.change_reader(["id", "w", "_ROW_ID"], stream=stream)
    got = [(b.snapshot_id, reader.read(s).to_pylist()) for b in stream.poll(max_snapshots=5) for s in b.splits]
    assert got == [(2, [{"id": 1, "w": 10, "_ROW_ID": 0, "_row_kind": "+I"},
                        {"id": 2, "w": -2, "_ROW_ID": 1, "_row_kind": "+I"}])]
    t.write_arrow(_rows([3], "a"))
    later = [reader.read(s).to_pylist() for b in stream.poll(max_snapshots=5) for s in b.splits]
    assert later == [[{"id": 3, "w": 30, "_ROW_ID": 2, "_row_kind": "+I"}]]


def test_an_update_racing_a_compaction_of_its_range_conflicts(tmp_path: Path) -> None:
    """A compaction (HEAD's data-evolution compaction, ops/compact/data_evolution_compact.py) that
    rewrote the range the update read into one file of the same range: the range is still live,
    but the files the update read are gone, and HEAD refuses the update
    (``_compact_conflicts_with_delta``); lake_assets the same, removing the update's files."""
    t = _new(tmp_path, **{"compaction.min.file-num": "2"})
    t.write_arrow(_rows([1, 2], "a"))
    t.update_columns(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["x"]}))
    racing = _prepare(t, {"_ROW_ID": pa.array([1], pa.int64()), "v": ["y"]})
    result = t.compact()
    assert (result.files_in, result.files_out) == (2, 1)
    assert t.latest_snapshot().commit_kind.name == "COMPACT"
    with pytest.raises(CommitConflictError, match=r"snapshot 3 \(COMPACT\) compacted columns of rows \[0, 1\]"):
        _commit(t, racing)
    assert not {f.file_name for m in racing[0] for f in m.new_files} & _files(t)
    assert [r["v"] for _, r in sorted(_read(t).items())] == ["x", "v2"]


def test_updates_after_a_compaction_cover_the_compacted_files_whole_range(tmp_path: Path) -> None:
    """A compaction merges the ranges of a unit into one file of the whole range (HEAD's
    DataEvolutionNormalCompactTask); an update of any of its rows then writes a file of that whole
    range, as HEAD and pypaimon do (a reader merges only files of one range), and the next
    compaction merges it back. An update prepared before the compaction names a range the
    compaction rewrote: it is stale and changes nothing."""
    from lake_assets.spec.manifest import FileSource

    t = _new(tmp_path, **{"compaction.min.file-num": "2"})
    t.write_arrow(_rows([1, 2], "a"))  # ids 0..1
    t.write_arrow(_rows([3], "a"))  # id 2
    stale = _prepare(t, {"_ROW_ID": pa.array([2], pa.int64()), "w": pa.array([-3], pa.int64())})
    assert (t.compact().files_out, t.latest_snapshot().next_row_id) == (1, 3)
    with pytest.raises(CommitConflictError, match=r"update of rows \[2, 2\] .* is stale"):
        _commit(t, stale)
    t.update_columns(pa.table({"_ROW_ID": pa.array([2], pa.int64()), "v": ["new"]}))
    files = [e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]
    assert {(f.first_row_id, f.row_count, f.write_cols, f.file_source) for f in files} == {
        (0, 3, None, FileSource.COMPACT), (0, 3, ("v",), FileSource.APPEND)}
    want = [(1, "v1", 10), (2, "v2", 20), (3, "new", 30)]
    assert [(r["id"], r["v"], r["w"]) for _, r in sorted(_read(t).items())] == want
    assert sorted(_read(t, filter=[("v", "=", "new")])) == [2]
    assert t.compact().files_out == 1
    [f] = [e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]
    assert (f.first_row_id, f.row_count, f.write_cols) == (0, 3, None)
    assert [(r["id"], r["v"], r["w"]) for _, r in sorted(_read(t).items())] == want


def test_change_reads_of_an_update_leave_not_null_columns_it_lacks_null(tmp_path: Path) -> None:
    """Paimon HEAD reads a range's lone file through the file's own reader (no NOT NULL check): a
    column update's change rows are null in the NOT NULL columns it does not write. Batch reads
    still refuse a range where no file holds a NOT NULL column (`CorruptMetadataError`)."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), *list(SCHEMA)[1:]])
    t = cat.create_table("db.t", schema, options=OPTIONS)
    t.write_arrow(_rows([1, 2], "a").cast(schema))
    t.update_columns(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["x"]}))
    got = t.read_changes(1, 2, columns=["id", "v", "_ROW_ID"])
    assert got.to_pylist() == [{"id": None, "v": "x", "_ROW_ID": 0, "_row_kind": "+I"},
                               {"id": None, "v": "v2", "_ROW_ID": 1, "_row_kind": "+I"}]
    assert got.schema.field("id").nullable
    assert t.to_arrow(columns=["id", "v"]).to_pylist() == [{"id": 1, "v": "x"}, {"id": 2, "v": "v2"}]
