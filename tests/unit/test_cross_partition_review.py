"""Cross-partition upsert tables, review of issue 14: the key index bootstrap sees keys still in
level 0 (write-only writes to deletion-vector and first-row tables), and tables carrying Paimon's
``rocksdb.*`` options (the local index of Java's cross-partition writers) are written."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import CommitConflictError, InvalidDataError
from lake_assets.spec.row_kind import RowKind

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def _table(tmp_path: Path, options: dict[str, str]) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                            options={"dynamic-bucket.target-row-num": "1", **options})


def _rows(ids: list[int], names: list[str], dts: list[str]) -> pa.Table:
    return pa.table({"id": ids, "name": names, "dt": dts}, schema=SCHEMA)


def _write_only(t: Table, data: pa.Table) -> None:
    writer = t.new_writer("first", write_only=True)
    writer.write_arrow(data)
    t.new_committer("first").commit(writer.prepare_commit(), 1)
    writer.close()


def _read(t: Table) -> list[tuple[int, str, str]]:
    return sorted((r["id"], r["name"], r["dt"]) for r in t.refresh().to_arrow().to_pylist())


def test_bootstrap_sees_level0_keys_of_a_deletion_vector_table(tmp_path: Path) -> None:
    """Paimon's DeletionVectorITCase.testDvWithCrossPartition (apache/paimon #6630, 1.4+; Java 0.9's
    bootstrap skipped level 0 and wrote key 3 a second time, into a bucket of its own)."""
    t = _table(tmp_path, {"deletion-vectors.enabled": "true"})
    _write_only(t, _rows([1, 2, 3, 4, 5], list("12345"), ["dt"] * 5))
    assert _read(t) == []  # level 0 only: invisible to batch reads
    t.refresh().write_arrow(_rows([3, 5], ["33", "55"], ["dt"] * 2))
    t.refresh().write_arrow(_rows([4, 2, 1], ["44", "22", "11"], ["dt"] * 3))
    assert _read(t) == [(1, "11", "dt"), (2, "22", "dt"), (3, "33", "dt"), (4, "44", "dt"), (5, "55", "dt")]
    # and a key moving out of level 0 into another partition is retracted there
    _write_only(t.refresh(), _rows([6], ["6"], ["a"]))
    t.refresh().write_arrow(_rows([6, 1], ["66", "111"], ["b", "b"]))
    assert _read(t)[0] == (1, "111", "b") and _read(t)[-1] == (6, "66", "b")
    assert len(_read(t)) == 6


def test_bootstrap_sees_level0_keys_of_a_first_row_table(tmp_path: Path) -> None:
    """first-row: a key whose first row is still in level 0 keeps it; a later row of another
    partition is dropped, not placed as a second key."""
    t = _table(tmp_path, {"merge-engine": "first-row"})
    _write_only(t, _rows([1, 2], ["1", "2"], ["a", "a"]))
    t.refresh().write_arrow(_rows([1, 3], ["x", "3"], ["b", "b"]))
    t.refresh().compact(full=True)
    assert _read(t) == [(1, "1", "a"), (2, "2", "a"), (3, "3", "b")]


def test_rocksdb_options_are_other_engines_options(tmp_path: Path) -> None:
    """Flink's and Spark's cross-partition index (RocksDB) tuning: created, written, moved, read."""
    t = _table(tmp_path, {"rocksdb.block.cache-size": "64 mb", "rocksdb.writebuffer.size": "8 mb",
                          "rocksdb.compaction.style": "LEVEL", "rocksdb.use-bloom-filter": "true"})
    t.write_arrow(_rows([1, 2], ["1", "2"], ["a", "a"]))
    t.refresh().write_arrow(_rows([1], ["11"], ["b"]))
    t.update_schema().set_option("rocksdb.thread.num", "4").commit()
    t.refresh().write_arrow(_rows([2], ["22"], ["b"]))
    assert _read(t) == [(1, "11", "b"), (2, "22", "b")]


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process in UTC-5 (UTC-4 in summer): file creation times are local wall clocks."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("new_york")
def test_index_ttl_compares_creation_times_on_their_own_clock(tmp_path: Path) -> None:
    """``cross-partition-upsert.index-ttl`` = 1 h: files written a moment ago are bootstrapped
    (Java: System.currentTimeMillis against the creation time read in the system zone), so a
    moved key is retracted in its old partition; with UTC's now they looked 4-5 h old west of
    UTC, their keys were forgotten and the key lived in two partitions."""
    t = _table(tmp_path, {"cross-partition-upsert.index-ttl": "1 h", "dynamic-bucket.target-row-num": "10"})
    t.write_arrow(_rows([1, 2], ["1", "2"], ["a", "a"]))
    t.refresh().write_arrow(_rows([1], ["11"], ["b"]))
    assert _read(t) == [(1, "11", "b"), (2, "2", "a")]


def test_a_refused_batch_leaves_the_writers_key_index_unchanged(tmp_path: Path) -> None:
    """partial-update: a batch refused for a retraction of a key living elsewhere places nothing,
    so its new keys are new to the writer's next batch as well (they went to the refused batch's
    partition before, though never written)."""
    t = _table(tmp_path, {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    t.write_arrow(_rows([6], ["6"], ["b"]))
    user = "w"
    with t.refresh().new_writer(user) as w:
        with pytest.raises(InvalidDataError, match="retraction"):
            w.write_arrow(_rows([100, 6], ["100", "6"], ["a", "c"]),
                          kinds=np.array([RowKind.INSERT, RowKind.DELETE], dtype=np.int8))
        w.write_arrow(_rows([100], ["100"], ["b"]))
        messages = w.prepare_commit()
    t.new_committer(user).commit(messages)
    assert _read(t) == [(6, "6", "b"), (100, "100", "b")]


def _messages(t: Table, data: pa.Table) -> tuple[str, list]:
    user = f"w-{len(data)}-{data.column('name')[0]}"
    with t.refresh().new_writer(user) as w:
        w.write_arrow(data)
        return user, w.prepare_commit()


def test_race_check_ignores_compactions_and_sees_appends_behind_them(tmp_path: Path) -> None:
    """Between a writer's bootstrap and its commit, another user's full compaction rewrites the
    files holding the keys it moves: no conflict (a compaction moves no key); another user's
    append of one of its keys, compacted after, still fails it, nothing committed."""
    t = _table(tmp_path, {"dynamic-bucket.target-row-num": "10"})
    t.write_arrow(_rows([1, 2, 3], ["1", "2", "3"], ["a", "a", "b"]))
    user, messages = _messages(t, _rows([1], ["moved"], ["c"]))
    t.refresh().compact(full=True)
    t.new_committer(user).commit(messages)
    assert _read(t) == [(1, "moved", "c"), (2, "2", "a"), (3, "3", "b")]
    user, messages = _messages(t, _rows([2], ["mine"], ["b"]))
    t.refresh().write_arrow(_rows([2], ["theirs"], ["c"]))
    t.refresh().compact(full=True)
    before = _read(t)
    with pytest.raises(CommitConflictError, match="another writer"):
        t.new_committer(user).commit(messages)
    assert _read(t) == before == [(1, "moved", "c"), (2, "theirs", "c"), (3, "3", "b")]


def test_spilled_key_index_files_stay_in_the_spill_dir_and_go(tmp_path: Path) -> None:
    """write-buffer-size = 64 b: the index spills at once, into the writer's spill directory
    (LAKE_ASSETS_SPILL_DIR), and its files are removed when the writer closes, after a refused
    batch as after a commit."""
    spill = tmp_path / "spill"
    spill.mkdir()
    t = _table(tmp_path, {"write-buffer-size": "64 b", "merge-engine": "partial-update",
                          "partial-update.remove-record-on-delete": "true"})
    t.write_arrow(_rows(list(range(30)), [str(i) for i in range(30)], ["a"] * 30))
    with t.refresh().new_writer("w", spill_dir=spill) as w:
        with pytest.raises(InvalidDataError, match="retraction"):
            w.write_arrow(_rows([3], ["3"], ["c"]), kinds=np.array([RowKind.DELETE], dtype=np.int8))
        assert [p.name.startswith("lake-key-index-") for p in spill.iterdir()] == [True]
    assert list(spill.iterdir()) == []
    t.refresh().write_arrow(_rows([3, 40], ["x", "y"], ["b", "b"]), spill_dir=spill)
    assert list(spill.iterdir()) == []
    assert _read(t)[3] == (3, "x", "a") and _read(t)[-1] == (40, "y", "b")


def test_a_rollback_past_the_index_base_fails_the_commit(tmp_path: Path) -> None:
    """Key 1 moved a -> b in snapshot 2; a writer reads its index at 2 (1 in b); the table is
    rolled back to 1 (1 in a again). The writer's move of 1 to c would retract it in b only and
    leave it in a and c: the commit fails, nothing committed."""
    t = _table(tmp_path, {"dynamic-bucket.target-row-num": "10"})
    t.write_arrow(_rows([1, 2], ["1", "2"], ["a", "a"]))
    t.refresh().write_arrow(_rows([1], ["moved"], ["b"]))
    user, messages = _messages(t, _rows([1], ["again"], ["c"]))
    t.refresh().rollback_to(snapshot_id=1)
    with pytest.raises(CommitConflictError, match="rolled back to before snapshot 2"):
        t.new_committer(user).commit(messages)
    assert _read(t) == [(1, "1", "a"), (2, "2", "a")]
