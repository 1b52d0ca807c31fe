"""Rollback and the tags of the history it discards (session 15 finding 5).

Java 0.9's ``RollbackHelper.cleanLargerThan`` deletes the newer snapshots before the newer tags: a
crash in between leaves a tag beyond the latest snapshot, whose id the next commits reuse. Ours
deletes those tags first, so a rollback killed part way (a real process, SIGKILL) leaves a table
at a consistent state with no such tag, and running it again finishes it. A tag of a discarded
history can still exist (Java's rollback cut short, an older lake_assets): it reads as it did,
and nothing takes its id for a position in today's history - change reads from it and rollbacks
to it are refused, deleting it frees its own files, orphan removal keeps them while it exists.
"""

from __future__ import annotations

import datetime as dt
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, InvalidArgumentError
from lake_assets.ops import tag_auto
from lake_assets.store.snapshot_identity import discarded_by_rollback
from tests.reliability.crash_run import run_crash_worker

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _history(tmp_path: Path, commits: int = 5) -> tuple[str, Any, dict[int, dict[int, int]]]:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    states = {}
    for i in range(commits):
        sid = t.write_arrow(pa.table({"k": [i, 100], "v": [i, i]}, schema=SCHEMA))
        states[sid] = _state(t)
    return wh, t, states


def _state(t: Any, **kw: Any) -> dict[int, int]:
    return {r["k"]: r["v"] for r in t.to_arrow(**kw).to_pylist()}


@pytest.mark.parametrize("point", ["rollback.after_tag_delete", "rollback.after_snapshot_delete"])
def test_a_rollback_killed_part_way_leaves_no_tag_of_the_discarded_history_and_reruns(
        tmp_path: Path, point: str) -> None:
    wh, t, states = _history(tmp_path)
    for sid in (2, 3, 5):
        t.create_tag(f"s{sid}", sid)
    rc, _, err = run_crash_worker([wh, "db.t", "rollback", point, "1", json.dumps({"snapshot_id": 2}), "KILL"])
    assert rc == -9, err[-2000:]  # killed at the step (our worktree's code: main has no tag step)
    t = Catalog(wh).get_table("db.t")
    latest = t.latest_snapshot().id
    assert latest in (4, 5) and _state(t) == states[latest]  # a consistent state of the old history
    tags = t.tags()
    assert "s2" in tags and len(tags) < 3  # killed after deleting a newer tag
    for name, held in tags.items():
        assert held.id <= latest and not discarded_by_rollback(t.store, held)
        assert _state(t, tag=name) == states[held.id]
    t.rollback_to(snapshot_id=2)  # run again: it finishes
    assert _state(t) == states[2] and set(t.tags()) == {"s2"}
    sid = t.write_arrow(pa.table({"k": [7], "v": [7]}, schema=SCHEMA))
    assert sid == 3 and _state(t, tag="s2") == states[2]


def _discarded_tags(tmp_path: Path) -> tuple[Any, dict[int, dict[int, int]], dict[int, dict[int, int]]]:
    """Tags s3 and s4 of a history a rollback to 2 discarded, as Java's rollback killed between
    its snapshots and its tags leaves them, then two commits that reuse ids 3 and 4."""
    _, t, old = _history(tmp_path)
    t.create_tag("s3", 3)
    t.create_tag("s4", 4)
    io, paths = t.store.file_io, t.store.paths
    saved = {n: io.read_bytes(paths.tag_file(n)) for n in ("s3", "s4")}
    t.rollback_to(snapshot_id=2)
    for name, data in saved.items():
        io.write_bytes(paths.tag_file(name), data)
    new = {}
    for i in (3, 4):
        sid = t.write_arrow(pa.table({"k": [50 + i], "v": [-i]}, schema=SCHEMA))
        new[sid] = _state(t)
    assert sorted(new) == [3, 4]
    return t, old, new


def test_a_tag_of_a_discarded_history_reads_its_own_rows_and_is_no_position_in_this_one(tmp_path: Path) -> None:
    t, old, new = _discarded_tags(tmp_path)
    assert all(discarded_by_rollback(t.store, t.tags()[n]) for n in ("s3", "s4"))
    assert _state(t, tag="s3") == old[3] and _state(t, tag="s4") == old[4]
    # before the fix: the new history's change of snapshot 4, as if it followed tag s3
    with pytest.raises(InvalidArgumentError, match=r"'s3'.*history a rollback discarded"):
        t.read_changes("s3", 4)
    with pytest.raises(InvalidArgumentError, match="discarded"):
        t.read_changes(2, "s4")
    with pytest.raises(InvalidArgumentError, match="discarded"):
        t.rollback_to(tag="s4")
    # orphan removal keeps what the tags hold; then deleting one frees its own files only
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert _state(t, tag="s4") == old[4] and _state(t) == new[4]
    result = t.delete_tag("s4")
    assert result.deleted_data_files  # before the fix: none (snapshot 4 "keeps every file")
    assert _state(t) == new[4] and _state(t, tag="s3") == old[3]
    assert all(_state(t, snapshot_id=s) == new[s] for s in new)


def test_automatic_tagging_continues_from_this_history_and_retags_a_discarded_period(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    # not write-only: Paimon's committer of a write-only table makes no automatic tag (its writers'
    # commits run no tag manager), so the tags come from these writers' own commits; three sorted
    # runs at most, under num-sorted-run.compaction-trigger, so no commit compacts and snapshot ids
    # stay one per write
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "tag.automatic-creation": "process-time"})
    real, shift = tag_auto._snapshot_time, {}
    monkeypatch.setattr(tag_auto, "_snapshot_time",
                        lambda mode, snap: real(mode, snap) + dt.timedelta(days=shift.get(snap.id, 0)))
    day = [(dt.date.today() + dt.timedelta(days=d)).isoformat() for d in (-1, 0, 1)]
    for sid, days_later in ((1, 0), (2, 1), (3, 2)):
        shift[sid] = days_later
        t.write_arrow(pa.table({"k": [sid], "v": [sid]}, schema=SCHEMA))
    assert {n: s.id for n, s in t.tags().items()} == {day[0]: 1, day[1]: 2, day[2]: 3}
    io, paths = t.store.file_io, t.store.paths
    saved = {n: io.read_bytes(paths.tag_file(n)) for n in day[1:]}
    t.rollback_to(snapshot_id=1)
    for name, data in saved.items():  # as Java's rollback killed between snapshots and tags leaves them
        io.write_bytes(paths.tag_file(name), data)
    for sid, days_later in ((2, 1), (3, 2)):  # this history's next days
        shift[sid] = days_later
        t.write_arrow(pa.table({"k": [10 + sid], "v": [sid]}, schema=SCHEMA))
    # before the fix: both periods kept the discarded history's tags (and the first was skipped)
    tags = t.tags()
    assert {n: s.id for n, s in tags.items()} == {day[0]: 1, day[1]: 2, day[2]: 3}
    assert not any(discarded_by_rollback(t.store, s) for s in tags.values())
    assert _state(t, tag=day[2]) == {1: 1, 12: 2, 13: 3}
