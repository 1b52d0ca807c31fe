"""Time travel reads the snapshot's fields with the table's current options (Paimon's
``tryTimeTravel``: ``schema(snapshot.schemaId()).copy(current options)``); against Java:
tests/differential/test_time_travel_options_java.py."""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog

SCHEMA = pa.schema([("k", pa.int64()), ("n", pa.int64())])


def test_old_snapshot_merges_with_the_current_options(tmp_path) -> None:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "write-only": "true"})
    t.write_arrow(pa.table({"k": [1, 2], "n": [5, 1]}, schema=SCHEMA))
    t.write_arrow(pa.table({"k": [1], "n": [2]}, schema=SCHEMA))
    t.create_tag("two", snapshot_id=2)
    assert t.to_arrow(snapshot_id=2).sort_by("k").column("n").to_pylist() == [7, 1]
    t.update_schema().set_option("fields.n.aggregate-function", "min").add_column("w", pa.int64()).commit()
    for old in (t.to_arrow(snapshot_id=2), t.to_arrow(tag="two"), t.to_arrow(timestamp=t.snapshot(2).time_millis)):
        assert old.column_names == ["k", "n"]  # the snapshot's fields
        assert old.sort_by("k").column("n").to_pylist() == [2, 1]  # today's min, not the sum
    assert t.store.travel_schema(t.snapshot(2)).options == t.schema.options
    assert t.store.schema_by_id(0).options["fields.n.aggregate-function"] == "sum"  # the cache keeps the file's
