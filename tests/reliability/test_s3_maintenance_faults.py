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


@pytest.mark.parametrize("action", ["fail_after"])  # drop: the compactions below
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
    """A compaction commit that never lands is unknown to its client; the one run once the state
    is known loses its answer and still lands once."""
    wh, base_opts, proxy = faulty_s3
    opts = {**base_opts, **FAIL_FAST}
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
    # the state is known again: a compaction lands it though its answer is lost (found by looking:
    # one snapshot, not two), and the unknown commit's outputs are orphans
    proxy.add(Fault("drop", path=rf"/snapshot/snapshot-{sid}$"))
    fresh = Catalog(wh, **base_opts).get_table("db.t")
    assert fresh.compact().snapshot_id == sid
    assert proxy.faults[0].fired == 1
    after_compaction = Catalog(wh, **opts).get_table("db.t")
    assert after_compaction.snapshot_manager.latest_id() == sid
    assert after_compaction.snapshot_manager.latest().commit_kind == CommitKind.COMPACT
    assert _rows(after_compaction) == EXPECTED
    proxy.clear()
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


def test_an_expiry_that_fails_midway_keeps_retained_files_and_completes_with_lost_answers(faulty_s3):
    """An expiry fails at its batched delete, run again it fails at a snapshot file's delete; each
    time the latest snapshot and the tag keep every file. The third run loses one answer of each
    kind of request (landed all the same) and completes."""
    wh, base_opts, proxy = faulty_s3
    opts = {**base_opts, **FAIL_FAST}
    t = _expirable(wh, opts)
    latest = t.snapshot_manager.latest_id()
    expire = {"retain_min": 1, "older_than": datetime.now() + timedelta(days=1)}
    for target in ("batched delete", "snapshot file"):
        method, path = EXPIRY_REQUESTS[target]
        proxy.add(Fault("fail", method=method, path=path, times=100))
        with pytest.raises(OSError):
            t.expire_snapshots(**expire)
        assert proxy.faults[0].fired
        proxy.clear()
        inv = TableInvariants(Catalog(wh, **opts).get_table("db.t"))
        kept = [h for h in inv.holders() if h.kind == "tag" or h.snapshot.id == latest]
        assert inv.files_present(kept) == [] and inv.reads_fully(kept) == [], target
    faults = [proxy.add(Fault("drop", method=method, path=path)) for method, path in EXPIRY_REQUESTS.values()]
    fresh = Catalog(wh, **base_opts).get_table("db.t")
    result = fresh.expire_snapshots(**expire)
    assert [f.fired for f in faults] == [1, 1, 1]  # each kind of request lost one answer
    assert latest not in result.expired_snapshots
    assert not any(fresh.file_io.exists(p) for p in result.deleted_data_files)
    done = Catalog(wh, **base_opts).get_table("db.t")
    assert [s.id for s in done.snapshots()] == [latest]
    assert _rows(done) == [*EXPECTED, (5, "e")]
    assert sorted((r["k"], r["v"]) for r in done.to_arrow(tag="r1").to_pylist()) == EXPECTED
    _intact(wh, base_opts)


def test_orphan_removal_with_failed_then_lost_deletes(faulty_s3):
    """A removal whose deletes fail raises and deletes no referenced file; run again, its deletes'
    answers are lost (landed all the same): the orphans are gone, nothing else."""
    wh, base_opts, proxy = faulty_s3
    opts = {**base_opts, **FAIL_FAST}
    t = _table(wh, opts, DV)
    orphans = [f"{t.paths.root}/bucket-0/data-orphan-{i}.parquet" for i in range(3)]
    for p in orphans:
        t.file_io.write_bytes(p, b"unreferenced")
    referenced = _listing(t) - {p.split("://", 1)[-1] for p in orphans}
    for method, path in (("POST", r"\?delete"), ("DELETE", r"/data-orphan-")):
        proxy.add(Fault("fail", method=method, path=path, times=100))
    with pytest.raises(OSError):
        t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    proxy.clear()
    assert referenced <= _listing(t)
    faults = [proxy.add(Fault("drop", method=method, path=path))
              for method, path in (("POST", r"\?delete"), ("DELETE", r"/data-orphan-"))]
    fresh = Catalog(wh, **base_opts).get_table("db.t")
    fresh.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert any(f.fired for f in faults)
    proxy.clear()
    assert not any(fresh.file_io.exists(p) for p in orphans)
    assert referenced <= _listing(fresh)
    assert fresh.remove_orphan_files(older_than=timedelta(0), dry_run=True, allow_recent=True).paths == []
    assert _rows(Catalog(wh, **opts).get_table("db.t")) == EXPECTED
    _intact(wh, opts)
