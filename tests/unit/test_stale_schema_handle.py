"""A long-lived `Table` handle after another handle evolved the schema and wrote under it.

Handle ``old`` is opened first; handle ``new`` (another catalog, as another process would)
renames ``amount`` to ``total``, widens ``qty`` to BIGINT, adds ``note`` and writes a row under
that schema. Reads, writes, compaction and change reads through ``old`` must then use the schema
the snapshot was committed under, not the one ``old`` cached (`FileStore.schema_at`) - except a
stream that started before the change, which keeps its schema as Paimon's streams do.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, InvalidDataError, SchemaError
from lake_assets.table import Table
from tests.conftest import rows

SCHEMA = pa.schema([("id", pa.int64()), ("qty", pa.int32()), ("amount", pa.float64())])
EVOLVED = pa.schema([("id", pa.int64()), ("qty", pa.int64()), ("total", pa.float64()), ("note", pa.string())])


@pytest.fixture
def handles(catalog: Catalog, warehouse: str) -> tuple[Table, Table]:
    """(old, new): ``old`` caches schema-0 and has written one row through it; ``new`` is fresh."""
    old = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    old.write_arrow(pa.table({"id": [1], "qty": [1], "amount": [1.5]}, schema=SCHEMA))
    return old, Catalog(warehouse).get_table("db.t")


def _evolve_and_write(new: Table) -> None:
    (new.update_schema().rename_column("amount", "total").update_column_type("qty", pa.int64())
     .add_column("note", pa.string()).commit())
    new.write_arrow(pa.table({"id": [2], "qty": [2**40], "total": [2.5], "note": ["n2"]}, schema=EVOLVED))


EXPECTED = [{"id": 1, "qty": 1, "total": 1.5, "note": None}, {"id": 2, "qty": 2**40, "total": 2.5, "note": "n2"}]


def test_latest_reads_of_a_stale_handle_use_the_snapshots_schema(handles: tuple[Table, Table]) -> None:
    old, new = handles
    _evolve_and_write(new)
    got = old.to_arrow()
    assert got.schema.names == EVOLVED.names and got.schema.field("qty").type == pa.int64()
    assert rows(got, "id") == EXPECTED
    batches = list(old.to_batches())
    assert rows(pa.Table.from_batches(batches), "id") == EXPECTED
    # the renamed column filters and projects under its new name
    assert old.to_arrow(columns=["id", "note"], filter=[("total", ">", 2.0)]).to_pylist() == [
        {"id": 2, "note": "n2"}]
    assert old.schema.id == new.schema.id  # the handle moved on, for what it does next


def test_time_travel_of_a_stale_handle_keeps_the_old_snapshots_schema(handles: tuple[Table, Table]) -> None:
    old, new = handles
    _evolve_and_write(new)
    assert old.to_arrow(snapshot_id=1).to_pylist() == [{"id": 1, "qty": 1, "amount": 1.5}]


def test_a_schema_change_without_a_write_leaves_the_latest_snapshot_readable_as_committed(
    handles: tuple[Table, Table],
) -> None:
    old, new = handles
    new.update_schema().add_column("note", pa.string()).commit()
    # no snapshot was written under schema-1: the old handle reads what the snapshot holds
    assert old.to_arrow().to_pylist() == [{"id": 1, "qty": 1, "amount": 1.5}]
    assert new.to_arrow().to_pylist() == [{"id": 1, "qty": 1, "amount": 1.5, "note": None}]


def test_compaction_through_a_stale_handle_keeps_the_newer_columns(
    handles: tuple[Table, Table], warehouse: str
) -> None:
    old, new = handles
    _evolve_and_write(new)
    old.compact(full=True)  # rewrites both files: with schema-0 it would drop `note`, narrow `qty`
    fresh = Catalog(warehouse).get_table("db.t")
    assert rows(fresh.to_arrow(), "id") == EXPECTED
    assert {e.file.schema_id for e in fresh.store.file_store_scan().live_entries(fresh.latest_snapshot())} == {1}


def test_a_writer_of_a_stale_handle_writes_under_the_latest_snapshots_schema(
    handles: tuple[Table, Table], warehouse: str
) -> None:
    old, new = handles
    _evolve_and_write(new)
    old.write_arrow(pa.table({"id": [3], "qty": [3], "total": [3.5], "note": ["n3"]}, schema=EVOLVED))
    got = rows(Catalog(warehouse).get_table("db.t").to_arrow(), "id")
    assert got[-1] == {"id": 3, "qty": 3, "total": 3.5, "note": "n3"}
    # data shaped as the schema the handle had cached is refused, not coerced
    with pytest.raises((SchemaError, InvalidDataError)):
        old.write_arrow(pa.table({"id": [4], "qty": [4], "amount": [4.5]}, schema=SCHEMA))


def test_an_in_flight_writer_commits_under_the_latest_schema_as_java_does(
    handles: tuple[Table, Table], warehouse: str
) -> None:
    """Java's committer records the latest schema in the snapshot and files keep theirs: files a
    writer wrote before the schema changed are read by field id (the added column as null)."""
    old, new = handles
    writer = old.new_writer("w1")
    writer.write_arrow(pa.table({"id": [5], "qty": [5], "amount": [5.5]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    writer.close()
    _evolve_and_write(new)
    old.new_committer("w1").commit(messages, commit_identifier=1)
    fresh = Catalog(warehouse).get_table("db.t")
    assert fresh.latest_snapshot().schema_id == 1
    assert rows(fresh.to_arrow(), "id")[-1] == {"id": 5, "qty": 5, "total": 5.5, "note": None}


def test_change_reads_of_a_stale_handle_use_the_snapshots_schema(handles: tuple[Table, Table]) -> None:
    """A stream started on the stale handle after ``new`` wrote under its schema reads with that
    schema (Java's source loads the table when it starts); so do incremental reads."""
    old, new = handles
    _evolve_and_write(new)
    stream = old.stream(mode="from-snapshot", snapshot_id=2)
    assert stream.read_schema.id == 1
    got = [stream.change_reader().read(s) for b in stream.poll(max_snapshots=10) for s in b.splits]
    assert [t.to_pylist() for t in got] == [[{"id": 2, "qty": 2**40, "total": 2.5, "note": "n2", "_row_kind": "+I"}]]
    changes = old.read_changes(1, 2)
    assert changes.to_pylist() == [{"id": 2, "qty": 2**40, "total": 2.5, "note": "n2", "_row_kind": "+I"}]


def test_a_stream_started_before_the_change_keeps_its_schema(handles: tuple[Table, Table]) -> None:
    """A stream that started under schema-0 keeps it, as a Java source keeps the table it was
    built with (`tests/differential/test_stream_schema_java.py`): the renamed column under its
    old name, the added one left out; a widened value schema-0's INT cannot hold stops the stream
    with what to do (Java casts it down to another number)."""
    old, new = handles
    stream = old.stream(mode="latest")
    reader = old.change_reader(columns=["id", "amount"])
    stream.poll(max_snapshots=1)  # nothing new yet: the stream stays after snapshot 1
    _evolve_and_write(new)
    splits = [s for b in stream.poll(max_snapshots=10) for s in b.splits]
    assert reader.read(splits[0]).to_pylist() == [{"id": 2, "amount": 2.5, "_row_kind": "+I"}]
    with pytest.raises(SchemaError, match=r"column qty holds a value outside INT, its type in schema-0, which the "
                                          r"stream has read with since it started .*restart the stream from its "
                                          r"consumer position to read with the new schema$"):
        old.change_reader().read(splits[0])


def test_a_pinned_schema_stays_as_spark_declared_it(handles: tuple[Table, Table]) -> None:
    """Spark pins the schema it declared to a query (``table.schema = ...``): files of a newer
    schema are read by field id into it; `refresh` unpins."""
    old, new = handles
    old.schema = old.store.schema_by_id(0)
    new.update_schema().rename_column("amount", "total").add_column("note", pa.string()).commit()
    new.write_arrow(pa.table({"id": [2], "qty": [2], "total": [2.5], "note": ["n2"]},
                             schema=EVOLVED.set(1, pa.field("qty", pa.int32()))))
    assert rows(old.to_arrow(), "id") == [{"id": 1, "qty": 1, "amount": 1.5}, {"id": 2, "qty": 2, "amount": 2.5}]
    assert old.schema.id == 0
    assert old.refresh().to_arrow().schema.names == ["id", "qty", "total", "note"]


def test_a_diff_between_tags_through_a_stale_handle_uses_the_newer_schema(handles: tuple[Table, Table]) -> None:
    old, new = handles
    new.create_tag("before")
    _evolve_and_write(new)
    new.create_tag("after")
    got = old.read_changes("before", "after")
    assert got.to_pylist() == [{"id": 2, "qty": 2**40, "total": 2.5, "note": "n2", "_row_kind": "+I"}]


def test_a_schema_evolved_and_written_by_another_process_is_read_and_compacted_with_it(
    handles: tuple[Table, Table], warehouse: str
) -> None:
    old, _ = handles
    code = textwrap.dedent(f"""
        import pyarrow as pa
        from lake_assets import Catalog
        t = Catalog({warehouse!r}).get_table("db.t")
        (t.update_schema().rename_column("amount", "total").update_column_type("qty", pa.int64())
         .add_column("note", pa.string()).commit())
        t.write_arrow(pa.table({{"id": [2], "qty": [2**40], "total": [2.5], "note": ["n2"]}}))
    """)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    assert rows(old.to_arrow(), "id") == EXPECTED
    old.compact(full=True)
    assert rows(Catalog(warehouse).get_table("db.t").to_arrow(), "id") == EXPECTED


def test_a_plan_through_a_stale_handle_takes_a_filter_on_a_renamed_column(handles: tuple[Table, Table]) -> None:
    old, new = handles
    _evolve_and_write(new)
    splits = old.plan(filter=[("total", ">", 2.0)])
    assert sum(len(s.files) for s in splits) >= 1
