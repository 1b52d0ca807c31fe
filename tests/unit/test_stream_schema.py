"""A stream that does not time-travel reads with the table's schema as it starts, for its whole run
(`StreamEnumerator.read_schema`), as a Paimon Java source reads with the ``FileStoreTable`` it was
built with (`tests/differential/test_stream_schema_java.py` compares with Java 0.9): files of later
schemas are read by field id into its fields, its options stay too, and a restart - from a
consumer's position too - reads with the schema the table has then."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, SchemaError
from lake_assets.ops.stream import StreamEnumerator
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("amount", pa.float64()),
                    ("tag", pa.string())])
EVOLVED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int64()), ("total", pa.float64()),
                     ("note", pa.string())])
RESTART = r"restart the stream from its consumer position to read with the new schema$"


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "qty": [1], "amount": [1.5], "tag": ["a"]}, schema=SCHEMA))
    return t


def _evolve(t: Table) -> None:
    """Rename amount, widen qty, drop tag, add note; then write key 2 under the new schema."""
    (t.update_schema().rename_column("amount", "total").update_column_type("qty", pa.int64())
     .drop_column("tag").add_column("note", pa.string()).commit())
    t.refresh()
    t.write_arrow(pa.table({"id": [2], "qty": [2], "total": [2.5], "note": ["n2"]}, schema=EVOLVED))


def _drain(stream: StreamEnumerator, reader: Any) -> list[dict[str, Any]]:
    parts = [reader.read(s) for b in stream.poll(max_snapshots=20) for s in b.splits]
    table = pa.concat_tables(parts) if parts else reader.schema.empty_table()
    assert table.column_names == reader.schema.names
    return sorted(table.to_pylist(), key=lambda r: (r["id"], r["_row_kind"]))


@pytest.mark.parametrize("mode", ["latest", "latest-full", "earliest-full"])
def test_a_running_stream_keeps_the_schema_it_started_with(table: Table, mode: str) -> None:
    stream = table.stream(mode=mode)
    assert not stream.travelled and stream.read_schema.id == 0
    reader = stream.change_reader()
    before = _drain(stream, reader)
    full = [] if mode == "latest" else [{"id": 1, "qty": 1, "amount": 1.5, "tag": "a", "_row_kind": "+I"}]
    assert before == full
    _evolve(table)
    # renamed under the old name, widened cast back, dropped as null, added left out
    assert _drain(stream, reader) == [{"id": 2, "qty": 2, "amount": 2.5, "tag": None, "_row_kind": "+I"}]
    assert reader.schema.field("qty").type == pa.int32()


def test_a_reader_made_for_the_evolved_table_reads_the_streams_splits_with_its_schema(table: Table) -> None:
    stream = table.stream(mode="latest")
    _evolve(table)
    assert table.schema.id == 1 and stream.read_schema.id == 0
    splits = [s for b in stream.poll(max_snapshots=5) for s in b.splits]
    got = table.change_reader().read(splits[0])
    assert got.to_pylist() == [{"id": 2, "qty": 2, "amount": 2.5, "tag": None, "_row_kind": "+I"}]
    # a projection of a name the stream's schema does not have fails clearly
    with pytest.raises(SchemaError, match=r"schema 0 \(fixed when it started\), which has no columns \['total'\]"):
        table.change_reader(["id", "total"]).read(splits[0])
    # a stream started now reads with the new schema
    fresh = table.stream(mode="from-snapshot", snapshot_id=2)
    assert _drain(fresh, fresh.change_reader()) == [{"id": 2, "qty": 2, "total": 2.5, "note": "n2",
                                                      "_row_kind": "+I"}]


def test_a_stale_handle_starts_streams_with_the_latest_snapshots_schema(table: Table, catalog: Catalog) -> None:
    """Java's source loads the table as it starts; a handle that has not seen another's change
    starts its stream with the schema the latest snapshot was written under."""
    other = catalog.get_table("db.t")
    _evolve(other)
    assert table.store.schema.id == 0
    stream = table.stream(mode="latest-full")
    assert stream.read_schema.id == 1
    assert [r["id"] for r in _drain(stream, stream.change_reader())] == [1, 2]


def test_a_wider_value_stops_the_stream_and_a_restart_from_the_consumer_reads_it(table: Table) -> None:
    stream = table.stream(mode="latest", consumer_id="c")
    reader = stream.change_reader()
    _evolve(table)
    assert _drain(stream, reader) == [{"id": 2, "qty": 2, "amount": 2.5, "tag": None, "_row_kind": "+I"}]
    stream.commit()
    table.write_arrow(pa.table({"id": [3], "qty": [2**40], "total": [3.5], "note": ["n3"]}, schema=EVOLVED))
    with pytest.raises(SchemaError, match=r"column qty holds a value outside INT, its type in schema-0, which the "
                                          r"stream has read with since it started \(schema-1, which wrote the value, "
                                          r"has BIGINT\); " + RESTART):
        _drain(stream, reader)
    # the failed snapshot was not committed: a restart resumes there, with the table's schema now
    restarted = table.stream(mode="latest", consumer_id="c")
    assert restarted.position == 3 and restarted.read_schema.id == 1
    assert _drain(restarted, restarted.change_reader()) == [
        {"id": 3, "qty": 2**40, "total": 3.5, "note": "n3", "_row_kind": "+I"}]


def test_a_stream_keeps_the_options_it_started_with(catalog: Catalog) -> None:
    """Options are part of the table a Java source holds: ``streaming-read-overwrite`` set after
    the stream started does not make it read an OVERWRITE snapshot (a new stream does). A
    primary-key table: Paimon refuses the option without one."""
    t = catalog.create_table("db.o", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "qty": [1], "amount": [1.5], "tag": ["a"]}, schema=SCHEMA))
    stream = t.stream(mode="latest")
    t.update_schema().set_option("streaming-read-overwrite", "true").commit()
    t.refresh()
    t.write_arrow(pa.table({"id": [2], "qty": [2], "amount": [2.5], "tag": ["b"]}, schema=SCHEMA), overwrite=True)
    assert _drain(stream, stream.change_reader()) == []
    fresh = t.stream(mode="from-snapshot", snapshot_id=2)
    assert [r["id"] for r in _drain(fresh, fresh.change_reader())] == [2]
