"""`TableWriter.abort(messages)` looks before it deletes (ops/writer_abort.py).

Paimon's abort deletes the messages' files blindly; a caller aborting after a commit whose outcome
it did not know would delete files a landed snapshot references. Here the files of a message a
snapshot after the writer's base committed are kept (and returned), the others deleted, and when
that cannot be known (snapshots expired) nothing is deleted and `CommitStateUnknownError` raised.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import CommitStateUnknownError, CorruptMetadataError
from lake_assets.ops.commit_cleanup import written_paths
from lake_assets.ops.commit_message import CommitMessage

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _table(tmp_path: Path, **options: str) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                            options={"bucket": "2", "commit.max-retries": "0", **options})


def _batch(ks: range, v: int) -> pa.Table:
    return pa.table({"k": list(ks), "v": [v] * len(ks)}, schema=SCHEMA)


def _state(t: Table) -> dict[int, int]:
    return {r["k"]: r["v"] for r in t.refresh().to_arrow().to_pylist()}


def _existing(t: Table, msgs: list[CommitMessage]) -> list[bool]:
    paths = written_paths(t.store, msgs)
    assert paths
    return [t.file_io.exists(p) for p in paths]


def _orphan_data_files(t: Table) -> list[str]:
    """Data and changelog files no snapshot references (a put in doubt leaves its manifests)."""
    return [p for p in t.remove_orphan_files(older_than=timedelta(0)).paths if "/bucket-" in p]


def test_abort_keeps_the_files_of_a_landed_commit_and_says_so(tmp_path, caplog):
    t = _table(tmp_path, **{"changelog-producer": "input"})
    t.write_arrow(_batch(range(4), 0))  # the writer's base: snapshot 1
    w = t.new_writer("job")
    w.write_arrow(_batch(range(2, 6), 1))
    msgs = w.prepare_commit()
    assert any(m.new_changelog for m in msgs)
    assert t.new_committer("job").commit(msgs, 1) == [2]
    w.write_arrow(_batch(range(10, 12), 2))  # a later round, never prepared: its files go
    assert w.abort(msgs) == msgs
    assert all(_existing(t, msgs))  # data and changelog files
    assert "Not deleting the files of 2 message(s) of db.t" in caplog.text
    assert _state(t) == {0: 0, 1: 0, 2: 1, 3: 1, 4: 1, 5: 1}
    w.close()
    assert _orphan_data_files(t) == []


def test_abort_deletes_the_files_of_a_failed_commit(tmp_path):
    """The commit failed before its snapshot put (proven not landed); the committer leaves the
    files to the caller, whose abort deletes them."""
    t = _table(tmp_path)
    t.write_arrow(_batch(range(8, 9), 0))
    w = t.new_writer("job")
    w.write_arrow(_batch(range(4), 0))
    msgs = w.prepare_commit()
    committer = t.new_committer("job")

    def fail(step: str) -> None:
        if step == "commit.before_snapshot":
            raise OSError("storage refused the snapshot")

    t.fault_hook = fail
    with pytest.raises(OSError, match="storage refused"):
        committer.commit(msgs, 1, check_committed=False)
    t.fault_hook = None
    assert not committer.may_have_landed
    assert all(_existing(t, msgs))
    assert w.abort(msgs) == []
    assert not any(_existing(t, msgs))
    assert _state(t) == {8: 0}
    assert _orphan_data_files(t) == []


@pytest.mark.parametrize("landed", [True, False])
def test_abort_after_an_unknown_outcome_looks_whether_it_landed(tmp_path, landed):
    """The snapshot put is interrupted (as tests/reliability/test_interrupts.py does): after it
    was made, or before; the caller only knows the outcome is unknown and calls abort."""
    t = _table(tmp_path, **{"write-only": "true"})
    t.write_arrow(_batch(range(4), 0))
    w = t.new_writer("job")
    w.write_arrow(_batch(range(2, 6), 1))
    msgs = w.prepare_commit()
    real = t.file_io.try_create

    def interrupted_put(path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            if landed:
                real(path, data)
            raise CommitStateUnknownError("the put of the snapshot was not answered")
        return real(path, data)

    t.file_io.try_create = interrupted_put  # type: ignore[method-assign]
    committer = t.new_committer("job")
    with pytest.raises(CommitStateUnknownError):
        committer.commit(msgs, 1)
    del t.file_io.try_create
    assert committer.may_have_landed
    assert w.abort(msgs) == (msgs if landed else [])
    assert _existing(t, msgs) == [landed] * len(written_paths(t.store, msgs))
    assert _state(t) == ({0: 0, 1: 0, 2: 1, 3: 1, 4: 1, 5: 1} if landed else {0: 0, 1: 0, 2: 0, 3: 0})
    w.close()
    assert _orphan_data_files(t) == []


def test_abort_of_another_writers_messages_looks_at_every_snapshot(tmp_path):
    """A writer that never wrote has no base: messages of an earlier writer (a restarted
    process) are looked up in every snapshot."""
    t = _table(tmp_path)
    w = t.new_writer("job")
    w.write_arrow(_batch(range(4), 0))
    msgs = [CommitMessage.from_json(m.to_json()) for m in w.prepare_commit()]
    t.new_committer("job").commit(msgs, 1)
    t.write_arrow(_batch(range(8, 9), 1))
    with t.new_writer("job") as again:
        assert again.abort(msgs) == msgs
    assert all(_existing(t, msgs))
    assert _state(t) == {0: 0, 1: 0, 2: 0, 3: 0, 8: 1}


@pytest.mark.parametrize("committed", [True, False])
def test_abort_deletes_nothing_when_snapshots_since_the_base_expired(tmp_path, committed):
    t = _table(tmp_path, **{"snapshot.num-retained.min": "1"})
    t.write_arrow(_batch(range(4), 0))
    w = t.new_writer("job")
    w.write_arrow(_batch(range(2, 6), 1))
    msgs = w.prepare_commit()
    if committed:
        t.new_committer("job").commit(msgs, 1)
    for v in range(2, 4):
        t.write_arrow(_batch(range(20, 22), v))
    t.expire_snapshots(retain_max=1)
    assert t.snapshot_manager.earliest_id() == t.latest_snapshot().id
    with pytest.raises(CommitStateUnknownError, match=r"db\.t: snapshot 2, committed after the writer's base "
                       r"\(snapshot 1\), has expired.*nothing was deleted: leave the files to orphan removal"):
        w.abort(msgs)
    assert all(_existing(t, msgs))
    w.close()
    assert {2: 1, 5: 1}.items() <= _state(t).items() if committed else 5 not in _state(t)


@pytest.mark.parametrize("landed", [True, False])
@pytest.mark.parametrize("kind", ["postpone", "fixed-bucket"])
def test_postpone_table_writers_look_too(tmp_path, kind, landed):
    """A postpone-bucket table's writers (`PostponeWriter`, and `PostponeFixedBucketWriter` of
    batch writes into real buckets) abort as `TableWriter`: landed messages keep their files."""
    from lake_assets.ops.postpone_fixed_bucket import PostponeFixedBucketWriter

    t = _table(tmp_path, bucket="-2")
    t.write_arrow(_batch(range(4), 0))
    w = t.new_writer("job") if kind == "postpone" else PostponeFixedBucketWriter(t.store, "job", {}, default_count=2)
    w.write_arrow(_batch(range(2, 6), 1))
    msgs = w.prepare_commit()
    assert msgs
    if landed:
        t.new_committer("job").commit(msgs, 1)
    assert w.abort(msgs) == (msgs if landed else [])
    assert _existing(t, msgs) == [landed] * len(written_paths(t.store, msgs))
    w.close()
    assert _orphan_data_files(t) == []


def test_abort_deletes_nothing_when_a_snapshot_since_the_base_cannot_be_read(tmp_path):
    t = _table(tmp_path)
    t.write_arrow(_batch(range(4), 0))
    w = t.new_writer("job")
    w.write_arrow(_batch(range(2, 6), 1))
    msgs = w.prepare_commit()
    t.write_arrow(_batch(range(20, 22), 2))  # snapshot 2, by another user
    with open(t.store.paths.snapshot_file(2), "w", encoding="utf-8") as fh:  # a torn or corrupt snapshot
        fh.write('{"id": 2, "schemaId": "not a snapshot"')
    with pytest.raises(CommitStateUnknownError, match=r"db\.t: whether its messages landed cannot be known "
                       r"\(reading snapshot 2 failed: .*nothing was deleted"):
        w.abort(msgs)
    assert all(_existing(t, msgs))


def _foreign(msgs: list[CommitMessage]) -> list[CommitMessage]:
    """Messages as another process hands them over (a Spark task's, a crashed attempt's)."""
    return [CommitMessage.from_json(m.to_json()) for m in msgs]


def test_abort_of_another_writers_landed_messages_older_than_its_base_keeps_them(tmp_path):
    """A writer whose base (snapshot 3) is newer than the commit (snapshot 2) of the messages it is
    given: looking only after its own base it found nothing and deleted the files of snapshot 2."""
    t = _table(tmp_path)
    t.write_arrow(_batch(range(8, 9), 0))
    other = t.new_writer("task")
    other.write_arrow(_batch(range(4), 1))
    msgs = _foreign(other.prepare_commit())
    assert t.new_committer("job").commit(msgs, 1) == [2]
    t.write_arrow(_batch(range(20, 21), 2))  # snapshot 3: the aborting writer's base
    w = t.new_writer("job")
    w.write_arrow(_batch(range(30, 32), 3))
    assert w.abort(msgs) == msgs
    assert all(_existing(t, msgs))
    assert _state(t) == {0: 1, 1: 1, 2: 1, 3: 1, 8: 0, 20: 2}
    w.close()
    other.close()
    assert _orphan_data_files(t) == []


@pytest.mark.parametrize("landed", [True, False])
def test_abort_of_another_writers_messages_is_decided_after_older_snapshots_expired(tmp_path, landed):
    """Snapshots up to the messages' commit expired: a landed file is still named by the earliest
    retained snapshot (kept), a file never committed by nothing (deleted)."""
    t = _table(tmp_path, **{"snapshot.num-retained.min": "1"})
    other = t.new_writer("task")
    other.write_arrow(_batch(range(4), 1))
    msgs = _foreign(other.prepare_commit())
    if landed:
        t.new_committer("job").commit(msgs, 1)
    for v in range(2, 5):
        t.write_arrow(_batch(range(20, 22), v))
    t.expire_snapshots(retain_max=1)
    assert t.snapshot_manager.earliest_id() > 1
    with t.new_writer("job") as w:
        w.write_arrow(_batch(range(30, 31), 5))  # based at the latest snapshot
        assert w.abort(msgs) == (msgs if landed else [])
    assert _existing(t, msgs) == [landed] * len(written_paths(t.store, msgs))
    assert _state(t) == {**({0: 1, 1: 1, 2: 1, 3: 1} if landed else {}), 20: 4, 21: 4}
    other.close()
    assert _orphan_data_files(t) == []


def test_abort_of_another_writers_compacted_messages_keeps_what_a_retained_delta_deletes(tmp_path):
    """The messages landed and a full compaction removed their files: the compaction's snapshot
    still names them (expiry deletes them with it), so abort leaves them."""
    t = _table(tmp_path)
    other = t.new_writer("task")
    other.write_arrow(_batch(range(4), 1))
    msgs = _foreign(other.prepare_commit())
    t.new_committer("job").commit(msgs, 1)
    t.compact(full=True)
    with t.new_writer("job") as w:
        assert w.abort(msgs) == msgs
    assert all(_existing(t, msgs))
    other.close()


def test_abort_of_another_writers_messages_deletes_nothing_when_metadata_cannot_be_read(tmp_path):
    t = _table(tmp_path)
    t.write_arrow(_batch(range(8, 9), 0))
    other = t.new_writer("task")
    other.write_arrow(_batch(range(4), 1))
    msgs = _foreign(other.prepare_commit())
    w = t.new_writer("job")
    w.write_arrow(_batch(range(30, 31), 1))
    with open(t.store.paths.snapshot_file(1), "w", encoding="utf-8") as fh:  # a torn or corrupt snapshot
        fh.write('{"id": 1, "schemaId": "not a snapshot"')
    with pytest.raises(CommitStateUnknownError, match=r"db\.t: whether the messages of another writer landed "
                       r"cannot be known .*nothing was deleted"):
        w.abort(msgs)
    assert all(_existing(t, msgs))
    w.close()
    other.close()


def test_abort_of_another_writers_messages_deletes_nothing_over_a_hole_in_the_snapshots(tmp_path):
    """Snapshots 2 (the messages' commit) and 3 (the compaction that removed their files) are
    missing between retained 1 and 4: damaged metadata. Read as it was, no retained snapshot named
    the files and abort deleted them (orphan removal too); a hole now decides nothing."""
    t = _table(tmp_path)
    t.write_arrow(_batch(range(8, 9), 0))
    other = t.new_writer("task")
    other.write_arrow(_batch(range(4), 1))
    msgs = _foreign(other.prepare_commit())
    assert t.new_committer("job").commit(msgs, 1) == [2]
    t.compact(full=True)
    t.write_arrow(_batch(range(20, 21), 2))
    assert t.snapshot_manager.latest_id() == 4
    for sid in (2, 3):
        Path(t.store.paths.snapshot_file(sid)).unlink()
    w = t.new_writer("job")
    with pytest.raises(CommitStateUnknownError, match=r"snapshot\(s\) 2, 3 are missing between the earliest "
                       r"retained snapshot 1 and the latest 4.*nothing was deleted"):
        w.abort(msgs)
    assert all(_existing(t, msgs))
    with pytest.raises(CorruptMetadataError, match=r"snapshot\(s\) 2, 3 are missing"):
        t.remove_orphan_files(older_than=timedelta(0))
    assert all(_existing(t, msgs))
    w.close()
    other.close()
