"""Fixed-bucket append tables with deletion vectors (one index file per bucket), and the files a
bucketed compaction takes in to keep every bucket's row order (`lsm.bucketed_append.keeping_order`).

Java 0.9 both ways: tests/differential/test_fixed_bucket_append_vectors_java.py."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitConflictError
from lake_assets.lsm.bucketed_append import keeping_order, pick_bucketed_append_full
from lake_assets.ops.deletion_vectors import snapshot_index
from tests.unit.test_fixed_bucket_append import meta

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
DV = {"bucket": "2", "bucket-key": "id", "deletion-vectors.enabled": "true", "write-only": "true"}


@pytest.fixture
def cat(tmp_path: Path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": ids}, schema=SCHEMA)


def _index(table: Any) -> dict[int, list[str]]:
    return {b: [e.file_name for e in es] for (_, b), es in snapshot_index(table.store, table.latest_snapshot()).items()}


# ------------------------------------------------------------------------------------- the picks
def test_full_pick_with_vectors_rewrites_from_the_first_small_or_marked_file() -> None:
    large, marked, small = meta(100, 0, 2), meta(100, 2, 2), meta(1, 4)
    # leading large files without a vector stay; from the first one with a vector on, all goes
    assert pick_bucketed_append_full([large, marked, small], 100, vectored={marked.file_name}) == [marked, small]
    # a single small file, or a lone large one with a vector: rewritten (no 3-file minimum)
    assert pick_bucketed_append_full([large, small], 100, vectored=set()) == [small]
    assert pick_bucketed_append_full([marked], 100, vectored={marked.file_name}) == [marked]
    assert pick_bucketed_append_full([large, meta(100, 2)], 100, vectored=set()) == []
    # without vectors, the rule is unchanged: fewer than 3 files left
    assert pick_bucketed_append_full([large, small], 100) == []


def test_a_group_takes_in_the_files_its_output_could_pass() -> None:
    # a single writer's numbers (Java's): the next file starts where the group ends, nothing added
    a, b, c = meta(1, 0, 3), meta(1, 3, 2), meta(1, 5, 4)
    assert keeping_order([a, b, c], [a, b]) == [a, b]
    # two writers of one commit from one base (numbers 10.. each), then a later write: the
    # output of the first two is numbered 10..15 and would reach the third file's 14
    t1, t2, later = meta(1, 10, 4), meta(1, 10, 2), meta(1, 14, 3)
    assert keeping_order([t1, t2, later], [t1, t2]) == [t1, t2, later]
    # pypaimon 2.1 numbers every file 0/0: the group runs to the end of the bucket
    tied = [meta(1, 0) for _ in range(4)]
    assert keeping_order(tied, tied[:2]) == tied
    # Spark tasks' interleaved slots (base 20, stride 2): the first task's file alone would
    # be renumbered over the second's numbers
    s0 = dataclasses.replace(meta(1, 20, 3), max_sequence_number=24)
    s1 = dataclasses.replace(meta(1, 21, 3), max_sequence_number=25)
    assert keeping_order([s0, s1], [s0]) == [s0, s1]
    assert keeping_order([a], []) == []


def test_compacting_tied_files_keeps_every_row_in_place(cat: Catalog) -> None:
    """Two writers of an empty bucket both number from 0 (4 and 2 rows), a later write follows
    (4..6). A compaction of the first file alone (compaction.max.file-num 1) would number its
    output from 0 too, and the second writer's file, older in the manifests, would then be read
    before it. The group takes the files its output could pass in, and the order stays."""
    t = cat.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "id", "write-only": "true",
                                                  "compaction.max.file-num": "1"})
    w1, w2 = t.new_writer("a"), t.new_writer("b")
    w1.write_arrow(_rows([100, 101, 102, 103]))
    w2.write_arrow(_rows([200, 201]))
    t.new_committer("a").commit(w1.prepare_commit(), commit_identifier=1)
    t.new_committer("b").commit(w2.prepare_commit(), commit_identifier=1)
    w1.close()
    w2.close()
    t.refresh().write_arrow(_rows([300, 301, 302]))
    before = t.refresh().to_arrow().column("v").to_pylist()
    assert before == [100, 101, 102, 103, 200, 201, 300, 301, 302]
    result = t.refresh().compact()
    assert t.refresh().to_arrow().column("v").to_pylist() == before
    assert result.files_in == 3


# ------------------------------------------------------------------------------------ the table
def test_deletes_keep_one_index_file_per_bucket_and_compaction_drops_them(cat: Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, options=DV)
    for start in (0, 10, 20):
        t.refresh().write_arrow(_rows(list(range(start, start + 10))))
    assert t.refresh().delete_where([("v", "in", [1, 2, 15, 22])]).rows_deleted == 4
    first = _index(t.refresh())
    assert sorted(len(names) for names in first.values()) == [1, 1]
    # a second delete replaces the index file of the buckets it marks, old marks kept
    assert t.refresh().delete_where([("v", "in", [3, 16])]).rows_deleted == 2
    second = _index(t.refresh())
    assert sorted(len(names) for names in second.values()) == [1, 1]
    assert all(second[b] != first[b] for b in second)
    left = [i for i in range(30) if i not in (1, 2, 3, 15, 16, 22)]
    assert sorted(t.refresh().to_arrow().column("v").to_pylist()) == left
    # health counts the marked rows; no file is purged for its vector alone (no delete ratio here)
    health = t.refresh().health().to_pylist()
    assert sum(r["deletion_vector_rows"] for r in health) == 6
    assert {r["vector_purge_files"] for r in health} == {0}
    assert sum(r["row_count"] for r in health) == len(left)
    result = t.refresh().compact(full=True)
    assert result.rows_out == len(left)
    assert _index(t.refresh()) == {}
    assert sorted(t.refresh().to_arrow().column("v").to_pylist()) == left
    for e in t.store.file_store_scan().live_entries(t.refresh().latest_snapshot()):
        assert e.file.max_sequence_number - e.file.min_sequence_number + 1 == e.file.row_count


def test_two_deletes_of_one_bucket_conflict_deletes_of_two_buckets_land(cat: Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, options={**DV, "bucket": "1"})
    t.write_arrow(_rows(list(range(10))))
    t.refresh().write_arrow(_rows(list(range(10, 20))))

    def other_delete(step: str) -> None:
        if step == "delete.before_commit":
            cat.get_table("db.t").delete_where([("v", "=", 1)])

    t.store.fault_hook = other_delete
    # another data file than the other delete's, but the bucket's one index file was replaced:
    # committed, it would drop the other's mark
    with pytest.raises(CommitConflictError, match="bucket 0 of partition"):
        t.refresh().delete_where([("v", "=", 12)])
    t.store.fault_hook = None
    fresh = cat.get_table("db.t")
    assert fresh.to_arrow().column("v").to_pylist() == [i for i in range(20) if i != 1]
    assert fresh.delete_where([("v", "=", 12)]).rows_deleted == 1  # run again: it lands
    assert cat.get_table("db.t").to_arrow().column("v").to_pylist() == [i for i in range(20) if i not in (1, 12)]
    # two buckets: each delete replaces its own bucket's file
    two = cat.create_table("db.two", SCHEMA, options=DV)
    two.write_arrow(_rows(list(range(10))))
    by_bucket = {b: rows for (_, b), rows in _bucket_ids(two).items()}

    def delete_in_bucket_0(step: str) -> None:
        if step == "delete.before_commit":
            cat.get_table("db.two").delete_where([("v", "=", by_bucket[0][0])])

    two.store.fault_hook = delete_in_bucket_0
    two.delete_where([("v", "=", by_bucket[1][0])])
    two.store.fault_hook = None
    assert sorted(cat.get_table("db.two").to_arrow().column("v").to_pylist()) == sorted(
        i for i in range(10) if i not in (by_bucket[0][0], by_bucket[1][0]))


def test_a_delete_landing_during_a_compaction_fails_the_compaction(cat: Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, options={**DV, "bucket": "1"})
    for start in (0, 10, 20):
        t.refresh().write_arrow(_rows(list(range(start, start + 10))))

    def delete_meanwhile(step: str) -> None:
        if step == "compact.before_commit":
            cat.get_table("db.t").delete_where([("v", "=", 5)])

    t.store.fault_hook = delete_meanwhile
    with pytest.raises(CommitConflictError, match="deletion vector"):
        t.refresh().compact(full=True)
    t.store.fault_hook = None
    fresh = cat.get_table("db.t")
    assert fresh.to_arrow().column("v").to_pylist() == [i for i in range(30) if i != 5]
    fresh.compact(full=True)
    assert cat.get_table("db.t").to_arrow().column("v").to_pylist() == [i for i in range(30) if i != 5]


def _bucket_ids(table: Any) -> dict[tuple[tuple[Any, ...], int], list[int]]:
    from tests.differential.helpers import rows_by_bucket

    return {k: rows.column("v").to_pylist() for k, rows in rows_by_bucket(table.refresh()).items()}


def test_inline_compaction_applies_vectors_and_maintenance_keeps_index_files(cat: Catalog) -> None:
    """A writer without write-only compacts a bucket inline once it holds compaction.max.file-num
    files: the deleted rows go with the vectors. A tag keeps the delete's index file through
    expiry and orphan removal, and reads at the tag still apply it."""
    t = cat.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "id", "deletion-vectors.enabled": "true",
                                                  "compaction.max.file-num": "3", "snapshot.num-retained.min": "1"})
    t.write_arrow(_rows([0, 1, 2]))
    t.refresh().write_arrow(_rows([3, 4, 5]))
    sid = t.refresh().delete_where([("v", "in", [1, 4])]).snapshot_id
    tagged = _index(t.refresh())[0]
    t.refresh().create_tag("deleted", sid)
    t.refresh().write_arrow(_rows([6, 7]))  # the third file: the writer compacts all three
    t = t.refresh()
    assert t.latest_snapshot().commit_kind.name == "COMPACT"
    assert _index(t) == {}
    assert t.to_arrow().column("v").to_pylist() == [0, 2, 3, 5, 6, 7]
    t.expire_snapshots(retain_max=1)
    t.refresh().remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert Path(t.store.paths.index_file(tagged[0])).exists()
    assert cat.get_table("db.t").to_arrow(tag="deleted").column("v").to_pylist() == [0, 2, 3, 5]

