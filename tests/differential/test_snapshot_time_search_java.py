"""Snapshots found by time answer as Paimon Java 0.9's binary searches answer, ties included.

Java's ``SnapshotManager.earlierOrEqualTimeMills`` (time travel by ``scan.timestamp-millis``)
stops at the first snapshot its search meets whose time equals the one asked for, not the newest
of those committed in that millisecond; ``earlierThanTimeMills`` (where a ``from-timestamp``
stream starts) finds the newest committed before it. Writers other than ours commit several
snapshots in one millisecond, so the table here has runs of equal times (its snapshot files'
times are rewritten; each snapshot added one row, so the rows read tell which one was found).
Before the earliest snapshot 0.9 reads the earliest and 1.x refuses, as we do
(`tests/differential/test_time_travel.py`): those times are not asked here.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([("id", pa.int64())])
TIMES = [100, 200, 200, 200, 200, 300, 300, 400, 400, 400, 400, 400, 400, 500]


@pytest.fixture
def table(lake: Catalog):
    t = lake.create_table("db.t", SCHEMA)
    for i in range(1, len(TIMES) + 1):
        t.write_arrow(pa.table({"id": [i]}, schema=SCHEMA))
    for sid, ms in enumerate(TIMES, start=1):
        snap = dataclasses.replace(t.snapshot_manager.snapshot(sid), time_millis=ms)
        t.file_io.overwrite_atomic(t.paths.snapshot_file(sid), snap.to_json().encode())
    return t


PROBES = [100, 150, 200, 250, 300, 350, 400, 450, 500, 600]


def test_time_travel_finds_the_snapshot_javas_search_finds(java: PaimonJava, wh: str, table) -> None:
    chosen = []
    for ms in PROBES:
        theirs = sorted(java.read(wh, "db.t", timestamp_millis=ms).column("id").to_pylist())
        ours = sorted(table.to_arrow(timestamp=ms).column("id").to_pylist())
        assert ours == theirs, ms
        chosen.append(len(ours))
    # on a tie Java's search stops at its first hit, which is not always the newest (what a scan
    # would answer): the table makes it matter
    newest = [max(i for i, t in enumerate(TIMES, start=1) if t <= ms) for ms in PROBES]
    assert all(TIMES[c - 1] == TIMES[n - 1] for c, n in zip(chosen, newest, strict=True))
    assert chosen != newest


@pytest.mark.parametrize("ms", [150, 200, 300, 400, 450])
def test_a_stream_from_a_time_starts_where_javas_does(java: PaimonJava, wh: str, table, ms: int) -> None:
    stream = java.stream(wh, "db.t", options={"scan.mode": "from-timestamp", "scan.timestamp-millis": str(ms)})
    try:
        parts = [stream.next() for _ in range(len(TIMES) + 2)]
    finally:
        stream.close()
    theirs = sorted(pa.concat_tables(parts).column("id").to_pylist())
    ours = table.stream(mode="from-timestamp", timestamp=ms)
    reader = ours.change_reader()
    got = sorted(i for b in ours.poll(max_snapshots=50) for s in b.splits for i in reader.read(s).column("id")
                 .to_pylist())
    assert got == theirs
    assert got == [i for i, t in enumerate(TIMES, start=1) if t >= ms]  # after the last one before the time
