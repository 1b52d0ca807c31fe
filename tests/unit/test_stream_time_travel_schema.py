"""Which schema a stream reads with (`StreamEnumerator.read_schema`): from an old snapshot (by id
or time) the snapshot's fields with the current options, fixed while it runs, as Paimon Java's
time-travelling table copy (`tests/differential/test_stream_time_travel_schema_java.py` compares
with Java 0.9); from the latest state the table's as the stream starts, also fixed
(`tests/unit/test_stream_schema.py`)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, SchemaError
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("amount", pa.float64())])
EVOLVED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int64()), ("total", pa.float64()),
                     ("note", pa.string())])


@pytest.fixture
def table(catalog: Catalog) -> Table:
    """Snapshots 1, 2 under schema 0; schema 1 renames amount, widens qty, adds note; snapshot 3
    (key 1 updated, key 3 new) under it."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "qty": [1], "amount": [1.5]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [2], "qty": [2], "amount": [2.5]}, schema=SCHEMA))
    _evolve(t)
    t.write_arrow(pa.table({"id": [1, 3], "qty": [10, 3], "total": [10.5, 3.5], "note": ["n1", "n3"]},
                           schema=EVOLVED))
    return t


def _evolve(t: Table) -> None:
    (t.update_schema().rename_column("amount", "total").update_column_type("qty", pa.int64())
     .add_column("note", pa.string()).set_option("snapshot.num-retained.min", "7").commit())
    t.refresh()


def _drain(stream: Any, reader: Any) -> pa.Table:
    parts = [reader.read(s) for b in stream.poll(max_snapshots=20) for s in b.splits]
    return pa.concat_tables(parts) if parts else reader.schema.empty_table()


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["id"], r["_row_kind"]))


def test_streams_from_an_old_snapshot_travel_to_its_fields_with_the_current_options(table: Table) -> None:
    snap2 = table.snapshot_manager.snapshot(2)
    for stream in (table.stream(mode="from-snapshot", snapshot_id=2),
                   table.stream(mode="from-snapshot-full", snapshot_id=1),
                   table.stream(mode="from-timestamp", timestamp=snap2.time_millis)):
        schema = stream.read_schema
        assert schema is not None and schema.id == 0
        assert list(schema.field_names) == ["id", "qty", "amount"]
        assert schema.options == table.schema.options  # the current options, as Java's copy
        assert schema.options["snapshot.num-retained.min"] == "7"
    # no travel where Java does not: the latest state, a snapshot id that does not exist, a time
    # before the first snapshot - the table's schema as the stream starts
    first = table.snapshot_manager.snapshot(1)
    for stream in (table.stream(mode="latest"), table.stream(mode="latest-full"),
                   table.stream(mode="earliest-full"), table.stream(mode="from-snapshot", snapshot_id=9),
                   table.stream(mode="from-timestamp", timestamp=first.time_millis - 1)):
        assert not stream.travelled and stream.read_schema == table.schema
    travelled = table.stream(mode="from-snapshot", snapshot_id=3)
    assert travelled.travelled and travelled.read_schema == table.schema


def test_later_files_are_read_by_field_id_into_the_old_fields(table: Table) -> None:
    stream = table.stream(mode="from-snapshot", snapshot_id=2)
    got = _drain(stream, stream.change_reader())
    assert got.column_names == ["id", "qty", "amount", "_row_kind"]
    assert got.schema.field("qty").type == pa.int32()
    assert _sorted(got) == [{"id": 1, "qty": 10, "amount": 10.5, "_row_kind": "+I"},
                            {"id": 2, "qty": 2, "amount": 2.5, "_row_kind": "+I"},
                            {"id": 3, "qty": 3, "amount": 3.5, "_row_kind": "+I"}]


def test_projection_uses_the_start_snapshots_names(table: Table) -> None:
    stream = table.stream(mode="from-snapshot", snapshot_id=2)
    reader = table.change_reader(["id", "amount"], stream=stream)
    assert reader.schema.names == ["id", "amount", "_row_kind"]
    assert sorted(_drain(stream, reader).column("amount").to_pylist()) == [2.5, 3.5, 10.5]
    with pytest.raises(SchemaError, match=r"no columns \['total'\] in schema 0"):
        table.change_reader(["id", "total"], stream=stream)
    # a reader made for the table reads the stream's splits with the schema they carry: a
    # projection of a name the stream does not have fails clearly, not with the wrong column
    again = table.stream(mode="from-snapshot", snapshot_id=2)
    splits = [s for b in again.poll(max_snapshots=5) for s in b.splits]
    with pytest.raises(SchemaError, match=r"schema 0 \(fixed when it started\), which has no columns \['total'\]"):
        table.change_reader(["id", "total"]).read(splits[0])
    assert table.change_reader().read(splits[0]).column_names == ["id", "qty", "amount", "_row_kind"]


def test_the_schema_stays_while_the_stream_runs_and_after_a_restart(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "qty": [1], "amount": [1.5]}, schema=SCHEMA))
    stream = t.stream(mode="from-snapshot", snapshot_id=1, consumer_id="c")
    reader = stream.change_reader()
    assert _drain(stream, reader).num_rows == 1
    stream.commit()
    _evolve(t)
    t.write_arrow(pa.table({"id": [2], "qty": [2], "total": [2.5], "note": ["n2"]}, schema=EVOLVED))
    assert _drain(stream, reader).to_pylist() == [{"id": 2, "qty": 2, "amount": 2.5, "_row_kind": "+I"}]
    stream.commit()
    # restarted with the same options: resumes at the consumer's position, with the same schema
    # (Java travels by scan.snapshot-id whatever the consumer's position)
    t.write_arrow(pa.table({"id": [3], "qty": [3], "total": [3.5], "note": ["n3"]}, schema=EVOLVED))
    resumed = t.stream(mode="from-snapshot", snapshot_id=1, consumer_id="c")
    assert resumed.position == 3 and resumed.read_schema is not None and resumed.read_schema.id == 0
    assert _drain(resumed, resumed.change_reader()).to_pylist() == [
        {"id": 3, "qty": 3, "amount": 3.5, "_row_kind": "+I"}]


def test_a_value_the_old_type_cannot_hold_fails_clearly(table: Table) -> None:
    """qty was widened to BIGINT after the start snapshot: a later value beyond INT cannot be read
    into the stream's INT column. Java's reader casts it down (``(int) value``, silently another
    number); we refuse instead of changing the value."""
    table.write_arrow(pa.table({"id": [4], "qty": [2**40], "total": [4.5], "note": ["n4"]}, schema=EVOLVED))
    stream = table.stream(mode="from-snapshot", snapshot_id=4)
    assert stream.read_schema is not None and stream.read_schema.id == 1  # snapshot 4 is under schema 1
    assert _drain(stream, stream.change_reader()).column("qty").to_pylist() == [2**40]
    old = table.stream(mode="from-snapshot", snapshot_id=2)
    with pytest.raises(SchemaError, match="qty holds a value outside INT"):
        _drain(old, old.change_reader())
