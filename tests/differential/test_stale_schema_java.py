"""A lake_assets handle opened before Paimon Java evolved the schema and wrote under it.

Java renames a column, widens one, adds one and writes; the handle opened before then reads what
Java reads (the snapshot's schema, not the one it cached), and its compaction keeps the newer
columns (Java reads the compacted table alike). Java's committer records the latest schema in the
snapshot and leaves each file its own: a lake_assets writer prepared before the ALTER commits
the same way, and Java reads its rows by field id.
"""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from tests.differential.helpers import assert_same_rows

SCHEMA = pa.schema([("k", pa.int64()), ("qty", pa.int32()), ("v", pa.string())])
EVOLVED = pa.schema([("k", pa.int64()), ("qty", pa.int64()), ("label", pa.string()), ("note", pa.string())])


def _alter_and_write(java, wh: str) -> None:
    java.alter_table(wh, "db.t",
                     {"change": "rename_column", "name": "v", "new_name": "label"},
                     {"change": "update_column_type", "name": "qty", "type": pa.int64()},
                     {"change": "add_column", "name": "note", "type": pa.string()})
    java.write(wh, "db.t", [{"k": 2, "qty": 2**40, "label": "j2", "note": "n2"},
                            {"k": 3, "qty": 3, "label": "j3", "note": None}], schema=EVOLVED)


def test_a_stale_handle_reads_and_compacts_what_java_evolved(java, wh: str, lake: Catalog) -> None:
    old = lake.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    old.write_arrow(pa.table({"k": [1, 2], "qty": [1, 2], "v": ["a1", "a2"]}, schema=SCHEMA))
    _alter_and_write(java, wh)
    assert_same_rows(old.to_arrow(), java.read(wh, "db.t"))
    assert old.to_arrow().schema.names == ["k", "qty", "label", "note"]
    old.compact(full=True)
    assert_same_rows(Catalog(wh).get_table("db.t").to_arrow(), java.read(wh, "db.t"))
    assert {r["k"]: r["note"] for r in java.read(wh, "db.t").to_pylist()} == {1: None, 2: "n2", 3: None}


def test_a_writer_prepared_before_javas_alter_commits_as_javas_would(java, wh: str, lake: Catalog) -> None:
    old = lake.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    writer = old.new_writer("w")
    writer.write_arrow(pa.table({"k": [9], "qty": [9], "v": ["w9"]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    writer.close()
    _alter_and_write(java, wh)
    old.new_committer("w").commit(messages, commit_identifier=1)
    latest = Catalog(wh).get_table("db.t")
    assert latest.latest_snapshot().schema_id == 1
    assert_same_rows(latest.to_arrow(), java.read(wh, "db.t"))
    assert {r["k"]: r["label"] for r in java.read(wh, "db.t").to_pylist()} == {2: "j2", 3: "j3", 9: "w9"}
