"""A stream resumed from a consumer whose position names no readable snapshot, against Paimon
Java 0.9's streaming scan with that ``consumer-id``.

Java resumes a consumer from ``max(nextSnapshot, earliest)`` and, ahead of the latest snapshot,
waits for ``nextSnapshot`` (``ContinuousFromSnapshotStartingScanner``, ``NextSnapshotFetcher``).
Where that loses nothing (a position at or below 0 while snapshot 1 is there) we resume as Java;
where Java would skip changes silently (snapshots from the position on expired, a position past
the next snapshot) we raise `SnapshotNotFoundError` saying what happened and how to get Java's
result, and following that advice gives Java's rows.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import SnapshotNotFoundError
from lake_assets.table import Table
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])


def _write(java: PaimonJava, wh: str, k: int) -> None:
    java.write(wh, "db.t", pa.table({"k": [k], "v": [k]}, schema=SCHEMA))


def _java_keys(java: PaimonJava, wh: str, plans: int = 6) -> list[int]:
    """The keys Java's streaming scan with consumer ``c`` reads in ``plans`` plans."""
    stream = java.stream(wh, "db.t", {"consumer-id": "c"})
    try:
        return [r["k"] for _ in range(plans) for r in stream.next().to_pylist()]
    finally:
        stream.close()


def _our_keys(table: Table) -> list[int]:
    stream = table.refresh().stream(consumer_id="c")
    reader = stream.change_reader()
    return [r["k"] for b in stream.poll(10) for split in b.splits for r in reader.read(split).to_pylist()]


@pytest.fixture
def table(java: PaimonJava, wh: str, lake: Catalog) -> Table:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["k"],
                      options={"bucket": "1", "snapshot.num-retained.min": "1", "write-only": "true"})
    for k in range(4):
        _write(java, wh, k)  # snapshots 1-4 (write-only: no compaction snapshots between)
    return lake.get_table("db.t")


@pytest.mark.parametrize("position", [0, -5])
def test_a_position_at_or_below_zero_resumes_from_snapshot_1_as_java(java, wh, table, position):
    java.reset_consumer(wh, "db.t", "c", position)
    assert _java_keys(java, wh) == [0, 1, 2, 3]
    assert _our_keys(table) == [0, 1, 2, 3]


@pytest.mark.parametrize("position", [0, 2])
def test_a_position_whose_snapshots_expired_says_so_and_how_to_resume_as_java(java, wh, table, position):
    table.expire_snapshots(retain_max=1)
    assert table.snapshot_manager.earliest_id() == 4
    java.reset_consumer(wh, "db.t", "c", position)  # moved back, or an expiry that ignored it
    java_keys = _java_keys(java, wh)
    assert java_keys == [3]  # Java starts at the earliest snapshot: 1-3 (or 2-3) skipped silently
    gone = max(position, 1)
    with pytest.raises(SnapshotNotFoundError, match=(
            rf"consumer 'c' \(consumer/consumer-c\): it is at snapshot {position}.*snapshots {gone} to 3 expired "
            r"before it read them \(the earliest is 4.*Paimon Java 0\.9 resumes such a consumer from the earliest "
            r"snapshot, skipping them; to do the same, move the consumer "
            r"\(store\.consumer_manager\(\)\.record\('c', 4\)\)")):
        table.refresh().stream(consumer_id="c")
    table.store.consumer_manager().record("c", 4)  # the advice
    assert _our_keys(table) == java_keys


def test_a_position_past_the_next_snapshot_says_so_and_how_to_resume(java, wh, table):
    java.reset_consumer(wh, "db.t", "c", 7)  # saved before a rollback, or on another table
    assert _java_keys(java, wh, plans=3) == []  # Java waits for snapshot 7
    with pytest.raises(SnapshotNotFoundError, match=(
            r"it is at snapshot 7, past the next snapshot the table will write \(5; the latest is 4\).*Paimon Java "
            r"0\.9 would wait for snapshot 7 and never read the ones written before it; to read from the next one, "
            r"move the consumer \(store\.consumer_manager\(\)\.record\('c', 5\)\)")):
        table.refresh().stream(consumer_id="c")
    for k in range(4, 7):
        _write(java, wh, k)  # snapshots 5-7
    assert _java_keys(java, wh) == [6]  # 5 and 6 never read
    table.store.consumer_manager().record("c", 5)  # the advice: nothing skipped
    assert _our_keys(table) == [4, 5, 6]
