"""Which schema's ``read.batch-size`` / ``read.read-ahead`` a `Table.to_batches` takes: the table's
current schema once the read's snapshot is resolved, as Paimon does.

Paimon's time travel (``AbstractFileStoreTable.copyInternal`` → ``tryTimeTravel``, 0.9 to HEAD)
reads the snapshot's schema copied with the table's current options, so an old snapshot is read
with today's ``read.batch-size``. A read of the latest state through a handle opened before
another handle altered the option and wrote takes the snapshot's (newer) schema, options included.
"""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
ROWS = pa.table({"k": list(range(10)), "v": [str(i) for i in range(10)]}, schema=SCHEMA)


def _sizes(batches: object) -> list[int]:
    return [b.num_rows for b in batches]  # type: ignore[attr-defined]


def test_a_stale_handle_reads_the_latest_snapshot_with_its_schemas_batch_size(catalog: Catalog,
                                                                               warehouse: str) -> None:
    old = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1", "read.batch-size": "4"})
    old.write_arrow(ROWS)
    assert max(_sizes(old.to_batches())) == 4
    new = Catalog(warehouse).get_table("db.t")
    new.update_schema().set_option("read.batch-size", "3").commit()
    new.write_arrow(ROWS.slice(0, 1))
    sizes = _sizes(old.to_batches())  # `old` still caches schema-0 until the read resolves
    assert sum(sizes) == 11 and max(sizes) == 3
    assert old.schema.options["read.batch-size"] == "3"


def test_time_travel_takes_the_current_options_not_the_old_snapshots(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1", "read.batch-size": "4"})
    t.write_arrow(ROWS)
    t.update_schema().set_option("read.batch-size", "3").add_column("note", pa.string()).commit()
    t.write_arrow(pa.table({"k": [10], "v": ["10"], "note": ["n"]}))
    travelled = list(t.to_batches(snapshot_id=1))
    assert travelled[0].schema.names == ["k", "v"]  # the snapshot's columns ...
    assert max(_sizes(travelled)) == 3 and sum(_sizes(travelled)) == 10  # ... with today's options
    assert max(_sizes(t.to_batches(snapshot_id=1, batch_size=2))) == 2  # an argument wins
