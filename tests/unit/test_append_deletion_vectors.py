"""Append tables with deletion vectors (ops/append_vectors.py, ops/delete_rows.py): deletes and
compactions racing each other, maintenance of their index files, and what is refused.

Java parity of the vectors themselves is tested in tests/differential/test_append_deletion_vectors_java.py.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitConflictError, InvalidArgumentError, UnsupportedFeatureError
from lake_assets.ops.deletion_vectors import snapshot_index

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
DV = {"bucket": "-1", "deletion-vectors.enabled": "true", "compaction.min.file-num": "2"}


def _rows(ids, dt: str = "d1") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def cat(tmp_path: Path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _table(cat: Catalog, options: dict[str, str] | None = None):
    return cat.create_table("db.t", SCHEMA, partition_keys=["dt"], options={**DV, **(options or {})})


def _ids(table) -> list[int]:
    return sorted(table.to_arrow().column("id").to_pylist())


def _index_files(table) -> set[str]:
    root = Path(table.store.paths.index_file("x")).parent
    return set(os.listdir(root)) if root.exists() else set()


def _referenced_index(table) -> set[str]:
    return {e.file_name for es in snapshot_index(table.store, table.latest_snapshot()).values() for e in es}


@pytest.mark.parametrize("marked_before", [False, True], ids=["plain-file", "file-with-vector"])
def test_a_delete_landing_during_a_compaction_fails_the_compaction(cat: Catalog, marked_before: bool) -> None:
    """The compaction planned the file without the delete's marks: its output would bring the rows
    back. Whether the file had no vector (Java's <DELETE file, null> against a base <ADD file, dv>)
    or one (its index file was replaced meanwhile), the compaction gives up."""
    table = _table(cat)
    table.write_arrow(_rows(range(10)))
    table.write_arrow(_rows(range(10, 20)))
    if marked_before:
        table.delete_where([("id", "=", 0)])

    def delete_meanwhile(step: str) -> None:
        if step == "compact.before_commit":
            cat.get_table("db.t").delete_where([("id", "in", [3, 13])])

    table.store.fault_hook = delete_meanwhile
    with pytest.raises(CommitConflictError, match="deletion vector"):
        table.compact()
    table.store.fault_hook = None
    fresh = cat.get_table("db.t")
    expected = [i for i in range(20) if i not in (3, 13) and not (marked_before and i == 0)]
    assert _ids(fresh) == expected
    # compacting again (planned after the delete) drops the rows for good
    assert fresh.compact().rows_out == len(expected)
    assert _ids(cat.get_table("db.t")) == expected
    assert _referenced_index(cat.get_table("db.t")) == set()


def test_a_delete_racing_a_compaction_never_marks_a_file_that_is_gone(cat: Catalog) -> None:
    table = _table(cat)
    table.write_arrow(_rows(range(10)))
    table.write_arrow(_rows(range(10, 20)))
    before = _index_files(table)

    def compact_meanwhile(step: str) -> None:
        if step == "delete.before_commit":
            assert cat.get_table("db.t").compact().files_in == 2

    table.store.fault_hook = compact_meanwhile
    with pytest.raises(CommitConflictError, match="already deleted"):
        table.delete_where([("id", "=", 5)])
    table.store.fault_hook = None
    fresh = cat.get_table("db.t")
    assert _ids(fresh) == list(range(20))  # nothing deleted: the commit changed nothing
    assert _index_files(fresh) == before  # and the delete's index file is gone again
    assert fresh.delete_where([("id", "=", 5)]).rows_deleted == 1  # a new attempt marks the new file
    assert _ids(cat.get_table("db.t")) == [i for i in range(20) if i != 5]


def test_two_deletes_of_one_partition_do_not_lose_marks(cat: Catalog) -> None:
    """The second delete read the partition's vectors before the first landed: it would replace
    the index file the first one wrote and lose its marks; it fails instead."""
    table = _table(cat)
    table.write_arrow(_rows(range(10)))

    def other_delete(step: str) -> None:
        if step == "delete.before_commit":
            cat.get_table("db.t").delete_where([("id", "=", 1)])

    table.store.fault_hook = other_delete
    with pytest.raises(CommitConflictError):
        table.delete_where([("id", "=", 2)])
    table.store.fault_hook = None
    assert _ids(cat.get_table("db.t")) == [i for i in range(10) if i != 1]


def test_expiry_tags_orphans_and_rollback_keep_referenced_index_files(cat: Catalog) -> None:
    table = _table(cat, {"snapshot.num-retained.min": "1"})
    table.write_arrow(_rows(range(10)))
    table.write_arrow(_rows(range(10, 20)))
    sid = table.delete_where([("id", "<", 3)]).snapshot_id
    vectors = _referenced_index(table)
    assert len(vectors) == 1
    table.create_tag("deleted", sid)
    table.compact()
    table.write_arrow(_rows(range(20, 25)))
    assert _referenced_index(table) == set()  # the compaction dropped the vectors' index file
    table.expire_snapshots(retain_max=1)
    assert vectors <= _index_files(table)  # the tag still needs it
    assert sorted(table.to_arrow(tag="deleted").column("id").to_pylist()) == list(range(3, 20))
    orphans = table.remove_orphan_files(older_than=timedelta(seconds=0), dry_run=False, allow_recent=True)
    assert not any(name in p for p in orphans.paths for name in vectors)
    assert vectors <= _index_files(table)
    # back to the tag: its vectors apply again, and compaction after it drops them
    table.rollback_to(tag="deleted")
    fresh = cat.get_table("db.t")
    assert _ids(fresh) == list(range(3, 20))
    assert _referenced_index(fresh) == vectors
    fresh.compact()
    fresh.delete_tag("deleted")
    fresh.expire_snapshots(retain_max=1)
    assert not vectors & _index_files(fresh)  # nothing retained references it any more: deleted
    assert _ids(cat.get_table("db.t")) == list(range(3, 20))


def test_what_delete_where_refuses(cat: Catalog) -> None:
    pk = cat.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    with pytest.raises(UnsupportedFeatureError, match="'-D'"):
        pk.delete_where([("id", "=", 1)])
    plain = cat.create_table("db.plain", SCHEMA, partition_keys=["dt"], options={"bucket": "-1"})
    plain.write_arrow(_rows(range(3)))
    with pytest.raises(UnsupportedFeatureError, match=r"deletion-vectors\.enabled"):
        plain.delete_where([("id", "=", 1)])
    table = _table(cat)
    table.write_arrow(_rows(range(3)))
    for bad in (None, []):
        with pytest.raises(InvalidArgumentError, match="a filter is required"):
            table.delete_where(bad)
    assert _ids(plain) == _ids(table) == [0, 1, 2]
    assert len(table.snapshots()) == 1


def test_an_overwrite_drops_the_vectors_of_the_partitions_it_replaces(cat: Catalog) -> None:
    table = _table(cat)
    table.write_arrow(pa.concat_tables([_rows(range(5)), _rows(range(5), "d2")]))
    table.delete_where([("id", "<", 2)])
    table.write_arrow(_rows(range(7, 9)), overwrite=True)  # replaces d1 only (dynamic overwrite)
    fresh = cat.get_table("db.t")
    assert sorted(zip(fresh.to_arrow().column("id").to_pylist(), fresh.to_arrow().column("dt").to_pylist(),
                      strict=True)) == [(2, "d2"), (3, "d2"), (4, "d2"), (7, "d1"), (8, "d1")]
    # d2's vector stays; d1's went with its files
    index = snapshot_index(fresh.store, fresh.latest_snapshot())
    assert sum(len(e.dv_ranges or ()) for es in index.values() for e in es) == 1


def _health(table) -> list[dict]:
    cols = ["partition", "file_count", "deletion_vector_rows", "deleted_row_ratio", "vector_purge_files",
            "compaction_would_trigger"]
    return table.health().select(cols).to_pylist()


def test_health_counts_the_files_a_compaction_would_purge_of_deleted_rows(cat: Catalog) -> None:
    """Files whose vector hides more than compaction.delete-ratio-threshold of their rows are
    compaction backlog (Paimon 1.x's AppendCompactCoordinator rewrites them), whatever their size;
    below the threshold a large file is not; a small file with a vector always is."""
    # target 100 bytes: no file is small, only the ratio counts; 2 files < compaction.min.file-num 5
    table = _table(cat, {"target-file-size": "100 b", "compaction.min.file-num": "5"})
    table.write_arrow(pa.concat_tables([_rows(range(10)), _rows(range(10), "d2")]))
    table.write_arrow(_rows(range(10, 20)))
    assert [r["compaction_would_trigger"] for r in _health(table)] == [False, False]
    table.delete_where([("id", "in", [0, 1, 10])])  # 2/10 in one d1 file: not more than 0.2
    assert _health(table) == [
        {"partition": "dt=d1", "file_count": 2, "deletion_vector_rows": 3, "deleted_row_ratio": 3 / 20,
         "vector_purge_files": 0, "compaction_would_trigger": False},
        {"partition": "dt=d2", "file_count": 1, "deletion_vector_rows": 2, "deleted_row_ratio": 2 / 10,
         "vector_purge_files": 0, "compaction_would_trigger": False}]
    table.delete_where([("id", "=", 2), ("dt", "=", "d1")])  # 3/10 of the first d1 file now
    d1, d2 = _health(table)
    assert (d1["vector_purge_files"], d1["compaction_would_trigger"]) == (1, True)
    assert (d2["vector_purge_files"], d2["compaction_would_trigger"]) == (0, False)
    result = table.compact()
    assert (result.files_in, result.rows_in, result.rows_out) == (1, 10, 7)  # the purged file only
    d1, d2 = _health(table)
    assert (d1["vector_purge_files"], d1["deletion_vector_rows"], d1["compaction_would_trigger"]) == (0, 1, False)
    assert d2["deletion_vector_rows"] == 2

    small = cat.create_table("db.small", SCHEMA, partition_keys=["dt"], options=DV | {"compaction.min.file-num": "5"})
    small.write_arrow(_rows(range(10)))
    small.delete_where([("id", "=", 4)])  # 1/10 of a small file: Paimon rewrites it anyway
    [row] = _health(small)
    assert (row["vector_purge_files"], row["compaction_would_trigger"]) == (1, True)


def _vector_holders(table) -> dict[str, list[str]]:
    """Data file -> the index files holding a vector of it (Paimon: exactly one)."""
    out: dict[str, list[str]] = {}
    for entries in snapshot_index(table.store, table.latest_snapshot()).values():
        for e in entries:
            for r in e.dv_ranges or ():
                out.setdefault(r.data_file, []).append(e.file_name)
    return out


def _three_files(cat: Catalog):
    table = _table(cat, {"compaction.min.file-num": "5"})
    for start in (0, 10, 20):
        table.write_arrow(_rows(range(start, start + 10)))
    return table


def _while_deleting(table, other) -> None:
    """Run ``other`` (another delete) after ``table``'s next delete read its vectors, before it commits."""
    def hook(step: str) -> None:
        if step == "delete.before_commit":
            table.store.fault_hook = None
            other()
    table.store.fault_hook = hook


@pytest.mark.parametrize("case", ["same-new-file", "same-marked-file", "shared-index-file", "one-each"])
def test_two_racing_deletes_conflict_exactly_when_java_does(cat: Catalog, case: str) -> None:
    """The second delete read the vectors before the first one landed. It fails when both change
    the vector of one file, or both replace one index file (the first moved the second's file's
    old vector into a new one); otherwise both land. Never is a mark lost, never has a file two
    vectors."""
    table = _three_files(cat)
    table.delete_where([("id", "in", [1, 11])])  # one index file holding the vectors of files 1 and 2
    first, second, conflict = {
        "same-new-file": (25, 26, True),  # file 3 had no vector: both would add one
        "same-marked-file": (2, 3, True),  # both change file 1's vector
        "shared-index-file": (2, 12, True),  # files 1 and 2: both replace the index file holding both
        "one-each": (2, 25, False),  # file 1's vector changes, file 3 gets its first
    }[case]
    _while_deleting(table, lambda: cat.get_table("db.t").delete_where([("id", "=", first)]))
    if conflict:
        with pytest.raises(CommitConflictError, match="concurrent"):
            table.delete_where([("id", "=", second)])
        assert _ids(cat.get_table("db.t")) == [i for i in range(30) if i not in (1, 11, first)]
        assert cat.get_table("db.t").delete_where([("id", "=", second)]).rows_deleted == 1  # again: lands
    else:
        assert table.delete_where([("id", "=", second)]).rows_deleted == 1
    fresh = cat.get_table("db.t")
    assert _ids(fresh) == [i for i in range(30) if i not in (1, 11, first, second)]
    assert all(len(held) == 1 for held in _vector_holders(fresh).values())
    assert set(_index_files(fresh)) >= _referenced_index(fresh)


def test_racing_deletes_and_compactions_lose_no_delete(cat: Catalog) -> None:
    """Threads deleting rows of the same three files while another compacts, each retrying after a
    `CommitConflictError`: every delete that returned is in the result, no file has two vectors."""
    import threading

    _three_files(cat)
    targets = {t: list(range(t, 30, 4)) for t in range(4)}  # each thread's ids, spread over all files
    errors: list[BaseException] = []
    conflicts = [0]

    def retrying(action) -> None:
        for _ in range(200):
            try:
                return action()
            except CommitConflictError:
                conflicts[0] += 1
        raise AssertionError("no progress after 200 conflicts")

    def deleter(t: int) -> None:
        try:
            for i in targets[t]:
                result = retrying(lambda i=i: cat.get_table("db.t").delete_where([("id", "=", i)]))
                assert result.rows_deleted == 1  # each id is one thread's: no other delete took it
        except BaseException as exc:  # reported below
            errors.append(exc)

    def compactor() -> None:
        try:
            for _ in range(4):
                retrying(lambda: cat.get_table("db.t").compact())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=deleter, args=(t,)) for t in targets] + [threading.Thread(target=compactor)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    fresh = cat.get_table("db.t")
    assert _ids(fresh) == []  # every id was some thread's target
    assert all(len(held) == 1 for held in _vector_holders(fresh).values())
    assert conflicts[0] > 0  # they did race (25-32 conflicts in 5 runs)
