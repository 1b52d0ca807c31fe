"""A stream keeps the schema the table had when it started, as Paimon Java's.

Java's sources read with the ``FileStoreTable`` they were built with: Flink's
``ContinuousFileStoreSource`` holds the table's ``ReadBuilder`` and Spark's micro-batch stream the
table, from the job's start; neither reloads the schema while it runs (0.9 to HEAD: nothing on the
source path calls ``copyWithLatestSchema``, which only the CDC writers and compaction refresher
use). The oracle's stream is the same: the table loaded when it opens, its read builder kept.
Files a later schema wrote are read by field id into the start schema: a renamed column under
its old name, an added one left out, a dropped one as null, a widened one cast back. A restarted
job loads the table again: a stream restarted from its consumer's position reads with the schema
the table has then.

Java casts a widened value the start type cannot hold down to another number; we refuse with a
`SchemaError` instead (`tests/unit/test_stream_schema.py`), so the values here fit.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.stream import StreamEnumerator
from lake_assets.table import Table
from tests.java.oracle import JavaStream, PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("amount", pa.float64()),
                    ("tag", pa.string())])
EVOLVED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int64()), ("total", pa.float64()),
                     ("note", pa.string())])
Rows = list[tuple[Any, ...]]


def _rows(table: pa.Table) -> tuple[list[str], Rows]:
    """Column names (as read) and rows sorted."""
    return table.column_names, sorted(tuple(r.values()) for r in table.to_pylist())


def _drain_java(stream: JavaStream) -> pa.Table:
    """Every plan Java has now (it stops after a few empty plans in a row)."""
    parts, empty = [], 0
    while empty < 3:
        part = stream.next()
        empty = empty + 1 if part.num_rows == 0 else 0
        parts.append(part)
    return pa.concat_tables(parts)


def _drain_ours(stream: StreamEnumerator) -> pa.Table:
    reader = stream.change_reader()
    parts = [reader.read(s) for b in stream.poll(max_snapshots=20) for s in b.splits]
    return pa.concat_tables(parts) if parts else reader.schema.empty_table()


def _evolve_and_write(t: Table, ids: list[int]) -> None:
    """Rename amount, widen qty, drop tag, add note; then write ``ids`` under the new schema."""
    (t.update_schema().rename_column("amount", "total").update_column_type("qty", pa.int64())
     .drop_column("tag").add_column("note", pa.string()).commit())
    t.refresh()
    t.write_arrow(pa.table({"id": ids, "qty": [10 * i for i in ids], "total": [i + 0.5 for i in ids],
                            "note": [f"n{i}" for i in ids]}, schema=EVOLVED))


def _table(lake: Catalog, options: dict[str, str]) -> Table:
    t = lake.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", **options})
    t.write_arrow(pa.table({"id": [1], "qty": [1], "amount": [1.5], "tag": ["a"]}, schema=SCHEMA))
    return t


@pytest.mark.parametrize("mode", ["latest", "latest-full"])
@pytest.mark.parametrize("producer", ["none", "input"])
def test_a_running_stream_keeps_the_schema_it_started_with(
    java: PaimonJava, wh: str, lake: Catalog, mode: str, producer: str
) -> None:
    t = _table(lake, {"changelog-producer": producer})
    java_stream = java.stream(wh, "db.t", options={"scan.mode": mode})
    ours = t.stream(mode=mode)
    try:
        before = (_drain_java(java_stream), _drain_ours(ours))
        assert _rows(before[1]) == _rows(before[0])
        _evolve_and_write(t, [1, 2])  # while both streams run
        after = (_drain_java(java_stream), _drain_ours(ours))
    finally:
        java_stream.close()
    assert _rows(after[1]) == _rows(after[0])
    # the start schema's columns: renamed under the old name, dropped as null, added left out
    assert after[1].column_names == ["id", "qty", "amount", "tag", "_row_kind"]
    assert after[1].schema.field("qty").type == after[0].schema.field("qty").type == pa.int32()
    assert (2, 20, 2.5, None, "+I") in _rows(after[1])[1]


def test_a_stream_restarted_from_its_consumer_reads_with_the_schema_of_then(
    java: PaimonJava, wh: str, lake: Catalog
) -> None:
    t = _table(lake, {})
    java_stream = java.stream(wh, "db.t", options={"scan.mode": "latest-full", "consumer-id": "j"})
    ours = t.stream(mode="latest-full", consumer_id="o")
    try:
        assert _rows(_drain_ours(ours)) == _rows(_drain_java(java_stream))
        java_stream.notify_checkpoint_complete()
        ours.commit()
    finally:
        java_stream.close()
    _evolve_and_write(t, [2])  # while neither runs
    assert t.store.consumer_manager().get("j").next_snapshot == t.store.consumer_manager().get("o").next_snapshot == 2
    java_again = java.stream(wh, "db.t", options={"scan.mode": "latest-full", "consumer-id": "j"})
    ours_again = t.stream(mode="latest-full", consumer_id="o")
    try:
        theirs = _drain_java(java_again)
    finally:
        java_again.close()
    got = _drain_ours(ours_again)
    assert _rows(got) == _rows(theirs)
    assert got.column_names == ["id", "qty", "total", "note", "_row_kind"]
    assert _rows(got)[1] == [(2, 20, 2.5, "n2", "+I")]
