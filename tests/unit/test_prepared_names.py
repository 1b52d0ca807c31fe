"""A long-lived writer's record of the files its `prepare_commit`s returned stays bounded
(`ops/prepared_names.py`): names of messages seen landed are forgotten, while abort still keeps
what landed and deletes what did not."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.ops import prepared_names
from lake_assets.ops.commit_cleanup import written_paths
from lake_assets.ops.commit_message import CommitMessage

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _table(tmp_path: Path, **options: str) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true",
                                                                        **options})


def _round(w: object, k: int) -> list[CommitMessage]:
    w.write_arrow(pa.table({"k": [k], "v": [k]}, schema=SCHEMA))  # type: ignore[attr-defined]
    return w.prepare_commit()  # type: ignore[attr-defined,no-any-return]


def _exist(t: Table, msgs: list[CommitMessage]) -> list[bool]:
    return [t.file_io.exists(p) for p in written_paths(t.store, msgs)]


def test_a_thousand_committed_rounds_keep_the_record_bounded_and_abort_decides_right(tmp_path):
    t = _table(tmp_path)
    w = t.new_writer("stream")
    committer = t.new_committer("stream")
    first = _round(w, 0)
    committer.commit(first, 0)
    most, batch = 0, []
    for k in range(1, 1000):  # committed 20 rounds at a time (cheaper; a committer behind, as Flink's)
        batch += _round(w, k)
        most = max(most, len(w.prepared))
        if k % 20 == 19:
            committer.commit(batch, k)
            batch = []
    committer.commit(batch, 1000)
    assert most <= 2 * prepared_names.LOOK_AT  # before: one entry per round, 1000 of them
    assert len(w.prepared.names) <= 2 * prepared_names.LOOK_AT
    assert w.prepared.seen is not None and w.prepared.seen >= 50 - 2 * prepared_names.LOOK_AT // 20
    lagging = [_round(w, 1000 + i) for i in range(3)]  # prepared, the committer behind: one lands
    committer.commit(lagging[1], 1002)
    landed = w.abort([*lagging[0], *lagging[1], *lagging[2], *first])  # `first` was forgotten long ago
    assert landed == [*lagging[1], *first]
    assert _exist(t, lagging[0]) == [False] and _exist(t, lagging[2]) == [False]
    assert all(_exist(t, lagging[1])) and all(_exist(t, first))
    w.close()
    assert len(t.refresh().to_arrow()) == 1001


def test_rounds_landed_in_snapshots_expired_since_the_last_look_are_forgotten(tmp_path, monkeypatch):
    """The snapshots a look would read expired: a message with a file live in the latest landed;
    one still pending is kept, and abort of it (its base's snapshots gone) deletes nothing."""
    monkeypatch.setattr(prepared_names, "LOOK_AT", 4)
    t = _table(tmp_path, **{"snapshot.num-retained.min": "1"})
    w = t.new_writer("stream")
    committer = t.new_committer("stream")
    pending = _round(w, 100)  # never committed
    for k in range(12):
        committer.commit(_round(w, k), k)
        t.expire_snapshots(retain_max=1)
    assert len(w.prepared) < 8  # landed ones forgotten by the live files of the latest
    assert set(w.prepared.names) >= {f.file_name for m in pending for f in m.new_files}
    assert w.prepared.seen is None  # never saw every snapshot since its base
    from lake_assets.errors import CommitStateUnknownError
    with pytest.raises(CommitStateUnknownError, match="has expired"):
        w.abort(pending)
    assert all(_exist(t, pending))
    w.close()
    assert set(w.prepared.names) >= {f.file_name for m in pending for f in m.new_files}  # undecided: kept


def _names(msgs: list[CommitMessage]) -> set[str]:
    return {f.file_name for m in msgs for f in m.new_files}


def test_an_abort_forgets_the_messages_it_settled_and_only_those(tmp_path):
    """Abort deletes a message that did not land (it can never land now) and keeps one that did:
    both are settled and leave the record; a message not given to abort stays in it."""
    t = _table(tmp_path)
    w = t.new_writer("stream")
    committer = t.new_committer("stream")
    landed_one, dropped, pending = _round(w, 1), _round(w, 2), _round(w, 3)
    committer.commit(landed_one, 1)
    assert w.abort([*landed_one, *dropped]) == landed_one
    assert _exist(t, dropped) == [False] and all(_exist(t, landed_one))
    assert set(w.prepared.names) == _names(pending) and len(w.prepared) == 1  # before: all three kept
    # given again, a forgotten message is looked up as another writer's would be: still kept
    assert w.abort(landed_one) == landed_one and all(_exist(t, landed_one))
    assert w.abort(pending) == [] and _exist(t, pending) == [False]
    assert len(w.prepared) == 0
    w.close()


def test_rounds_a_committer_aborted_leave_the_record_once_a_look_sees_their_files_gone(tmp_path, monkeypatch):
    """A driver aborts failed rounds through `TableCommitter.abort` (the writer never hears of it):
    their files are gone and no snapshot since the writer's base added them, so they cannot land.
    Before, each such round stayed in a long-lived writer's record for good."""
    monkeypatch.setattr(prepared_names, "LOOK_AT", 4)
    t = _table(tmp_path)
    w = t.new_writer("stream")
    committer = t.new_committer("stream")
    pending = _round(w, 1000)  # prepared, not committed yet: its files exist, it stays
    most = 0
    for k in range(40):
        msgs = _round(w, k)
        if k % 2:
            committer.commit(msgs, k)
        else:
            t.new_committer("driver").abort(msgs)
            assert _exist(t, msgs) == [False]
        most = max(most, len(w.prepared))
    assert most <= 2 * 4 + 1  # before: 21 (every aborted round, and the pending one)
    assert _names(pending) <= set(w.prepared.names)
    committer.commit(pending, 1000)
    assert len(t.refresh().to_arrow()) == 21
    w.close()
