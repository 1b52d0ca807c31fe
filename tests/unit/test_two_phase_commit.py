"""Two-phase commit: writers hand messages to one committer; retries are exactly-once."""

from __future__ import annotations

import pickle
import threading

import pyarrow as pa
import pytest

from lake_assets import Catalog, CommitConflictError, CommitKind, CommitMessage, NoSuchTableError
from tests.conftest import rows


@pytest.fixture
def kv(catalog: Catalog):
    return catalog.create_table(
        "db.kv", pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"], options={"bucket": "4"}
    )


def _data(t, ks, vs):
    return pa.table({"k": ks, "v": vs}, schema=t.arrow_schema)


def test_messages_serialize_and_commit_once(kv):
    w = kv.new_writer("job-1")
    w.write_arrow(_data(kv, [1, 2, 3], ["a", "b", "c"]))
    msgs = w.prepare_commit()
    assert msgs and all(isinstance(m, CommitMessage) for m in msgs)
    # messages travel as JSON or pickle (Spark, processes) and stay small
    via_json = [CommitMessage.from_json(m.to_json()) for m in msgs]
    assert via_json == msgs
    assert pickle.loads(pickle.dumps(msgs)) == msgs
    assert all(len(m.to_json()) < 4096 for m in msgs)
    c = kv.new_committer("job-1")
    assert c.commit(via_json, 1) == [1]
    # the same identifier again, from a fresh committer (a restart): nothing happens
    assert kv.new_committer("job-1").commit(msgs, 1) == []
    # an older identifier too
    assert kv.new_committer("job-1").commit(msgs, 0) == []
    assert len(kv.snapshots()) == 1
    assert kv.to_arrow().num_rows == 3


def test_streaming_checkpoints_and_replay_after_restart(kv):
    w = kv.new_writer("stream")
    c = kv.new_committer("stream")
    for cp in range(1, 4):
        w.write_arrow(_data(kv, [cp], [f"v{cp}"]))
        assert c.commit(w.prepare_commit(), cp)
    # the process restarts and replays checkpoint 3 with the same rows: no duplicate snapshot
    w2 = kv.new_writer("stream")
    w2.write_arrow(_data(kv, [3], ["v3"]))
    replay = w2.prepare_commit()
    assert kv.new_committer("stream").commit(replay, 3) == []
    kv.new_committer("stream").abort(replay)
    assert [s.commit_identifier for s in kv.snapshots()] == [1, 2, 3]
    assert rows(kv.to_arrow(), "k") == [{"k": 1, "v": "v1"}, {"k": 2, "v": "v2"}, {"k": 3, "v": "v3"}]


def test_several_writers_one_committer(kv):
    msgs = []
    for i, chunk in enumerate(([1, 2], [3, 4], [5])):
        w = kv.new_writer("multi", write_only=True)
        w.write_arrow(_data(kv, chunk, [f"w{i}"] * len(chunk)))
        msgs += w.prepare_commit()
    assert kv.new_committer("multi").commit(msgs, 7) == [1]
    assert kv.to_arrow().num_rows == 5


def test_abort_removes_uncommitted_files(kv):
    w = kv.new_writer("aborted")
    w.write_arrow(_data(kv, [1, 2, 3], ["a", "b", "c"]))
    msgs = w.prepare_commit()
    paths = [kv.store.data_file_path(m.partition, m.bucket, f) for m in msgs for f in m.new_files]
    assert all(kv.file_io.exists(p) for p in paths)
    w.abort(msgs)
    assert not any(kv.file_io.exists(p) for p in paths)
    assert kv.latest_snapshot() is None


def test_concurrent_committers_never_lose_a_commit(kv):
    """Threads race for snapshot ids; each commit lands exactly once with a unique id."""
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for j in range(5):
                kv.write_arrow(_data(kv, [n * 100 + j], [f"{n}-{j}"]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    snaps = kv.snapshots()
    # writers also compact inline (and may lose those races harmlessly): ids stay contiguous
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    assert sum(s.commit_kind == CommitKind.APPEND for s in snaps) == 20
    assert kv.to_arrow().num_rows == 20
    for s in snaps:
        assert kv.to_arrow(snapshot_id=s.id).num_rows <= 20


def test_compact_commit_conflicts_when_file_already_gone(kv):
    kv.write_arrow(_data(kv, [1, 2, 3, 4], list("abcd")))
    live = kv.store.file_store_scan().live_entries(kv.latest_snapshot())
    victim = live[0]
    stale = CommitMessage(victim.partition, victim.bucket, 4, compact_before=(victim.file,),
                          compact_after=(victim.file.upgrade(5),))
    # someone else already removed it
    gone = CommitMessage(victim.partition, victim.bucket, 4, compact_before=(victim.file,))
    kv.new_committer("other").commit([gone], 1)
    before = kv.latest_snapshot().id
    with pytest.raises(CommitConflictError, match="already deleted"):
        kv.new_committer("compactor").commit([stale], 1)
    assert kv.latest_snapshot().id == before


def test_writing_to_dropped_table_fails_cleanly(catalog: Catalog, kv):
    catalog.drop_table("db.kv")
    with pytest.raises(NoSuchTableError):
        kv.write_arrow(_data(kv, [1], ["a"]))
    assert not catalog.table_exists("db.kv")
