"""A column made NOT NULL after rows with nulls in it were written, against Paimon Java 0.9.

Java 0.9's ``updateColumnNullability(v, false)`` goes through whatever the table holds (1.x only
behind ``alter-column-null-to-not-null.disabled = false``; lake_assets refuses the change). Then:

- Java's read maps the old file's column by ``equalsIgnoreNullable`` (no cast, no check): a row
  keeps its null (``v IS NULL`` finds it; the oracle's NOT NULL field getter skips ``isNullAt`` and
  shows the slot's 0, which is no value Java stores). lake_assets returns the null, with ``v``
  nullable in the read's schema, on every read path (`tests/unit/test_not_null_after_nulls.py`).
- Java's writer refuses a new null (``Cannot write null to non-null column(v)``), as ours does.
- Java's full compaction of the primary-key table writes the null into a required Parquet column
  and commits a file neither Java nor anyone can decode; lake_assets' compaction refuses with
  `InvalidDataError` naming the column and the file, commits nothing, and Java still reads the
  table.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError
from lake_assets.errors import InvalidDataError
from tests.java.oracle import JavaError, PaimonJava

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
STRICT = pa.schema([("k", pa.int64()), pa.field("v", pa.int64(), nullable=False)])
EXPECTED = [{"k": 1, "v": 10}, {"k": 2, "v": None}, {"k": 3, "v": 30}, {"k": 5, "v": 50}]


def _java_table(java: PaimonJava, wh: str, pk: list[str]) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=pk, options={"bucket": "1" if pk else "-1"})
    java.write(wh, "db.t", pa.table({"k": [1, 2, 3], "v": [10, None, 30]}, schema=SCHEMA))
    schema = java.alter_table(wh, "db.t", {"change": "update_column_nullability", "name": "v", "nullable": False})
    assert [f["type"] for f in schema["fields"] if f["name"] == "v"] == ["BIGINT NOT NULL"]
    with pytest.raises(JavaError, match="Cannot write null to non-null column"):
        java.write(wh, "db.t", pa.table({"k": [4], "v": [None]}, schema=SCHEMA))
    java.write(wh, "db.t", pa.table({"k": [5], "v": [50]}, schema=STRICT))


@pytest.mark.parametrize("pk", [[], ["k"]], ids=["append", "primary-key"])
def test_java_and_we_read_the_old_null(java: PaimonJava, wh: str, lake: Catalog, pk: list[str]) -> None:
    _java_table(java, wh, pk)
    assert java.read(wh, "db.t", filter=[("v", "is null")]).column("k").to_pylist() == [2]
    assert java.read(wh, "db.t").sort_by("k").column("k").to_pylist() == [1, 2, 3, 5]
    t = lake.get_table("db.t")
    ours = t.to_arrow()
    assert ours.sort_by("k").to_pylist() == EXPECTED and ours.schema.field("v").nullable
    assert t.to_arrow(filter=[("v", "is null")]).column("k").to_pylist() == [2]
    with pytest.raises(InvalidDataError, match="'v' is NOT NULL"):
        t.write_arrow(pa.table({"k": [4], "v": [None]}, schema=SCHEMA))


def test_java_compaction_writes_a_file_it_cannot_read_ours_refuses(java: PaimonJava, wh: str, lake: Catalog) -> None:
    _java_table(java, wh, ["k"])
    t = lake.get_table("db.t")
    (old,) = [e.file.file_name for e in t.store.file_store_scan().live_entries(t.snapshot_manager.latest())
              if e.file.schema_id == 0]
    latest = t.snapshot_manager.latest_id()
    with pytest.raises(InvalidDataError, match=f"Cannot compact db.t: column v became NOT NULL after {old}"):
        t.compact(full=True)
    assert t.snapshot_manager.latest_id() == latest
    assert java.read(wh, "db.t").num_rows == 4  # the table as it was: Java reads it
    # Java 0.9 compacts and commits: the null goes into a required column of the output, which no
    # reader decodes
    java.compact(wh, "db.t")
    assert lake.get_table("db.t").snapshot_manager.latest_id() == latest + 1
    with pytest.raises(JavaError):
        java.read(wh, "db.t")
    with pytest.raises(CorruptMetadataError, match="is corrupt"):
        lake.get_table("db.t").to_arrow()
