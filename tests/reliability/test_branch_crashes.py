"""SIGKILL a real process before every change to storage of each branch operation.

`branch_crash_worker` kills itself right before its Nth change to the store (a file written,
created, replaced or deleted, a directory removed); each test walks N = 1, 2, ... until the
operation completes. After each kill: the main branch and every branch read a committed state
(one of those the operation passes through), every snapshot and tag of every branch reads in
full, running the operation again finishes it, and the main branch's orphan removal afterwards
deletes nothing any branch's snapshot or tag names.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import SnapshotNotFoundError
from lake_assets.table import Table
from tests.differential.helpers import assert_same_rows
from tests.java.oracle import PaimonJava
from tests.reliability.branch_crash_worker import run
from tests.reliability.crash_run import run_crash_worker

WORKER = Path(__file__).with_name("branch_crash_worker.py")
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
State = dict[int, int]


def _batch(ks: range, v: int) -> dict[str, list[int]]:
    return {"k": list(ks), "v": [v] * len(ks)}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Main: snapshots 1-2 (tag ``t1`` on 2); branch ``b1`` from ``t1`` with snapshots 2-4 (tag
    ``bt`` on 3, ``bt4`` on 4)."""
    wh = tmp_path_factory.mktemp("branch_crash") / "wh"
    cat = Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table(_batch(range(0, 6), 0), schema=SCHEMA))
    t.write_arrow(pa.table(_batch(range(3, 9), 1), schema=SCHEMA))
    t.create_tag("t1")
    t.create_branch("b1", "t1")
    b = cat.get_table("db.t$branch_b1")
    b.write_arrow(pa.table(_batch(range(6, 12), 2), schema=SCHEMA))
    b.create_tag("bt")
    b.write_arrow(pa.table(_batch(range(0, 3), 3), schema=SCHEMA))
    b.create_tag("bt4")
    return wh


def _state(t: Table, **kw: object) -> State:
    rows = t.to_arrow(**kw).to_pylist()
    out = {r["k"]: r["v"] for r in rows}
    assert len(out) == len(rows), f"{t.name}: a key appears twice"
    return out


def _handles(wh: Path) -> dict[str, Table]:
    cat = Catalog(str(wh))
    main = cat.get_table("db.t")
    # the branches maintenance sees (a damaged one raises); one a crash left empty is not among them
    return {"main": main, **{b.name: cat.get_table(f"db.t$branch_{b.name}") for b in main.store.branches()}}


def _history(t: Table) -> list[State]:
    """The states of every snapshot of ``t`` (and the empty state)."""
    return [{}, *(_state(t, snapshot_id=s.id) for s in t.snapshots())]


def _every_holder_reads(wh: Path) -> None:
    for t in _handles(wh).values():
        for s in t.snapshots():
            _state(t, snapshot_id=s.id)
        for name in t.tags():
            _state(t, tag=name)


def _orphans_keep_every_branch(wh: Path) -> None:
    _handles(wh)["main"].remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    _every_holder_reads(wh)


def _walk(tmp_path: Path, template: Path, op: str, params: dict[str, object],
          check_crashed: Callable[[Path], None], finish: Callable[[Path], None],
          rerun: Callable[[Path], None] | None = None) -> int:
    """Kill ``op`` before each of its changes in turn (a fresh copy of ``template`` each time);
    after each kill ``check_crashed``, then re-run (``rerun``, default: the same operation) and
    ``finish`` (asserting the end state).
    Returns how many kill points were visited."""
    for kill_at in range(1, 200):
        wh = tmp_path / f"k{kill_at}"
        shutil.copytree(template, wh, symlinks=True)
        rc, out, err = run_crash_worker([str(wh), op, str(kill_at), json.dumps(params)], script=WORKER)
        if rc == 0:
            assert out.strip() == f"steps={kill_at - 1}", out + err
            finish(wh)  # the uninterrupted run's end state passes the same checks
            _orphans_keep_every_branch(wh)
            return kill_at - 1
        assert rc == -9, f"{op} failed before step {kill_at}: rc={rc} {err[-3000:]}"
        check_crashed(wh)
        _every_holder_reads(wh)
        if rerun is None:
            run(str(wh), op, params)
        else:
            rerun(wh)
        finish(wh)
        _orphans_keep_every_branch(wh)
        shutil.rmtree(wh)
    raise AssertionError(f"{op} did not complete within 200 steps")


def test_branch_commit(tmp_path: Path, template: Path) -> None:
    before = _handles(template)
    main0, b0 = _state(before["main"]), _state(before["b1"])
    params = {"user": "u1", "identifier": 9, "data": _batch(range(10, 14), 7)}
    after = {**b0, **dict.fromkeys(range(10, 14), 7)}

    def crashed(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0
        assert _state(h["b1"]) in (b0, after)

    def finish(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0 and _state(h["b1"]) == after
        # exactly once (a commit may add a COMPACT snapshot of its own after its APPEND)
        assert sum(s.commit_user == "u1" and s.commit_kind == "APPEND" for s in h["b1"].snapshots()) == 1

    assert _walk(tmp_path, template, "write", params, crashed, finish) >= 4


def test_branch_compaction(tmp_path: Path, template: Path) -> None:
    h = _handles(template)
    main0, b0 = _state(h["main"]), _state(h["b1"])

    def crashed(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0 and _state(h["b1"]) == b0

    def finish(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0 and _state(h["b1"]) == b0
        assert h["b1"].snapshots()[-1].commit_kind == "COMPACT"

    assert _walk(tmp_path, template, "compact", {}, crashed, finish) >= 3


def test_branch_rollback(tmp_path: Path, template: Path) -> None:
    h = _handles(template)
    main0, history = _state(h["main"]), _history(h["b1"])
    target = _state(h["b1"], snapshot_id=2)

    def crashed(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0 and _state(h["b1"]) in history

    def finish(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0 and _state(h["b1"]) == target
        assert [s.id for s in h["b1"].snapshots()] == [2] and set(h["b1"].tags()) == {"t1"}
        assert set(h["main"].tags()) == {"t1"}

    assert _walk(tmp_path, template, "rollback", {"snapshot_id": 2}, crashed, finish) >= 3


def _expired_branch_tag(tmp_path: Path, template: Path) -> Path:
    """``template`` with branch ``b1``'s snapshots 2-3 expired: its tag ``bt`` alone holds snapshot 3."""
    wh = tmp_path / "template"
    shutil.copytree(template, wh, symlinks=True)
    b = _handles(wh)["b1"]
    b.expire_snapshots(retain_min=1, retain_max=1, older_than=None)
    assert [s.id for s in b.snapshots()] == [4]
    return wh


def test_branch_tag_deletion(tmp_path: Path, template: Path) -> None:
    base = _expired_branch_tag(tmp_path, template)
    h = _handles(base)
    main0, b0 = _state(h["main"]), _state(h["b1"])

    def crashed(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0 and _state(h["b1"]) == b0

    def finish(wh: Path) -> None:
        h = _handles(wh)
        assert "bt" not in h["b1"].tags() and _state(h["b1"]) == b0 and _state(h["main"]) == main0

    def rerun(wh: Path) -> None:
        if "bt" in _handles(wh)["b1"].tags():
            run(str(wh), "delete_tag", {"tag": "bt"})
            return
        # the tag went first: the deletion is done; the files only it held are orphans now
        with pytest.raises(SnapshotNotFoundError, match="has no tag 'bt'"):
            run(str(wh), "delete_tag", {"tag": "bt"})

    assert _walk(tmp_path, base, "delete_tag", {"tag": "bt"}, crashed, finish, rerun) >= 2


def test_branch_alter(tmp_path: Path, template: Path) -> None:
    h = _handles(template)
    main0, b0 = _state(h["main"]), _state(h["b1"])

    def crashed(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0 and _state(h["b1"]) == b0

    def finish(wh: Path) -> None:
        h = _handles(wh)
        assert "extra" in h["b1"].arrow_schema.names and "extra" not in h["main"].arrow_schema.names
        assert _state(h["b1"]) == b0 and _state(h["main"]) == main0

    assert _walk(tmp_path, template, "alter", {"column": "extra"}, crashed, finish) >= 1


def test_branch_expiry(tmp_path: Path, template: Path) -> None:
    h = _handles(template)
    main0, b0 = _state(h["main"]), _state(h["b1"])

    def crashed(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0 and _state(h["b1"]) == b0

    def finish(wh: Path) -> None:
        h = _handles(wh)
        assert [s.id for s in h["b1"].snapshots()] == [4] and set(h["b1"].tags()) == {"t1", "bt", "bt4"}
        assert _state(h["b1"]) == b0 and _state(h["main"]) == main0

    assert _walk(tmp_path, template, "expire", {}, crashed, finish) >= 3


def test_create_branch_from_tag(tmp_path: Path, template: Path) -> None:
    h = _handles(template)
    main0, at_tag = _state(h["main"]), _state(h["main"], tag="t1")

    def crashed(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0
        if "b2" in h:
            assert _state(h["b2"]) in ({}, at_tag)

    def finish(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["b2"]) == at_tag and set(h["b2"].tags()) == {"t1"}

    assert _walk(tmp_path, template, "create_branch", {"branch": "b2", "tag": "t1"}, crashed, finish) >= 3


def test_delete_branch(tmp_path: Path, template: Path) -> None:
    h = _handles(template)
    main0, b0 = _state(h["main"]), _state(h["b1"])

    def crashed(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == main0
        if "b1" in h:
            assert _state(h["b1"]) in _history(h["b1"])
        assert b0

    def finish(wh: Path) -> None:
        h = _handles(wh)
        assert "b1" not in h and _state(h["main"]) == main0

    assert _walk(tmp_path, template, "delete_branch", {}, crashed, finish) >= 3


def test_fast_forward(tmp_path: Path, template: Path) -> None:
    h = _handles(template)
    main_history, b_history = _history(h["main"]), _history(h["b1"])
    b0 = _state(h["b1"])

    def crashed(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) in main_history + b_history and _state(h["b1"]) == b0

    def finish(wh: Path) -> None:
        h = _handles(wh)
        assert _state(h["main"]) == b0 and _state(h["b1"]) == b0
        assert [s.id for s in h["main"].snapshots()] == [1, 2, 3, 4]
        assert set(h["main"].tags()) == {"t1", "bt", "bt4"}

    assert _walk(tmp_path, template, "fast_forward", {}, crashed, finish) >= 5



@pytest.mark.parametrize(("op", "params", "kill_at"), [
    ("write", {"user": "u1", "identifier": 9, "data": _batch(range(10, 14), 7)}, 4),
    ("rollback", {"snapshot_id": 2}, 2),
    ("fast_forward", {}, 4),
    ("delete_branch", {}, 3),
])
def test_java_reads_what_a_crash_and_the_rerun_leave(tmp_path: Path, template: Path, java: PaimonJava,
                                                      op: str, params: dict[str, object], kill_at: int) -> None:
    """Paimon Java 0.9 reads main and every branch as we do, cut short part way and finished."""
    wh = tmp_path / "wh"
    shutil.copytree(template, wh, symlinks=True)
    rc, _, err = run_crash_worker([str(wh), op, str(kill_at), json.dumps(params)], script=WORKER)
    assert rc == -9, err[-3000:]
    for t in _handles(wh).values():
        assert_same_rows(java.read(str(wh), t.name), t.to_arrow())
    run(str(wh), op, params)
    for t in _handles(wh).values():
        assert_same_rows(java.read(str(wh), t.name), t.to_arrow())
