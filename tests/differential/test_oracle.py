"""The oracle itself: values cross the JVM boundary exactly, errors come back structured, and
what Paimon Java 0.9 itself cannot do (recorded here so other tests can rely on the rest)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import JavaError, PaimonJava

from .data import ALL_TYPES, all_types_table
from .helpers import assert_same_rows


def test_every_type_round_trips_through_java_exactly(java: PaimonJava, wh: str) -> None:
    # Avro keeps an all-NULL ROW apart from a NULL ROW in Java 0.9, so this checks the codec alone.
    data = all_types_table()
    java.create_table(wh, "db.avro", ALL_TYPES, primary_keys=["id"], options={"bucket": "2", "file.format": "avro"})
    java.write(wh, "db.avro", data)
    got = java.read(wh, "db.avro")
    assert got.schema == data.schema
    assert_same_rows(got, data)


def test_java_errors_carry_class_and_message(java: PaimonJava, wh: str) -> None:
    with pytest.raises(JavaError) as err:
        java.read(wh, "db.missing")
    assert err.value.java_class == "org.apache.paimon.catalog.Catalog$TableNotExistException"
    assert "db.missing" in err.value.message
    # The JVM is still usable after a failure.
    assert java.call("ping") == "pong"


def test_java_09_parquet_reader_turns_all_null_rows_into_null(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Paimon Java 0.9's Parquet reader reads a ROW whose fields are all NULL as a NULL ROW.

    The files are right (definition levels tell them apart, and we read Java's file back exactly);
    Java 0.9's reader loses the difference. Differential tests therefore compare Java's Parquet
    reads on data without all-NULL ROWs (``all_types_table(all_null_rows=False)``).
    """
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("r", pa.struct([("z", pa.string())]))])
    data = pa.Table.from_pylist([{"id": 1, "r": {"z": None}}, {"id": 2, "r": None}], schema=schema)
    java.create_table(wh, "db.jp", schema, primary_keys=["id"], options={"bucket": "1"})
    java.write(wh, "db.jp", data)
    assert java.read(wh, "db.jp").sort_by("id").column("r").to_pylist() == [None, None]
    assert lake.get_table("db.jp").to_arrow().sort_by("id").column("r").to_pylist() == [{"z": None}, None]


@pytest.mark.parametrize("options", [
    {"changelog-producer": "lookup"},
    {"merge-engine": "first-row", "changelog-producer": "lookup"},
    {"changelog-producer": "full-compaction"},
], ids=["lookup", "first-row", "full-compaction"])
def test_java_writers_needing_an_io_manager_produce_changelogs(java: PaimonJava, wh: str, options: dict) -> None:
    """The oracle gives writers an IOManager (lookup and first-row need one); changelogs read back with kinds."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    java.create_table(wh, "db.c", schema, primary_keys=["id"], options={"bucket": "1", **options})
    full_compaction = options.get("changelog-producer") == "full-compaction"
    java.write(wh, "db.c", pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    if full_compaction:  # changes are diffs between full compactions
        java.compact(wh, "db.c", full=True)
    java.write(wh, "db.c", pa.table({"id": pa.array([1], pa.int64()), "v": ["c"]}))
    if full_compaction:
        java.compact(wh, "db.c", full=True)
    last = java.snapshots(wh, "db.c")[-1]["id"]
    changes = java.read_changes(wh, "db.c", 0, last, mode="changelog")
    kinds = sorted(zip(changes.column("id").to_pylist(), changes.column("_row_kind").to_pylist(), strict=True))
    if options.get("merge-engine") == "first-row":
        assert kinds == [(1, "+I"), (2, "+I")]  # the later row of key 1 is dropped, never a change
    else:
        assert (1, "-U") in kinds and (1, "+U") in kinds
