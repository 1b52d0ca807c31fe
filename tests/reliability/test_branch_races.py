"""Races between processes on a table with branches.

One side runs in its own process (`branch_crash_worker`), stopped at a named step of its commit
(its files written, its snapshot not yet) until the test, in this process, has run the other
side: main's expiry, tag deletion, compaction and orphan removal, or a second writer of the same
branch. Then the first goes on. Nothing any branch's snapshot or tag or the in-flight writer
names may be gone; a loser fails cleanly (`CommitConflictError`) and leaves a readable table.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError, NoSuchTableError
from lake_assets.table import Table
from tests.reliability.crash_run import run_crash_worker

WORKER = Path(__file__).with_name("branch_crash_worker.py")
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
_ALL = datetime.now() + timedelta(days=1)  # every snapshot is old enough to expire
State = dict[int, int]


def _batch(ks: range, v: int) -> dict[str, list[int]]:
    return {"k": list(ks), "v": [v] * len(ks)}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Main: snapshots 1-3 (tag ``t1`` on 1, ``t3`` on 3); branch ``b1`` from ``t1`` with
    snapshots 2-3 of its own (tag ``bt`` on 2)."""
    wh = tmp_path_factory.mktemp("branch_race") / "wh"
    cat = Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    t.write_arrow(pa.table(_batch(range(0, 6), 0), schema=SCHEMA))
    t.create_tag("t1")
    t.create_branch("b1", "t1")
    t.write_arrow(pa.table(_batch(range(3, 9), 1), schema=SCHEMA))
    t.write_arrow(pa.table(_batch(range(0, 2), 2), schema=SCHEMA))
    t.create_tag("t3")
    b = cat.get_table("db.t$branch_b1")
    b.write_arrow(pa.table(_batch(range(6, 12), 3), schema=SCHEMA))
    b.create_tag("bt")
    b.write_arrow(pa.table(_batch(range(0, 3), 4), schema=SCHEMA))
    return wh


@pytest.fixture
def wh(tmp_path: Path, template: Path) -> Path:
    out = tmp_path / "wh"
    shutil.copytree(template, out, symlinks=True)
    return out


def _state(t: Table, **kw: object) -> State:
    rows = t.to_arrow(**kw).to_pylist()
    out = {r["k"]: r["v"] for r in rows}
    assert len(out) == len(rows), f"{t.name}: a key appears twice"
    return out


def _handles(wh: Path) -> dict[str, Table]:
    cat = Catalog(str(wh))
    main = cat.get_table("db.t")
    return {"main": main, **{b.name: cat.get_table(f"db.t$branch_{b.name}") for b in main.store.branches()}}


def _every_holder_reads(wh: Path) -> None:
    """Every snapshot and tag of main and of every branch reads in full; then main's orphan removal
    (of files of any age) keeps all of them too."""
    for _ in range(2):
        for t in _handles(wh).values():
            for s in t.snapshots():
                _state(t, snapshot_id=s.id)
            for name in t.tags():
                _state(t, tag=name)
        _handles(wh)["main"].remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)


class Paused:
    """``op`` in its own process, stopped at ``point`` until `go`."""

    def __init__(self, wh: Path, op: str, point: str, params: dict[str, Any]) -> None:
        self.gate = wh.parent / f"gate-{op}"
        self.gate.mkdir()
        argv = [str(wh), op, "0", json.dumps({**params, "pause_at": point, "gate": str(self.gate)})]
        self.result: tuple[int, str, str] | None = None
        self.thread = threading.Thread(target=self._run, args=(argv,))
        self.thread.start()
        deadline = time.monotonic() + 120
        while not (self.gate / "reached").exists():
            assert self.thread.is_alive() or self.result is None, f"{op} ended before {point}: {self.result}"
            assert time.monotonic() < deadline, f"{op} did not reach {point}"
            time.sleep(0.02)

    def _run(self, argv: list[str]) -> None:
        self.result = run_crash_worker(argv, script=WORKER)

    def go(self) -> tuple[int, str, str]:
        (self.gate / "go").touch()
        self.thread.join(180)
        assert self.result is not None
        return self.result


def test_main_maintenance_while_a_branch_commit_is_in_flight(wh: Path) -> None:
    h = _handles(wh)
    b0 = _state(h["b1"])
    data = _batch(range(20, 24), 9)
    writer = Paused(wh, "write", "commit.before_snapshot", {"user": "u", "identifier": 1, "data": data})
    main = h["main"]
    main.compact(full=True)
    main.expire_snapshots(retain_min=1, retain_max=1, older_than=_ALL)
    main.delete_tag("t3")
    with pytest.raises(InvalidArgumentError, match="branch 'b1' was created from it"):
        main.delete_tag("t1")
    main.remove_orphan_files()  # the in-flight writer's files are recent: kept
    rc, _, err = writer.go()
    assert rc == 0, err[-3000:]
    assert _state(_handles(wh)["b1"]) == {**b0, **dict.fromkeys(range(20, 24), 9)}
    _every_holder_reads(wh)


def test_two_compactions_of_one_branch(wh: Path) -> None:
    h = _handles(wh)
    b0 = _state(h["b1"])
    loser = Paused(wh, "compact", "compact.before_commit", {})
    h["b1"].compact(full=True)
    rc, _, err = loser.go()
    assert rc == 1 and "CommitConflictError" in err, err[-3000:]
    b = _handles(wh)["b1"]
    assert _state(b) == b0 and [s.commit_kind for s in b.snapshots()][-1] == "COMPACT"
    assert sum(s.commit_kind == "COMPACT" for s in b.snapshots()) == 1
    _every_holder_reads(wh)


def test_two_writers_of_one_branch(wh: Path) -> None:
    h = _handles(wh)
    b0 = _state(h["b1"])
    params = {"user": "a", "identifier": 1, "data": _batch(range(20, 22), 7)}
    first = Paused(wh, "write", "commit.before_snapshot", params)
    h["b1"].write_arrow(pa.table(_batch(range(21, 23), 8), schema=SCHEMA))
    rc, _, err = first.go()
    assert rc == 0, err[-3000:]
    b = _handles(wh)["b1"]
    # both land, the paused one on the next id, so its rows are the newer ones
    assert [s.id for s in b.snapshots()] == [1, 2, 3, 4, 5]
    assert _state(b) == {**b0, 20: 7, 21: 7, 22: 8}
    _every_holder_reads(wh)


def test_main_maintenance_while_fast_forward_runs(wh: Path) -> None:
    h = _handles(wh)
    b0 = _state(h["b1"])
    ff = Paused(wh, "fast_forward", "fast_forward.after_snapshot_delete", {})
    main = h["main"]
    main.expire_snapshots(retain_min=1, retain_max=1, older_than=_ALL)
    main.remove_orphan_files()
    rc, _, err = ff.go()
    assert rc == 0, err[-3000:]
    h = _handles(wh)
    assert _state(h["main"]) == b0 and set(h["main"].tags()) == {"t1", "bt"}
    _every_holder_reads(wh)


def test_a_branch_commit_while_fast_forward_runs(wh: Path) -> None:
    h = _handles(wh)
    b0 = _state(h["b1"])
    ff = Paused(wh, "fast_forward", "fast_forward.after_snapshot_copy", {})
    h["b1"].write_arrow(pa.table(_batch(range(30, 32), 5), schema=SCHEMA))
    rc, _, err = ff.go()
    assert rc == 0, err[-3000:]
    h = _handles(wh)
    # main took the branch's history as it read it; the branch goes on with its new commit
    assert _state(h["main"]) == b0
    assert _state(h["b1"]) == {**b0, 30: 5, 31: 5}
    _every_holder_reads(wh)


def test_delete_branch_while_a_branch_reader_streams(wh: Path) -> None:
    h = _handles(wh)
    b = h["b1"]
    b0 = _state(b)
    stream = b.stream(mode="latest-full", consumer_id="c1")
    reader = stream.change_reader()
    first = stream.poll(1)
    h["main"].delete_branch("b1")
    got = [r for batch in first for s in batch.splits for r in reader.read(s).to_pylist()]
    assert {r["k"]: r["v"] for r in got} == b0  # its planned files are orphans now, still there
    # the stream stops, naming it, and writes nothing into the deleted branch's directory
    with pytest.raises(NoSuchTableError, match=r"db\.t\$branch_b1: the branch was deleted"):
        stream.poll(5)
    with pytest.raises(NoSuchTableError, match=r"db\.t\$branch_b1: the branch was deleted"):
        stream.commit()
    main = _handles(wh)["main"]
    assert main.branches() == []
    main.create_branch("b1")  # the name is free again
    _every_holder_reads(wh)
