"""One writer per dynamic-bucket table (``bucket = -1``): what happens when there are two anyway.

Two writers that start from the same snapshot and both see a new key can give it two different
buckets (different assigner state, a different ``dynamic-bucket.target-row-num``), each changing
only its own bucket's hash index. The commit must refuse the second one: a key in two buckets is
returned twice by every reader. These tests force exactly that, and check that what is not a
second writer (other partitions, an expired base snapshot, a retry) still commits.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import CommitConflictError, CommitStateUnknownError, InvalidCommitMessageError
from lake_assets.ops.commit_message import CommitMessage

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def rows(ids: list[int] | range, tag: str, dt: str = "d1") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                     options={"dynamic-bucket.target-row-num": "10"})
    return cat


def keys_once(t: Table, dt: str = "d1") -> list[int]:
    """The ids of partition ``dt``, checking that no key is read twice (a key in two buckets)."""
    ids = t.to_arrow(filter=[("dt", "=", dt)]).column("id").to_pylist()
    assert len(ids) == len(set(ids)), f"keys read twice: {sorted(i for i in set(ids) if ids.count(i) > 1)}"
    return sorted(ids)


def two_writers_one_new_key(catalog: Catalog) -> tuple[list[CommitMessage], list[CommitMessage]]:
    """Writers a and b start from the same snapshot (bucket 0 holds 9 keys of 10) and both write
    the new key 100: a puts it in bucket 0; b, whose target is 5 (ALTERed meanwhile; an ALTER
    makes no snapshot), finds bucket 0 full and opens bucket 1."""
    t = catalog.get_table("db.t")
    t.write_arrow(rows(range(9), "base"))
    a = t.new_writer("a")
    a.write_arrow(rows([100], "a"))  # the writer loads the index at its first write
    t.update_schema().set_option("dynamic-bucket.target-row-num", "5").commit()
    b = catalog.get_table("db.t").new_writer("b")
    b.write_arrow(rows([100], "b"))
    ma, mb = a.prepare_commit(), b.prepare_commit()
    assert {m.bucket for m in ma} == {0} and {m.bucket for m in mb} == {1}  # disjoint buckets
    return ma, mb


def test_a_second_writer_giving_a_new_key_another_bucket_conflicts(catalog: Catalog) -> None:
    ma, mb = two_writers_one_new_key(catalog)
    t = catalog.get_table("db.t")
    t.new_committer("a").commit(ma, 1)
    with pytest.raises(CommitConflictError, match=r"hash index of partition dt=d1 changed"):
        t.new_committer("b").commit(mb, 1)
    assert keys_once(t) == [*range(9), 100]
    # the refused writer's index file is gone with its data; the table's index is a's
    assert not Path(t.paths.index_file(mb[0].index_after[0].file_name)).exists()


def test_two_writers_messages_in_one_commit_conflict(catalog: Catalog) -> None:
    ma, mb = two_writers_one_new_key(catalog)
    t = catalog.get_table("db.t")
    with pytest.raises(CommitConflictError, match="hash index of partition dt=d1 changed"):
        t.new_committer("ab").commit([*ma, *mb], 1)
    assert keys_once(t) == list(range(9))


def test_writers_of_other_partitions_commit_side_by_side(catalog: Catalog) -> None:
    t = catalog.get_table("db.t")
    t.write_arrow(pa.concat_tables([rows(range(5), "base", "d1"), rows(range(5), "base", "d2")]))
    a, b = t.new_writer("a"), t.new_writer("b")
    a.write_arrow(rows(range(5, 20), "a", "d1"))
    b.write_arrow(rows(range(5, 20), "b", "d2"))
    t.new_committer("a").commit(a.prepare_commit(), 1)
    t.new_committer("b").commit(b.prepare_commit(), 1)
    assert keys_once(t, "d1") == keys_once(t, "d2") == list(range(20))


def test_a_writer_whose_base_snapshot_expired_meanwhile_commits(catalog: Catalog) -> None:
    t = catalog.get_table("db.t")
    t.write_arrow(pa.concat_tables([rows(range(5), "base", "d1"), rows(range(5), "base", "d2")]))
    w = t.new_writer("w")
    w.write_arrow(rows(range(5, 12), "w", "d1"))
    base = t.latest_snapshot().id
    for r in range(3):  # others write another partition, compact, and expire w's base snapshot
        t.write_arrow(rows(range(5 + r * 10, 15 + r * 10), f"o{r}", "d2"))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert base not in [s.id for s in t.snapshots()]
    t.new_committer("w").commit(w.prepare_commit(), 1)
    assert keys_once(t, "d1") == list(range(12))
    assert keys_once(t, "d2") == list(range(35))


def test_a_writer_spanning_commits_meets_its_own_index(catalog: Catalog) -> None:
    t = catalog.get_table("db.t")
    w = t.new_writer("w")
    committer = t.new_committer("w")
    for r in range(3):
        w.write_arrow(rows(range(r * 7, r * 7 + 12), f"r{r}"))
        committer.commit(w.prepare_commit(), r + 1)
    assert keys_once(t) == list(range(26))


def test_two_rounds_of_one_writer_commit_in_one_call(catalog: Catalog) -> None:
    t = catalog.get_table("db.t")
    w = t.new_writer("w")
    w.write_arrow(rows(range(8), "r1"))
    first = w.prepare_commit()
    w.write_arrow(rows(range(6, 14), "r2"))
    second = w.prepare_commit()
    t.new_committer("w").commit([*first, *second], 1)
    assert keys_once(t) == list(range(14))


def test_a_retry_after_an_unknown_outcome_is_exactly_once(catalog: Catalog) -> None:
    t = catalog.get_table("db.t")
    t.write_arrow(rows(range(5), "base"))
    w = t.new_writer("w")
    w.write_arrow(rows(range(5, 30), "w"))
    messages = w.prepare_commit()

    def lost_answer(step: str) -> None:
        if step == "commit.after_snapshot":
            raise OSError("connection reset")  # the snapshot is there; the caller cannot know

    t.fault_hook = lost_answer
    with pytest.raises(CommitStateUnknownError):
        t.new_committer("w").commit(messages, 7)
    t.fault_hook = None
    assert t.new_committer("w").commit(messages, 7) == []  # landed: the retry is a no-op
    assert keys_once(t) == list(range(30))


def test_a_retry_of_an_unlanded_commit_still_meets_the_other_writer(catalog: Catalog) -> None:
    ma, mb = two_writers_one_new_key(catalog)
    t = catalog.get_table("db.t")

    def unknown(step: str) -> None:
        if step == "commit.before_snapshot":
            raise CommitStateUnknownError("the put of the snapshot was not answered")

    t.fault_hook = unknown
    with pytest.raises(CommitStateUnknownError):
        t.new_committer("b").commit(mb, 1)
    t.fault_hook = None
    t.new_committer("a").commit(ma, 1)  # meanwhile the other writer lands
    with pytest.raises(CommitConflictError, match="hash index of partition dt=d1 changed"):
        t.new_committer("b").commit(mb, 1)  # b's retry: not committed, and now in conflict
    assert keys_once(t) == [*range(9), 100]


def test_a_hash_index_change_without_the_writers_view_is_refused(catalog: Catalog) -> None:
    t = catalog.get_table("db.t")
    w = t.new_writer("w")
    w.write_arrow(rows(range(3), "a"))
    (m,) = w.prepare_commit()
    assert m.hash_index_view
    with pytest.raises(InvalidCommitMessageError, match="view"):
        CommitMessage(m.partition, m.bucket, -1, new_files=m.new_files, index_after=m.index_after)
    assert CommitMessage.from_json(m.to_json()) == m
