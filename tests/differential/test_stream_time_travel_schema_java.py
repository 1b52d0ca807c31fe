"""A stream that starts from an old snapshot reads with that snapshot's fields, as Paimon Java's.

Java copies the table with the scan options, and ``AbstractFileStoreTable.copy`` time-travels
(``tryTimeTravel``): with ``scan.snapshot-id`` (``from-snapshot``, ``from-snapshot-full``) or
``scan.timestamp-millis`` (``from-timestamp``) the copy's schema is the one the start snapshot
was committed under, with the current options. 0.9 travels by the start mode, 1.x by whichever
scan key is set - the same for these modes. The copy keeps that schema for the whole stream
(Java never moves a reading table to a later schema): a later snapshot's files are read by field
id into the old fields - a renamed column under its old name, an added one left out - also when
the schema evolves while the stream runs.

The table: snapshots 1 and 2 under schema 0 (id, qty, amount); then ``amount`` renamed to
``total`` and ``note`` added (schema 1), and snapshot 3 - an update of key 1 and a new key 3 -
written under it. Delta reads of a deduplicate table with ``changelog-producer = none``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.table import Table
from tests.java.oracle import JavaStream, PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("amount", pa.float64())])
EVOLVED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("total", pa.float64()),
                     ("note", pa.string())])
Rows = list[tuple[Any, ...]]


def _rows(table: pa.Table) -> tuple[list[str], Rows]:
    """Column names (as read) and rows sorted."""
    return table.column_names, sorted(tuple(r.values()) for r in table.to_pylist())


def _drain_java(stream: JavaStream) -> pa.Table:
    """Every plan Java has now: one snapshot per plan, an empty plan where a snapshot adds
    nothing or the scan only positions itself (its first plan from a snapshot id), so it stops
    after a few empty plans in a row."""
    parts, empty = [], 0
    while empty < 3:
        part = stream.next()
        empty = empty + 1 if part.num_rows == 0 else 0
        parts.append(part)
    return pa.concat_tables(parts)


def _drain_ours(t: Table, stream: Any, reader: Any) -> pa.Table:
    parts = [reader.read(s) for b in stream.poll(max_snapshots=20) for s in b.splits]
    return pa.concat_tables(parts) if parts else reader.schema.empty_table()


def _evolve_and_write(t: Table) -> None:
    t.update_schema().rename_column("amount", "total").add_column("note", pa.string()).commit()
    t.refresh()
    t.write_arrow(pa.table({"id": [1, 3], "qty": [10, 3], "total": [10.5, 3.5], "note": ["n1", "n3"]},
                           schema=EVOLVED))


@pytest.fixture
def evolved(java: PaimonJava, wh: str, lake: Catalog) -> Table:
    """Snapshots 1, 2 under schema 0, snapshot 3 under schema 1."""
    t = lake.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "qty": [1], "amount": [1.5]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [2], "qty": [2], "amount": [2.5]}, schema=SCHEMA))
    _evolve_and_write(t)
    assert [s.schema_id for s in t.snapshots()] == [0, 0, 1]
    return t


START = [
    ("from-snapshot", {"scan.snapshot-id": "2"}),
    ("from-snapshot-full", {"scan.snapshot-id": "2"}),
    ("from-timestamp", None),  # the time of snapshot 2
]


@pytest.mark.parametrize(("mode", "java_options"), START, ids=[m for m, _ in START])
def test_a_stream_from_before_a_schema_change_reads_with_the_start_snapshots_fields(
    java: PaimonJava, wh: str, evolved: Table, mode: str, java_options: dict[str, str] | None
) -> None:
    t = evolved
    snap2 = t.snapshot_manager.snapshot(2)
    if java_options is None:
        java_options = {"scan.timestamp-millis": str(snap2.time_millis)}
        ours = t.stream(mode=mode, timestamp=snap2.time_millis)
    else:
        ours = t.stream(mode=mode, snapshot_id=2)
    java_stream = java.stream(wh, "db.t", options={"scan.mode": mode, **java_options})
    try:
        theirs = _drain_java(java_stream)
    finally:
        java_stream.close()
    got = _drain_ours(t, ours, t.change_reader())
    assert _rows(got) == _rows(theirs)
    # the fields of schema 0: snapshot 3's row of key 1 with its renamed column under the old name
    assert got.column_names == ["id", "qty", "amount", "_row_kind"]
    assert (1, 10, 10.5, "+I") in _rows(got)[1]


def test_a_stream_keeps_its_schema_when_the_schema_evolves_while_it_runs(java: PaimonJava, wh: str,
                                                                         lake: Catalog) -> None:
    t = lake.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "qty": [1], "amount": [1.5]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [2], "qty": [2], "amount": [2.5]}, schema=SCHEMA))
    java_stream = java.stream(wh, "db.t", options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    ours = t.stream(mode="from-snapshot", snapshot_id=1)
    reader = t.change_reader()
    try:
        before = (_drain_java(java_stream), _drain_ours(t, ours, reader))
        assert _rows(before[1]) == _rows(before[0])
        _evolve_and_write(t)  # while both streams run
        after = (_drain_java(java_stream), _drain_ours(t, ours, reader))
    finally:
        java_stream.close()
    assert _rows(after[1]) == _rows(after[0])
    assert after[1].column_names == ["id", "qty", "amount", "_row_kind"]
    assert _rows(after[1])[1] == [(1, 10, 10.5, "+I"), (3, 3, 3.5, "+I")]
    # a fresh stream from the snapshot written under the new schema reads with that one
    fresh = t.stream(mode="from-snapshot", snapshot_id=3)
    got = _drain_ours(t, fresh, t.change_reader())
    java_fresh = java.stream(wh, "db.t", options={"scan.mode": "from-snapshot", "scan.snapshot-id": "3"})
    try:
        assert _rows(got) == _rows(_drain_java(java_fresh))
    finally:
        java_fresh.close()
    assert got.column_names == ["id", "qty", "total", "note", "_row_kind"]


def test_a_stream_from_a_snapshot_that_does_not_exist_reads_with_the_current_schema(
    java: PaimonJava, wh: str, evolved: Table
) -> None:
    """Java travels only to a snapshot that exists (0.9: ``snapshotExists``; 1.x: the lookup
    fails and ``tryTimeTravel`` keeps the current schema): a stream from the next snapshot id
    reads what comes next with the latest schema."""
    t = evolved
    ours = t.stream(mode="from-snapshot", snapshot_id=4)
    assert not ours.travelled and ours.read_schema == t.schema
    java_stream = java.stream(wh, "db.t", options={"scan.mode": "from-snapshot", "scan.snapshot-id": "4"})
    try:
        assert _drain_java(java_stream).num_rows == 0
        t.write_arrow(pa.table({"id": [4], "qty": [4], "total": [4.5], "note": ["n4"]}, schema=EVOLVED))
        theirs = _drain_java(java_stream)
    finally:
        java_stream.close()
    got = _drain_ours(t, ours, ours.change_reader())
    assert _rows(got) == _rows(theirs)
    assert got.column_names == ["id", "qty", "total", "note", "_row_kind"]
