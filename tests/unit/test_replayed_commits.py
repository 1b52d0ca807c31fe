"""Replayed checkpoints whose snapshots are gone, and aborts of messages that landed.

"Already committed" is recognised from retained snapshots only; once compaction and expiry removed
them, a replayed checkpoint must be refused because its files are gone (never a snapshot naming a
missing file), and abort must never delete files a landed snapshot references.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog, CommitFileMissingError, CommitMessage


@pytest.fixture
def t(catalog: Catalog):
    return catalog.create_table(
        "db.t", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"], options={"bucket": "1"}
    )


def _state(t) -> dict[int, int]:
    return {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}


def _checkpoint(t, user: str, k: int, v: int) -> str:
    w = t.new_writer(user, write_only=True)
    w.write_arrow(pa.table({"k": [k], "v": [v]}, schema=t.arrow_schema))
    return "\n".join(m.to_json() for m in w.prepare_commit())


def _load(checkpoint: str) -> list[CommitMessage]:
    return [CommitMessage.from_json(line) for line in checkpoint.splitlines()]


def _files(t, msgs: list[CommitMessage]) -> list[str]:
    return [t.store.data_file_path(m.partition, m.bucket, f) for m in msgs for f in m.new_files]


def test_replay_after_compaction_and_expiry_is_refused_and_changes_nothing(t):
    cp = _checkpoint(t, "job", 1, 1)
    assert t.new_committer("job").commit(_load(cp), 7)
    for i in range(3):
        t.write_arrow(pa.table({"k": [2], "v": [i]}, schema=t.arrow_schema))
    t.compact(full=True)
    assert t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0)).expired_snapshots
    assert not any(os.path.exists(p) for p in _files(t, _load(cp)))  # compacted away, then deleted
    before = t.latest_snapshot().id

    committer = t.new_committer("job")  # a restarted job: no snapshot of "job" is retained
    with pytest.raises(CommitFileMissingError, match=r"Cannot commit to db\.t: file data-.* was already deleted "
                       r"\(the checkpoint was probably committed before and its snapshot expired\)"):
        committer.commit(_load(cp), 7)
    assert t.latest_snapshot().id == before
    assert _state(t) == {1: 1, 2: 2}
    committer.abort(_load(cp))  # after that refusal nothing is deleted either
    assert _state(t) == {1: 1, 2: 2}


def test_abort_after_already_committed_keeps_the_landed_files(t):
    cp = _checkpoint(t, "job", 1, 1)
    assert t.new_committer("job").commit(_load(cp), 3) == [1]
    retry = t.new_committer("job")
    assert retry.commit(_load(cp), 3) == []  # already committed: a no-op
    retry.abort(_load(cp))  # the caller cleans up after a no-op: must delete nothing that landed
    assert all(os.path.exists(p) for p in _files(t, _load(cp)))
    assert _state(t) == {1: 1}


def test_abort_by_a_fresh_committer_keeps_files_a_snapshot_references(t):
    cp = _checkpoint(t, "job", 1, 1)
    assert t.new_committer("job").commit(_load(cp), 3) == [1]
    t.new_committer("job").abort(_load(cp), 3)  # identifier known: committed, refused
    t.new_committer("job").abort(_load(cp))  # identifier unknown: the files are referenced, kept
    assert all(os.path.exists(p) for p in _files(t, _load(cp)))
    assert _state(t) == {1: 1}


def test_abort_still_deletes_files_that_never_landed(t):
    cp = _checkpoint(t, "job", 1, 1)
    paths = _files(t, _load(cp))
    assert paths and all(os.path.exists(p) for p in paths)
    t.new_committer("job").abort(_load(cp), 1)
    assert not any(os.path.exists(p) for p in paths)
    assert t.latest_snapshot() is None


def test_a_replayed_compaction_conflicts_and_keeps_the_files_that_landed(t):
    """A compaction's messages committed again without the landed-before look (``check_committed=False``,
    as the compaction's own commit does) fail the conflict check; the conflict cleanup must not
    delete the outputs the first commit landed."""
    from lake_assets.errors import CommitConflictError
    from lake_assets.ops.compact import compact
    from lake_assets.ops.compact.rewrite import run_compaction_tasks

    for v in (1, 2, 3):
        t.write_arrow(pa.table({"k": [1, 2], "v": [v, v]}, schema=t.arrow_schema))
    captured: list[CommitMessage] = []

    def run_tasks(store, plan):
        captured.extend(run_compaction_tasks(store, plan.tasks))
        return captured

    assert compact(t.store, full=True, run_tasks=run_tasks).snapshot_id is not None
    outputs = [t.store.data_file_path(m.partition, m.bucket, f) for m in captured for f in m.compact_after]
    assert outputs
    with pytest.raises(CommitConflictError, match="already deleted"):
        t.new_committer("replay").commit(captured, check_committed=False)
    assert all(os.path.exists(p) for p in outputs)
    assert _state(t.refresh()) == {1: 3, 2: 3}
