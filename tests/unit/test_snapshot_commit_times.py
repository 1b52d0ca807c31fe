"""Commit times increase with snapshot ids (`lake_assets.ops.commit_snapshot.snapshot_record`).

Time travel by timestamp relies on it: Java's ``earlierOrEqualTimeMills`` binary-searches ids by
time and, on a tie, returns whichever snapshot its search meets first, where lake_assets returns
the newest. A deletion-vector write makes an APPEND (its level-0 files, invisible) and a COMPACT
snapshot (the rows visible) often within one millisecond; with equal times the two engines read
different rows for the same timestamp (seen as a flaky differential test)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import commit_snapshot
from lake_assets.spec.snapshot import CommitKind

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _table(tmp_path: Path, options: dict[str, str]):  # type: ignore[no-untyped-def]
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2", **options})


def _rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


class _FrozenClock:
    """``time.time`` of the commit module standing still (every commit in one millisecond) or
    going back (a writer whose clock is behind the last committer's)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def time(self) -> float:
        return self.seconds


def test_a_writers_two_snapshots_in_one_millisecond_get_distinct_times(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path, {"deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(range(20), "a"))
    monkeypatch.setattr(commit_snapshot, "time", _FrozenClock(t.latest_snapshot().time_millis / 1000))
    t.write_arrow(_rows(range(10, 30), "b"))
    t.write_arrow(_rows(range(0, 30, 3), "c"))
    snaps = list(t.snapshots())
    assert [s.commit_kind for s in snaps][-2:] == [CommitKind.APPEND, CommitKind.COMPACT]
    times = [s.time_millis for s in snaps]
    assert times == sorted(set(times)), times  # strictly increasing with the ids
    # each snapshot is the one a read at its own commit time sees: the APPEND's level-0 rows are
    # invisible with deletion vectors, so reading the COMPACT's rows at the APPEND's time was wrong
    for s in snaps:
        assert t.to_arrow(timestamp=s.time_millis).sort_by("k").equals(t.to_arrow(snapshot_id=s.id).sort_by("k"))


def test_a_clock_behind_the_last_commit_still_stamps_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path, {})
    t.write_arrow(_rows(range(5), "a"))
    parent = t.latest_snapshot().time_millis
    monkeypatch.setattr(commit_snapshot, "time", _FrozenClock((parent - 60_000) / 1000))  # a minute behind
    t.write_arrow(_rows(range(5), "b"))
    assert t.latest_snapshot().time_millis == parent + 1
    monkeypatch.undo()
    t.write_arrow(_rows(range(5), "c"))
    assert t.latest_snapshot().time_millis > parent + 1  # a clock that is right stamps the time itself
