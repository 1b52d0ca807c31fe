"""Branches on a real S3 API (moto behind the fault-injecting proxy): lost and unanswered responses.

A branch commit's snapshot put, a fast-forward's snapshot copies and a branch's creation are
put-if-absent requests like main's commits: a lost response (the retry sees 412 for the object
the first attempt created) is recognised as landed; an unanswered one raises
`CommitStateUnknownError` and deletes nothing a landed commit might reference; running again
finishes the work.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitStateUnknownError
from lake_assets.table import Table
from tests.reliability.fault_proxy import Fault

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
BRANCH_SNAPSHOT = r"/branch/branch-b1/snapshot/snapshot-{}$"


def _rows(t: Table) -> list[tuple[int, str]]:
    return sorted((r["k"], r["v"]) for r in t.to_arrow().to_pylist())


def _batch(ks: list[int], v: str) -> pa.Table:
    return pa.table({"k": ks, "v": [v] * len(ks)}, schema=SCHEMA)


def _main_and_branch(wh: str, opts: dict[str, object]) -> tuple[Table, Table]:
    """Main: snapshots 1-2, tag ``t1`` on 1; branch ``b1`` from ``t1``."""
    cat = Catalog(wh, **opts)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    t.write_arrow(_batch([1, 2], "a"))
    t.create_tag("t1")
    t.write_arrow(_batch([3], "main"))
    t.create_branch("b1", "t1")
    return t, cat.get_table("db.t$branch_b1")


def _holders_read(wh: str, opts: dict[str, object]) -> None:
    """Every snapshot and tag of main and of every branch reads in full (no file it names is gone)."""
    cat = Catalog(wh, **opts)
    main = cat.get_table("db.t")
    for t in [main, *(cat.get_table(f"db.t$branch_{b}") for b in main.branches())]:
        for s in t.snapshots():
            t.to_arrow(snapshot_id=s.id)
        for name in t.tags():
            t.to_arrow(tag=name)


@pytest.mark.parametrize("action", ["drop", "fail_after"])
def test_lost_response_of_a_branch_commit_commits_once(faulty_s3, action: str) -> None:
    wh, opts, proxy = faulty_s3
    _, b = _main_and_branch(wh, opts)
    proxy.add(Fault(action, path=BRANCH_SNAPSHOT.format(2)))
    w = b.new_writer("job-b")
    w.write_arrow(_batch([4], "b"))
    msgs = w.prepare_commit()
    assert b.new_committer("job-b").commit(msgs, 7) == [2]
    assert b.new_committer("job-b").commit(msgs, 7) == []  # replay: a no-op
    assert any(r[0] == "PUT" and r[1].endswith("branch-b1/snapshot/snapshot-2") and r[2] == action
               for r in proxy.requests)
    fresh = Catalog(wh, **opts)
    branch = fresh.get_table("db.t$branch_b1")
    assert [s.id for s in branch.snapshots()] == [1, 2]
    assert _rows(branch) == [(1, "a"), (2, "a"), (4, "b")]
    assert [s.id for s in fresh.get_table("db.t").snapshots()] == [1, 2]  # main untouched
    _holders_read(wh, opts)


def test_unanswered_branch_commit_is_state_unknown_and_deletes_nothing(faulty_s3) -> None:
    wh, opts, proxy = faulty_s3
    opts = {**opts, "config_kwargs": {"retries": {"max_attempts": 1}}}  # fail fast: no backoff
    main, b = _main_and_branch(wh, opts)
    proxy.add(Fault("fail", method="PUT", path=BRANCH_SNAPSHOT.format(2), times=100))
    w = b.new_writer("job-b")
    w.write_arrow(_batch([4], "b"))
    msgs = w.prepare_commit()
    with pytest.raises(CommitStateUnknownError, match="snapshot 2"):
        b.new_committer("job-b").commit(msgs, 1)
    proxy.clear()
    # nothing was deleted: main's maintenance meanwhile keeps them too (they are recent), and the
    # retry with the same identifier lands the very same files
    main.expire_snapshots(retain_min=1, retain_max=1)
    main.remove_orphan_files()
    assert all(b.file_io.exists(b.store.data_file_path(m.partition, m.bucket, f)) for m in msgs for f in m.new_files)
    assert b.new_committer("job-b").commit(msgs, 1) == [2]
    assert _rows(Catalog(wh, **opts).get_table("db.t$branch_b1")) == [(1, "a"), (2, "a"), (4, "b")]
    _holders_read(wh, opts)


@pytest.mark.parametrize("action", ["drop", "fail_after"])
def test_lost_response_of_a_fast_forward_copy(faulty_s3, action: str) -> None:
    wh, opts, proxy = faulty_s3
    main, b = _main_and_branch(wh, opts)
    b.write_arrow(_batch([5], "b"))
    b.write_arrow(_batch([6], "b"))
    proxy.add(Fault(action, method="PUT", path=r"/t/snapshot/snapshot-2$"))
    assert main.fast_forward("b1").id == 3
    assert action in [r[2] for r in proxy.requests if r[0] == "PUT" and r[1].endswith("/t/snapshot/snapshot-2")]
    fresh = Catalog(wh, **opts).get_table("db.t")
    assert [s.id for s in fresh.snapshots()] == [1, 2, 3]
    assert _rows(fresh) == [(1, "a"), (2, "a"), (5, "b"), (6, "b")]
    _holders_read(wh, opts)


def test_unanswered_fast_forward_copy_stops_and_runs_again(faulty_s3) -> None:
    wh, opts, proxy = faulty_s3
    opts = {**opts, "config_kwargs": {"retries": {"max_attempts": 1}}}
    main, b = _main_and_branch(wh, opts)
    b.write_arrow(_batch([5], "b"))
    b.write_arrow(_batch([6], "b"))
    proxy.add(Fault("fail", method="PUT", path=r"/t/snapshot/snapshot-3$", times=100))
    with pytest.raises(CommitStateUnknownError):
        main.fast_forward("b1")
    proxy.clear()
    # cut short: main reads one of its states or the branch's, every holder reads, and it runs again
    cut = Catalog(wh, **opts).get_table("db.t")
    assert _rows(cut) in ([(1, "a"), (2, "a")], [(1, "a"), (2, "a"), (5, "b")])
    _holders_read(wh, opts)
    assert main.fast_forward("b1").id == 3
    assert _rows(Catalog(wh, **opts).get_table("db.t")) == [(1, "a"), (2, "a"), (5, "b"), (6, "b")]
    _holders_read(wh, opts)


def test_lost_response_while_creating_a_branch(faulty_s3) -> None:
    wh, opts, proxy = faulty_s3
    action = "drop"
    main, _ = _main_and_branch(wh, opts)
    proxy.add(Fault(action, method="PUT", path=r"/branch/branch-b2/snapshot/snapshot-1$"))
    main.create_branch("b2", "t1")
    assert any(r[2] == action for r in proxy.requests if r[1].endswith("branch-b2/snapshot/snapshot-1"))
    b2 = Catalog(wh, **opts).get_table("db.t$branch_b2")
    assert _rows(b2) == [(1, "a"), (2, "a")] and set(b2.tags()) == {"t1"}


def test_unanswered_put_while_creating_a_branch_runs_again(faulty_s3) -> None:
    wh, opts, proxy = faulty_s3
    opts = {**opts, "config_kwargs": {"retries": {"max_attempts": 1}}}
    main, _ = _main_and_branch(wh, opts)
    proxy.add(Fault("fail", method="PUT", path=r"/branch/branch-b2/tag/tag-t1$", times=100))
    with pytest.raises(CommitStateUnknownError):
        main.create_branch("b2", "t1")
    proxy.clear()
    _holders_read(wh, opts)
    main.create_branch("b2", "t1")  # finishes what the cut-short create left
    b2 = Catalog(wh, **opts).get_table("db.t$branch_b2")
    assert _rows(b2) == [(1, "a"), (2, "a")] and set(b2.tags()) == {"t1"}


def test_delete_branch_on_s3(faulty_s3) -> None:
    wh, opts, proxy = faulty_s3
    main, b = _main_and_branch(wh, opts)
    b.write_arrow(_batch([5], "b"))
    b.create_tag("bt")
    proxy.add(Fault("fail", method="DELETE", path=r"/branch/branch-b1/schema/", times=100))
    proxy.add(Fault("fail", method="POST", path=r".*", times=100))  # batch deletes too
    main = Catalog(wh, **{**opts, "config_kwargs": {"retries": {"max_attempts": 1}}}).get_table("db.t")
    with pytest.raises(Exception):  # noqa: B017 - the store's own error: the point is what is left
        main.delete_branch("b1")
    proxy.clear()
    # the branch left part way still has its schema: it is listed and maintenance runs
    assert [x.name for x in Catalog(wh, **opts).get_table("db.t").store.branches()] == ["b1"]
    _holders_read(wh, opts)
    main.expire_snapshots(retain_min=1, retain_max=1)
    main.delete_branch("b1")
    assert Catalog(wh, **opts).get_table("db.t").branches() == []
