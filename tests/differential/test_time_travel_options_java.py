"""Time travel reads an old snapshot's fields with the table's CURRENT options, against Paimon Java 0.9.

Java's ``AbstractFileStoreTable.tryTimeTravel`` reads a snapshot with
``schema(snapshot.schemaId()).copy(current options)``: the merge of the same files follows the
options the table has now. Here ``ignore-delete`` is switched on after a delete was written: a
read of the old snapshot (by id, tag or time) drops the delete record when merging, as a read of
the latest state does; with the old schema's options the key would read as deleted. A column
added since stays out of the old snapshot's rows (fields are the snapshot's).
"""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
SCHEMA_AGG = pa.schema([("k", pa.int64()), ("n", pa.int64())])
DELETE_K1 = pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA)


def _setup(java: PaimonJava, wh: str) -> None:
    java.create_table(wh, "db.t", SCHEMA_AGG, primary_keys=["k"],
                      options={"bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                               "write-only": "true"})
    java.write(wh, "db.t", pa.table({"k": [1, 2], "n": [5, 1]}, schema=SCHEMA_AGG))
    java.write(wh, "db.t", pa.table({"k": [1], "n": [2]}, schema=SCHEMA_AGG))
    java.create_tag(wh, "db.t", "before-alter", 2)
    java.alter_table(wh, "db.t", {"change": "set_option", "key": "fields.n.aggregate-function", "value": "min"},
                     {"change": "add_column", "name": "w", "type": pa.int64()})


def test_old_snapshot_merges_with_the_current_aggregate_function(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Java 0.9 lets ``fields.n.aggregate-function`` change (``ignore-delete`` and
    ``sequence.field`` are immutable there): the two files of key 1 (5, then 2) merge with ``min``
    in every read after the ALTER, old snapshots included."""
    _setup(java, wh)
    t = lake.get_table("db.t")
    expected = java.read(wh, "db.t", snapshot_id=2)
    assert sorted(expected.to_pylist(), key=lambda r: r["k"]) == [{"k": 1, "n": 2}, {"k": 2, "n": 1}]
    assert_same_table(t.to_arrow(snapshot_id=2), expected)
    assert_same_table(t.to_arrow(tag="before-alter"), java.read(wh, "db.t", tag="before-alter"))
    ts = t.snapshot(2).time_millis
    assert_same_table(t.to_arrow(timestamp=ts), java.read(wh, "db.t", timestamp_millis=ts))
    assert_same_table(t.to_arrow(snapshot_id=2, filter=[("k", "=", 1)]),
                      java.read(wh, "db.t", snapshot_id=2, filter=[("k", "=", 1)]))
    assert t.to_arrow(snapshot_id=2).column_names == ["k", "n"]  # the snapshot's fields
    assert_same_table(t.to_arrow(), java.read(wh, "db.t"))


def test_our_alter_of_ignore_delete_java_reads_the_same(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """``ignore-delete`` is mutable since Paimon 1.x (we follow it; 0.9 refuses its ALTER). Java
    0.9 reads our altered table: the old snapshot's delete record is ignored when merging."""
    t = lake.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    java.write(wh, "db.t", DELETE_K1, kinds=["-D"])  # a delete record (ours come through rowkind.field)
    t.update_schema().set_option("ignore-delete", "true").commit()
    t.refresh()
    assert_same_table(t.to_arrow(snapshot_id=2), java.read(wh, "db.t", snapshot_id=2))
    assert_same_table(t.to_arrow(snapshot_id=1), java.read(wh, "db.t", snapshot_id=1))
