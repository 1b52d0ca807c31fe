"""Lost and failed S3 responses in maintenance: the fault proxy (`fault_proxy.py`) in front of moto.

A compaction's COMPACT snapshot (deletion-vector and postpone tables), an expiry's deletes and
hint, and an orphan removal's deletes each meet a response lost after the request landed
(``drop``, ``fail_after``) or a request that never lands (``fail``). A landed commit is found by
looking (one snapshot, never two); an unknown one raises `CommitStateUnknownError` and deletes
nothing a landed commit could reference; an expiry or orphan removal that fails midway leaves
every retained snapshot's and tag's files in place and completes when run again.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitStateUnknownError
from lake_assets.spec.snapshot import CommitKind
from tests.reliability.fault_proxy import Fault
from tests.reliability.invariants import TableInvariants

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
DV = {"bucket": "1", "deletion-vectors.enabled": "true"}
POSTPONE = {"bucket": "-2", "postpone.default-bucket-num": "1"}
FAIL_FAST = {"config_kwargs": {"retries": {"max_attempts": 1}}}  # no backoff on a request that never lands


ROUND1 = pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA)
ROUND2 = pa.table({"k": [2, 4], "v": ["b2", "d"]}, schema=SCHEMA)  # over ROUND1: a vector marks k=2


def _table(wh: str, opts: dict, options: dict[str, str], rounds: int = 2):  # type: ignore[no-untyped-def]
    cat = Catalog(wh, **opts)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options=options)
    for batch in (ROUND1, ROUND2)[:rounds]:
        t.write_arrow(batch)
    return t


def _rows(t) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted((r["k"], r["v"]) for r in t.to_arrow().to_pylist())


def _listing(t) -> set[str]:  # type: ignore[no-untyped-def]
    return {st.path for st in t.file_io.walk_files(t.paths.root.rstrip("/"))}


def _intact(wh: str, opts: dict) -> None:
    """A fresh handle: contiguous ids, no commit twice, every holder's files present and readable."""
    assert TableInvariants(Catalog(wh, **opts).get_table("db.t")).check_all() == []


EXPECTED = [(1, "a"), (2, "b2"), (3, "c"), (4, "d")]


@pytest.mark.parametrize(("action", "options"), [("drop", DV), ("fail_after", POSTPONE)],
                         ids=["deletion vectors-drop", "postpone-fail_after"])
def test_lost_response_of_a_compaction_commit_lands_once(faulty_s3, action, options):
    wh, opts, proxy = faulty_s3
    t = _table(wh, opts, options)
    sid = t.snapshot_manager.latest_id() + 1
    proxy.add(Fault(action, path=rf"/snapshot/snapshot-{sid}$"))
    result = t.compact(full=options is DV)  # a postpone compaction is the kind's own
    assert result.snapshot_id == sid
    assert any(r[2] == action for r in proxy.requests)  # the fault fired
    fresh = Catalog(wh, **opts).get_table("db.t")
    assert [(s.id, s.commit_kind) for s in fresh.snapshots()][-1] == (sid, CommitKind.COMPACT)
    assert fresh.snapshot_manager.latest_id() == sid  # not committed again as the next one
    assert _rows(fresh) == EXPECTED
    _intact(wh, opts)


@pytest.mark.parametrize("action", ["fail_after"])  # drop: the full compaction above
def test_lost_response_of_a_dv_writes_compaction_lands_once(faulty_s3, action):
    """A DV table's write compacts its level-0 files at once: an APPEND, then a COMPACT snapshot
    whose index manifest names the deletion vectors it wrote."""
    wh, opts, proxy = faulty_s3
    t = _table(wh, opts, DV, rounds=1)
    sid = t.snapshot_manager.latest_id() + 2
    proxy.add(Fault(action, path=rf"/snapshot/snapshot-{sid}$"))
    t.write_arrow(ROUND2)
    assert any(r[2] == action for r in proxy.requests)
    fresh = Catalog(wh, **opts).get_table("db.t")
    last = fresh.snapshot_manager.latest()
    assert (last.id, last.commit_kind) == (sid, CommitKind.COMPACT) and last.index_manifest
    assert _rows(fresh) == EXPECTED
    _intact(wh, opts)


@pytest.mark.parametrize("kind", ["deletion vectors", "postpone"])
def test_unanswered_compaction_commit_is_state_unknown_and_deletes_nothing(faulty_s3, kind):
    wh, opts, proxy = faulty_s3
    opts = {**opts, **FAIL_FAST}
    dv = kind == "deletion vectors"
    t = _table(wh, opts, DV if dv else POSTPONE, rounds=1 if dv else 2)
    before = _listing(t)
    if dv:  # the write's COMPACT snapshot (its vectors) after its APPEND
        sid = t.snapshot_manager.latest_id() + 2
        proxy.add(Fault("fail", path=rf"/snapshot/snapshot-{sid}$", times=100))
        with pytest.raises(CommitStateUnknownError, match=f"snapshot {sid}"):
            t.write_arrow(ROUND2)
    else:
        sid = t.snapshot_manager.latest_id() + 1
        proxy.add(Fault("fail", path=rf"/snapshot/snapshot-{sid}$", times=100))
        with pytest.raises(CommitStateUnknownError, match=f"snapshot {sid}"):
            t.compact()  # the postpone files into real buckets
    proxy.clear()
    after = _listing(t)
    assert before <= after  # nothing deleted
    written = after - before
    # the unknown commit's outputs stay: a landed snapshot could name them
    assert any("/bucket-0/data-" in p for p in written)
    assert any("/index/index-" in p for p in written) is dv  # the vectors (a fixed-count postpone table has none)
    fresh = Catalog(wh, **opts).get_table("db.t")
    assert fresh.snapshot_manager.latest_id() == sid - 1
    _intact(wh, opts)
    # the state is known again: a compaction lands it, and the unknown commit's outputs are orphans
    assert fresh.compact().snapshot_id == sid
    assert _rows(Catalog(wh, **opts).get_table("db.t")) == EXPECTED
    removed = fresh.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert set(removed.paths) <= {p.split("://", 1)[-1] for p in written}
    _intact(wh, opts)


# what an expiry sends: a batched delete (DeleteObjects) of data files and manifests, a DELETE per
# snapshot file, a PUT of the EARLIEST hint
EXPIRY_REQUESTS = {
    "batched delete": ("POST", r"\?delete"),
    "snapshot file": ("DELETE", r"/snapshot/snapshot-1$"),
    "earliest hint": ("PUT", r"/snapshot/EARLIEST$"),
}


def _expirable(wh: str, opts: dict):  # type: ignore[no-untyped-def]
    t = _table(wh, opts, DV)
    t.compact(full=True)
    t.create_tag("r1")  # a DV table's level-0 files are read once compacted: tag a compacted snapshot
    t.write_arrow(pa.table({"k": [5], "v": ["e"]}, schema=SCHEMA))
    return t


@pytest.mark.parametrize("action", ["drop"])  # fail_after takes the same retry path (a 5xx answer)
def test_lost_responses_in_an_expiry_are_retried(faulty_s3, action):
    wh, opts, proxy = faulty_s3
    t = _expirable(wh, opts)
    latest = t.snapshot_manager.latest_id()
    faults = [proxy.add(Fault(action, method=method, path=path)) for method, path in EXPIRY_REQUESTS.values()]
    result = t.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))
    assert [f.fired for f in faults] == [1, 1, 1]  # each kind of request lost one answer
    assert result.expired_snapshots == list(range(1, latest))
    fresh = Catalog(wh, **opts).get_table("db.t")
    assert [s.id for s in fresh.snapshots()] == [latest]
    assert not any(fresh.file_io.exists(p) for p in result.deleted_data_files)
    assert _rows(fresh) == [*EXPECTED, (5, "e")]
    assert sorted((r["k"], r["v"]) for r in fresh.to_arrow(tag="r1").to_pylist()) == EXPECTED
    _intact(wh, opts)


@pytest.mark.parametrize("target", ["batched delete", "snapshot file"])  # a hint's write may fail (advisory)
def test_an_expiry_that_fails_midway_keeps_retained_files_and_completes_when_rerun(faulty_s3, target):
    wh, opts, proxy = faulty_s3
    opts = {**opts, **FAIL_FAST}
    t = _expirable(wh, opts)
    latest = t.snapshot_manager.latest_id()
    method, path = EXPIRY_REQUESTS[target]
    proxy.add(Fault("fail", method=method, path=path, times=100))
    with pytest.raises(OSError):
        t.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))
    proxy.clear()
    fresh = Catalog(wh, **opts).get_table("db.t")
    inv = TableInvariants(fresh)
    kept = [h for h in inv.holders() if h.kind == "tag" or h.snapshot.id == latest]
    assert inv.files_present(kept) == [] and inv.reads_fully(kept) == []
    # run again: it completes, and what it left behind is gone
    again = fresh.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))
    assert latest not in again.expired_snapshots
    done = Catalog(wh, **opts).get_table("db.t")
    assert [s.id for s in done.snapshots()] == [latest]
    assert _rows(done) == [*EXPECTED, (5, "e")]
    _intact(wh, opts)


@pytest.mark.parametrize("action", ["drop", "fail"])
def test_orphan_removal_with_lost_or_failed_deletes(faulty_s3, action):
    wh, opts, proxy = faulty_s3
    opts = {**opts, **FAIL_FAST} if action == "fail" else opts
    t = _table(wh, opts, DV)
    orphans = [f"{t.paths.root}/bucket-0/data-orphan-{i}.parquet" for i in range(3)]
    for p in orphans:
        t.file_io.write_bytes(p, b"unreferenced")
    referenced = _listing(t) - {p.split("://", 1)[-1] for p in orphans}
    proxy.add(Fault(action, method="POST", path=r"\?delete", times=100 if action == "fail" else 1))
    proxy.add(Fault(action, method="DELETE", path=r"/data-orphan-", times=100 if action == "fail" else 1))
    if action == "fail":
        with pytest.raises(OSError):
            t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
        proxy.clear()
    else:
        t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
        assert any(r[2] == action for r in proxy.requests)
    assert referenced <= _listing(t)  # no referenced file went, whatever the answers were
    _intact(wh, opts)
    # (run again after a failure) the orphans are gone and a dry run finds nothing
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert not any(t.file_io.exists(p) for p in orphans)
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=True, allow_recent=True).paths == []
    assert _rows(Catalog(wh, **opts).get_table("db.t")) == EXPECTED
