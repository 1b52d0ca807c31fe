"""SIGKILL (and SIGINT, Ctrl-C) a process at every step of commits and maintenance; the table must
stay consistent.

After each kill: the table opens and reads at a consistent snapshot; re-running the same work with
the same commit identifier leaves every row exactly once; orphan removal then finds and removes
only dead files; an interrupted expiration completes when re-run.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.reliability.crash_run import run_crash_worker

COVERED: list[str] = []
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])


def _kill_at(warehouse: str, op: str, point: str, params: dict, occurrence: int = 1, sig: str = "KILL") -> None:
    # a real process (forked from a server that imported lake_assets once) that signals itself at `point`
    rc, _, stderr = run_crash_worker([warehouse, "db.t", op, point, str(occurrence), json.dumps(params), sig])
    if sig == "KILL":
        assert rc == -9, f"{op} did not die at {point}: rc={rc} {stderr[-2000:]}"
    else:
        # an uncaught KeyboardInterrupt ends Python with SIGINT; nothing may have swallowed it
        assert rc == -2 and "KeyboardInterrupt" in stderr, (
            f"{op} was not interrupted at {point}: rc={rc} {stderr[-2000:]}"
        )
    COVERED.append(f"{op}:{point}:{sig}")


def _setup(tmp_path, **opts: str):
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "2", "rowkind.field": "op", "write-only": "true", **opts})
    return wh, t


def _batch(ks, v):
    return {"k": list(ks), "v": [v] * len(ks), "op": ["+I"] * len(ks)}


def _state(t, **kw) -> dict:
    got = t.to_arrow(**kw).to_pylist()
    state = {r["k"]: r["v"] for r in got}
    assert len(state) == len(got), "a key appears twice"
    return state


def _every_snapshot_reads(t) -> None:
    for s in t.snapshots():
        _state(t, snapshot_id=s.id)
    for name in t.tags():
        _state(t, tag=name)


def _orphans_only_dead(t, expected: dict) -> None:
    referenced_before = {
        t.store.data_file_path(e.partition, e.bucket, e.file)
        for s in t.snapshots() for e in t.store.file_store_scan().live_entries(s)
    }
    removed = t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths
    assert not (set(removed) & referenced_before)
    assert _state(t) == expected
    _every_snapshot_reads(t)


WRITE_POINTS = [
    "write.after_data_files",
    "commit.after_manifests",
    "commit.after_base_list",
    "commit.after_delta_list",
    "commit.before_snapshot",
    "commit.after_snapshot",
]


@pytest.mark.parametrize("sig", ["KILL", "INT"])
@pytest.mark.parametrize("point", WRITE_POINTS)
def test_kill_during_write_commit(tmp_path, point, sig):
    wh, t = _setup(tmp_path)
    t.write_arrow(pa.table(_batch(range(10), 0), schema=SCHEMA))
    before = _state(t)
    params = {"user": "ingest-1", "identifier": 7, "data": _batch(range(5, 15), 1)}
    _kill_at(wh, "write", point, params, sig=sig)
    t = Catalog(wh).get_table("db.t")
    after_kill = _state(t)
    expected = {**before, **dict.fromkeys(range(5, 15), 1)}
    landed = point == "commit.after_snapshot"
    assert after_kill == (expected if landed else before)
    _every_snapshot_reads(t)
    # the retry (same user and identifier) lands exactly once
    w = t.new_writer("ingest-1")
    w.write_arrow(pa.table(params["data"], schema=SCHEMA))
    msgs = w.prepare_commit()
    ids = t.new_committer("ingest-1").commit(msgs, 7)
    assert bool(ids) != landed
    if not ids:
        t.new_committer("ingest-1").abort(msgs)
    assert _state(t) == expected
    assert sum(s.commit_user == "ingest-1" for s in t.snapshots()) == 1
    _orphans_only_dead(t, expected)


COMPACT_POINTS = [("compact.before_commit", 1), ("commit.after_manifests", 1), ("commit.after_base_list", 1),
                  ("commit.after_delta_list", 1), ("commit.before_snapshot", 1), ("commit.after_snapshot", 1)]


@pytest.mark.parametrize("sig", ["KILL", "INT"])
@pytest.mark.parametrize(("point", "occurrence"), COMPACT_POINTS)
def test_kill_during_compaction(tmp_path, point, occurrence, sig):
    wh, t = _setup(tmp_path)
    for i in range(5):
        t.write_arrow(pa.table(_batch(range(i, i + 20), i), schema=SCHEMA))
    expected = _state(t)
    _kill_at(wh, "compact", point, {"full": True}, occurrence, sig)
    t = Catalog(wh).get_table("db.t")
    assert _state(t) == expected
    _every_snapshot_reads(t)
    t.compact(full=True)  # re-run completes (or finds nothing left to do)
    assert _state(t) == expected
    assert all(f.level == 5 for sp in t.plan() for f in sp.files)
    _orphans_only_dead(t, expected)


# write_arrow without write-only commits an APPEND, then the inline compaction's COMPACT snapshot
ARROW_POINTS = [("write.after_data_files", 1), ("commit.after_snapshot", 1), ("commit.after_manifests", 2),
                ("commit.before_snapshot", 2), ("commit.after_snapshot", 2)]


@pytest.mark.parametrize("sig", ["KILL", "INT"])
@pytest.mark.parametrize(("point", "occurrence"), ARROW_POINTS)
def test_interrupt_during_write_arrow(tmp_path, point, occurrence, sig):
    wh, t = _setup(tmp_path, **{"write-only": "false", "num-sorted-run.compaction-trigger": "2"})
    t.write_arrow(pa.table(_batch(range(10), 0), schema=SCHEMA))
    before = _state(t)
    data = _batch(range(5, 15), 1)
    _kill_at(wh, "write_arrow", point, {"data": data}, occurrence, sig)
    t = Catalog(wh).get_table("db.t")
    landed = point != "write.after_data_files" and (occurrence == 2 or point == "commit.after_snapshot")
    expected = {**before, **dict.fromkeys(range(5, 15), 1)} if landed else before
    assert _state(t) == expected  # the APPEND that landed is intact: its files were not "aborted"
    _every_snapshot_reads(t)
    _orphans_only_dead(t, expected)
    t.compact(full=True)
    assert _state(t) == expected


EXPIRE_POINTS = [("expire.after_data", 1), ("expire.after_changelog", 1), ("expire.after_manifests", 1),
                 ("expire.after_snapshot_file", 1), ("expire.after_snapshot_file", 3)]


@pytest.mark.parametrize("sig", ["KILL", "INT"])
@pytest.mark.parametrize(("point", "occurrence"), EXPIRE_POINTS)
def test_kill_during_expiration(tmp_path, point, occurrence, sig):
    wh, t = _setup(tmp_path)
    for i in range(8):
        t.write_arrow(pa.table(_batch(range(10), i), schema=SCHEMA))
    expected = _state(t)
    _kill_at(wh, "expire", point, {"retain_min": 2}, occurrence, sig)
    t = Catalog(wh).get_table("db.t")
    assert _state(t) == expected
    # re-running the expiration completes it: only the two newest snapshots remain, all readable
    t.expire_snapshots(retain_min=2, older_than=datetime.now() + timedelta(days=1))
    assert [s.id for s in t.snapshots()] == [7, 8]
    _every_snapshot_reads(t)
    _orphans_only_dead(t, expected)


DECOUPLED_POINTS = [("expire.after_manifests", 1), ("expire.after_changelog_copy", 1),
                    ("expire.after_changelog_copy", 3), ("expire.after_snapshot_file", 2)]


def _decoupled_table(tmp_path):
    wh, t = _setup(tmp_path, **{"changelog-producer": "input", "changelog.num-retained.min": "20"})
    for i in range(8):
        t.write_arrow(pa.table({"k": list(range(10)), "v": [i] * 10, "op": ["+U"] * 10}, schema=SCHEMA))
    return wh, t


@pytest.mark.parametrize(("point", "occurrence"), DECOUPLED_POINTS)
def test_kill_during_decoupled_expiration(tmp_path, point, occurrence):
    wh, t = _decoupled_table(tmp_path)
    expected, changes = _state(t), t.read_changes(0).to_pylist()
    _kill_at(wh, "expire", point, {"retain_min": 2}, occurrence)
    t = Catalog(wh).get_table("db.t")
    assert _state(t) == expected
    assert t.read_changes(0).to_pylist() == changes  # from snapshots or their changelog copies
    t.expire_snapshots(retain_min=2, older_than=datetime.now() + timedelta(days=1))
    assert [s.id for s in t.snapshots()] == [7, 8]
    assert t.store.changelog_manager().ids() == list(range(1, 7))
    assert t.read_changes(0).to_pylist() == changes
    _orphans_only_dead(t, expected)
    assert t.read_changes(0).to_pylist() == changes


@pytest.mark.parametrize("point", ["expire_changelog.after_files", "expire_changelog.after_manifests"])
def test_kill_during_changelog_expiration(tmp_path, point):
    wh, t = _decoupled_table(tmp_path)
    expected, changes = _state(t), t.read_changes(0).to_pylist()
    t.expire_snapshots(retain_min=2, older_than=datetime.now() + timedelta(days=1))
    _kill_at(wh, "expire_changelogs", point, {"retain_max": 4})
    t = Catalog(wh).get_table("db.t")
    assert _state(t) == expected
    later = t.read_changes(4).to_pylist()
    assert later == [r for r in changes if r["v"] >= 4]
    from lake_assets.ops.expire import expire_changelogs

    expire_changelogs(t.store, retain_min=1, retain_max=4, older_than_ms=0)
    assert t.store.changelog_manager().ids() == [5, 6]
    assert t.read_changes(4).to_pylist() == later
    _orphans_only_dead(t, expected)
    assert t.read_changes(4).to_pylist() == later


@pytest.mark.parametrize("sig", ["KILL", "INT"])
def test_kill_after_tag_creation(tmp_path, sig):
    wh, t = _setup(tmp_path)
    t.write_arrow(pa.table(_batch(range(5), 1), schema=SCHEMA))
    _kill_at(wh, "tag", "tag.after_create", {"name": "release"}, sig=sig)
    t = Catalog(wh).get_table("db.t")
    assert _state(t, tag="release") == _state(t)
    _orphans_only_dead(t, _state(t))


@pytest.mark.parametrize("sig", ["KILL", "INT"])
def test_kill_during_rollback(tmp_path, sig):
    wh, t = _setup(tmp_path)
    states = {}
    for i in range(5):
        sid = t.write_arrow(pa.table(_batch([i], i), schema=SCHEMA))
        states[sid] = _state(t)
    _kill_at(wh, "rollback", "rollback.after_snapshot_delete", {"snapshot_id": 2}, occurrence=2, sig=sig)
    t = Catalog(wh).get_table("db.t")
    latest = t.latest_snapshot().id
    assert latest in (2, 3, 4)
    assert _state(t) == states[latest]  # a consistent earlier state, never a torn one
    t.rollback_to(snapshot_id=2)
    assert _state(t) == states[2]
    _orphans_only_dead(t, states[2])


@pytest.mark.parametrize("sig", ["KILL", "INT"])
def test_kill_during_orphan_removal(tmp_path, sig):
    wh, t = _setup(tmp_path)
    t.write_arrow(pa.table(_batch(range(10), 1), schema=SCHEMA))
    # leave lots of dead files behind: aborted writers
    for i in range(150):
        w = t.new_writer(f"dead-{i}")
        w.write_arrow(pa.table(_batch([i], i), schema=SCHEMA))
        w.prepare_commit()  # never committed
    expected = _state(t)
    _kill_at(wh, "orphans", "orphans.after_delete_batch", {}, sig=sig)
    t = Catalog(wh).get_table("db.t")
    assert _state(t) == expected
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths  # the rest
    assert t.remove_orphan_files(older_than=timedelta(0)).paths == []
    assert _state(t) == expected


PROBE = """
import json, os, signal, sys, lake_assets
print(json.dumps({"pid": os.getpid(), "lake_assets": lake_assets.__file__, "path0": sys.path[0],
                  "env": os.environ.get("PYTHONPATH")}), flush=True)
os.kill(os.getpid(), signal.SIGINT if sys.argv[1] == "INT" else signal.SIGKILL)
"""


@pytest.mark.parametrize("sig", ["KILL", "INT"])
def test_the_worker_is_its_own_process_of_this_repository(tmp_path, sig):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    rc, out, err = run_crash_worker([sig], script=probe)
    seen = json.loads(out)
    repo = str(Path(__file__).resolve().parents[2])
    assert seen["pid"] != os.getpid() and seen["path0"] == str(tmp_path) and seen["env"] == repo
    assert seen["lake_assets"] == os.path.join(repo, "lake_assets", "__init__.py")  # this worktree's
    assert rc == (-9 if sig == "KILL" else -2)
    assert ("KeyboardInterrupt" in err) == (sig == "INT")


def test_report_crash_points(request):
    """Prints how many distinct crash points the runs above covered (pytest -s shows it)."""
    distinct = sorted(set(COVERED))
    print(f"\ncrash points covered: {len(distinct)} distinct, {len(COVERED)} kills: {distinct}")
    if len(COVERED) >= 10:
        assert len(distinct) >= 10
