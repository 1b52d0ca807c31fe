"""Finding snapshots by time (`SnapshotManager.earlier_or_equal_time`, `earlier_than_time`) with
Paimon's binary searches: the answers of a scan of every snapshot where the commit times rise,
whatever ties (Java's choice among tied snapshots is checked against Java 0.9 in
`tests/differential/test_snapshot_time_search_java.py`), expired heads and gaps; and about log2(n)
snapshot files read, not n."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.snapshot_manager import SnapshotManager
from lake_assets.table import Table

SCHEMA = pa.schema([("id", pa.int64())])


def _with_times(table: Table, times: list[int]) -> SnapshotManager:
    """Snapshots 1..len(times) committed at ``times``: snapshot 1 is a real commit, the others
    its copies under their ids (what is searched is only ids and times)."""
    sm = table.snapshot_manager
    first = sm.snapshot(1)
    for sid, t in enumerate(times, start=1):
        snap = dataclasses.replace(first, id=sid, time_millis=t)
        table.file_io.overwrite_atomic(table.paths.snapshot_file(sid), snap.to_json().encode())
    sm.write_latest_hint(len(times))
    return sm


def _scan_at_or_before(snaps: list[Snapshot], t: int) -> int | None:
    """The reference: the newest snapshot committed at or before ``t``, by reading them all."""
    found = [s.id for s in snaps if s.time_millis <= t]
    return max(found) if found else None


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1]}, schema=SCHEMA))
    return t


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.integers(0, 3), min_size=1, max_size=40), expired=st.integers(0, 10),
       gap=st.integers(0, 40), probe=st.integers(0, 130))
def test_the_search_answers_as_a_scan_of_every_snapshot(tmp_path_factory: pytest.TempPathFactory, steps: list[int],
                                                        expired: int, gap: int, probe: int) -> None:
    """Rising times with ties (steps of 0), an expired head under a stale EARLIEST hint, a
    missing id in the middle: the same time and, for the strict search, the same id as a scan."""
    catalog = Catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1]}, schema=SCHEMA))
    times = [100 + sum(steps[: i + 1]) for i in range(len(steps))]
    sm = _with_times(t, times)
    n = len(times)
    sm.write_earliest_hint(1)
    for sid in range(1, min(expired, n - 1) + 1):  # expired; the hint still says 1
        t.file_io.delete(t.paths.snapshot_file(sid))
    if 1 + expired < gap < n:
        t.file_io.delete(t.paths.snapshot_file(gap))
    present = list(sm.snapshots())
    by_id = {s.id: s for s in present}
    got = sm.earlier_or_equal_time(probe)
    want = _scan_at_or_before(present, probe)
    if want is None:
        assert got is None
    else:
        # a tie may answer any of the tied snapshots (Java's search does): the same time
        assert got is not None and got.time_millis == by_id[want].time_millis
        assert got.id in by_id
    assert sm.earlier_than_time(probe) == _scan_at_or_before(present, probe - 1)


def test_a_search_reads_about_log2_n_snapshot_files(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 1000
    sm = _with_times(table, [1000 + 10 * i for i in range(n)])
    reads: list[str] = []
    read_bytes = table.file_io.read_bytes

    def counting(path: str) -> bytes:
        if "/snapshot/snapshot-" in path:
            reads.append(path)
        return read_bytes(path)

    monkeypatch.setattr(table.file_io, "read_bytes", counting)
    bound = math.ceil(math.log2(n)) + 2  # the earliest, then one per halving
    for probe, want in [(1000, 1), (1005, 1), (1010 + 10 * 500, 502), (10**9, n)]:
        reads.clear()
        got = sm.earlier_or_equal_time(probe)
        assert got is not None and got.id == want
        assert len(reads) <= bound, reads
        reads.clear()
        assert sm.earlier_than_time(probe + 1) == want
        assert len(reads) <= bound, reads
    reads.clear()
    assert sm.earlier_or_equal_time(999) is None and sm.earlier_than_time(1000) is None
    assert len(reads) == 2  # the earliest only, once per search
    # a time-travel read and a stream from a time resolve with the search
    reads.clear()
    assert table.to_arrow(timestamp=1000 + 10 * 700).num_rows == 1
    assert len([r for r in reads if r.endswith("snapshot-701")]) >= 1
    assert len(reads) <= 2 * bound  # the search, then the read of its snapshot (and the latest's)
    reads.clear()
    stream = table.stream(mode="from-timestamp", timestamp=1000 + 10 * 700)
    assert stream.position == 701
    assert len(reads) <= 3 * bound


def test_an_empty_table_has_no_snapshot_at_any_time(catalog: Catalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.e", SCHEMA)
    assert t.snapshot_manager.earlier_or_equal_time(10**12) is None
    assert t.snapshot_manager.earlier_than_time(10**12) is None


def test_a_stream_from_before_the_earliest_snapshot_finds_its_changelog_by_search(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snapshots expired into long-lived changelogs: a stream from a time they cover starts at the
    first changelog committed at or after it (as Java's ``earlierThanTimeMills`` over changelogs),
    reading about log2(n) changelog files, not every one."""
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2", "changelog.num-retained.max": "40"})
    for i in range(34):
        t.write_arrow(pa.table({"id": [i]}, schema=SCHEMA))
    t.expire_snapshots(older_than=None)
    changelogs = t.store.changelog_manager()
    ids = changelogs.ids()
    assert len(ids) >= 30 and t.snapshot_manager.earliest_id() == ids[-1] + 1
    reads: list[str] = []
    read_bytes = t.file_io.read_bytes

    def counting(path: str) -> bytes:
        if "/changelog/changelog-" in path:
            reads.append(path)
        return read_bytes(path)

    monkeypatch.setattr(t.file_io, "read_bytes", counting)
    for cid in (ids[0], ids[7], ids[-1]):
        reads.clear()
        stream = t.stream(mode="from-timestamp", timestamp=changelogs.changelog(cid).time_millis)
        assert stream.position == cid  # the changelog at that time is read first
        assert len(reads) <= math.ceil(math.log2(len(ids))) + 2, reads
        reader = stream.change_reader()
        got = sorted(i for b in stream.poll(max_snapshots=50) for s in b.splits for i in reader.read(s)
                     .column("id").to_pylist())
        assert got == sorted(t.read_changes(cid - 1).column("id").to_pylist())  # snapshots cid.. (compactions too)
        assert got[-1] == 33
