"""Cross-partition upsert writers against the table's history (issue 14, round 2): a rollback whose
snapshot ids were reused since the writer read its key index, and long-lived writers whose early
snapshots expire."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import CommitConflictError, InvalidCommitMessageError
from lake_assets.ops.commit_message import CommitMessage

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def _table(tmp_path: Path) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                            options={"dynamic-bucket.target-row-num": "10"})


def _rows(ids: list[int], names: list[str], dts: list[str]) -> pa.Table:
    return pa.table({"id": ids, "name": names, "dt": dts}, schema=SCHEMA)


def _read(t: Table) -> list[tuple[int, str, str]]:
    return sorted((r["id"], r["name"], r["dt"]) for r in t.refresh().to_arrow().to_pylist())


def _expire_all_but(t: Table, keep: int) -> None:
    t.refresh().expire_snapshots(retain_min=keep, retain_max=keep, older_than=datetime.now() + timedelta(days=1))


def test_a_rollback_whose_ids_were_reused_up_to_the_base_fails_the_commit(tmp_path: Path) -> None:
    """Key 1 moved a -> b in snapshot 2; a writer reads its index at 2 (1 in b). The table is rolled
    back to 1 (1 in a again) and another writer's commit is snapshot 2 now. The id alone matches:
    the writer's move of 1 to c would retract it in b only and leave it in a and c. The commit
    fails by the snapshot's identity, nothing committed."""
    t = _table(tmp_path)
    t.write_arrow(_rows([1, 2], ["1", "2"], ["a", "a"]))
    t.refresh().write_arrow(_rows([1], ["moved"], ["b"]))
    with t.refresh().new_writer("w") as w:
        w.write_arrow(_rows([1], ["again"], ["c"]))
        messages = w.prepare_commit()
        assert {m.key_index_base for m in messages} == {2}
        t.refresh().rollback_to(snapshot_id=1)
        t.refresh().write_arrow(_rows([5], ["5"], ["a"]))  # snapshot 2 again, another commit
        assert t.refresh().latest_snapshot().id == 2  # type: ignore[union-attr]
        with pytest.raises(CommitConflictError, match=r"rolled back to before snapshot 2.*is another commit now"):
            t.new_committer("w").commit(messages)
    assert _read(t) == [(1, "1", "a"), (2, "2", "a"), (5, "5", "a")]


def test_a_rollback_with_reused_ids_beyond_the_base_fails_the_commit(tmp_path: Path) -> None:
    """The same with other commits reaching past the base again, which do not touch key 1."""
    t = _table(tmp_path)
    t.write_arrow(_rows([1, 2], ["1", "2"], ["a", "a"]))
    t.refresh().write_arrow(_rows([1], ["moved"], ["b"]))
    with t.refresh().new_writer("w") as w:
        w.write_arrow(_rows([1], ["again"], ["c"]))
        messages = w.prepare_commit()
        t.refresh().rollback_to(snapshot_id=1)
        for i in (5, 6, 7):
            t.refresh().write_arrow(_rows([i], [str(i)], ["a"]))
        with pytest.raises(CommitConflictError, match="is another commit now"):
            t.new_committer("w").commit(messages)
    assert [r[0] for r in _read(t)] == [1, 2, 5, 6, 7]


def test_commit_message_carries_the_base_identity() -> None:
    m = CommitMessage(b"\x00\x00\x00\x00", 0, -1, key_index_base=7, key_index_base_identity="1/2/a/b/u")
    assert CommitMessage.from_json(m.to_json()).key_index_base_identity == "1/2/a/b/u"
    with pytest.raises(InvalidCommitMessageError, match="key_index_base 7 comes without the identity"):
        CommitMessage(b"\x00\x00\x00\x00", 0, -1, key_index_base=7)


def test_a_long_lived_writer_commits_while_its_early_snapshots_expire(tmp_path: Path) -> None:
    """One writer, many commits, another user's compaction after each and every older snapshot
    expired: its index is kept and its base moves over its own commits and the compactions (at
    its next write), so every commit lands (the second one failed when the snapshot after the
    bootstrap's had expired), and each key lives in one place. Expiry keeps the writer's base,
    which its lease holds (ops/writer_lease.py): another user's append stopping the base moving
    no longer expires it under the writer."""
    t = _table(tmp_path)
    t.write_arrow(_rows([1, 2, 3], ["1", "2", "3"], ["a", "a", "a"]))
    # write-only: compactions are the other user's (Paimon's rule with a dedicated compaction job)
    with t.refresh().new_writer("w", write_only=True) as w:
        for r, part in enumerate(["b", "c", "a", "b"]):
            w.write_arrow(_rows([1, 2], [f"r{r}", f"r{r}"], [part, "a" if r % 2 else part]))
            messages = w.prepare_commit()
            t.new_committer("w").commit(messages, r)
            t.refresh().compact(full=True)
            _expire_all_but(t, 2)  # the writer's commit and the compaction
        # the base moves at the writer's next write: until then its commit (7) is held
        assert t.refresh().snapshot_manager.earliest_id() == 7
        assert _read(t) == [(1, "r3", "b"), (2, "r3", "a"), (3, "3", "a")]
        # another user's append stops the base moving; expiry keeps the base for the writer
        t.refresh().write_arrow(_rows([9], ["9"], ["c"]))
        w.write_arrow(_rows([11], ["mine"], ["a"]))
        messages = w.prepare_commit()
        base = {m.key_index_base for m in messages}
        assert base == {9}
        t.refresh().write_arrow(_rows([10], ["10"], ["c"]))
        _expire_all_but(t, 1)
        assert t.refresh().snapshot_manager.earliest_id() == 9
        t.new_committer("w").commit(messages, 10)
        # a key the other user wrote since the base is a conflict, found in the kept snapshots
        w.write_arrow(_rows([9], ["mine"], ["a"]))
        with pytest.raises(CommitConflictError, match=r"snapshot 10 of another writer .* wrote keys"):
            t.new_committer("w").commit(w.prepare_commit(), 11)
    assert _read(t)[-3:] == [(9, "9", "c"), (10, "10", "c"), (11, "mine", "a")]
    # closed: the lease is gone, expiry keeps one snapshot
    _expire_all_but(t, 1)
    assert t.refresh().snapshot_manager.earliest_id() == t.refresh().latest_snapshot().id  # type: ignore[union-attr]
    # a new writer reads the index again and moves key 9 correctly
    t.refresh().write_arrow(_rows([9], ["mine"], ["a"]))
    assert [r for r in _read(t) if r[0] == 9] == [(9, "mine", "a")]
