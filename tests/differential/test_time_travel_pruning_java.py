"""Filtered time travel across schema changes, against Paimon Java 0.9 (whose reads filter exactly:
a file we prune wrongly shows as a missing row).

Java evolves each file's stats from the schema that wrote it into the read's schema by field id
(``SimpleStatsEvolutions``); a time-travel read's schema is its snapshot's. Pruning with the
current schema's names would skip the first file here: its ``w`` is the current ``v``.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("w", pa.int64())])


@pytest.mark.parametrize("filters", [
    [("v", "=", 1)], [("w", "=", 100)], [("v", "=", 100)], [("v", "<", 5), ("w", ">", 50)], [("k", ">", 1)],
])
def test_time_travel_after_a_drop_and_a_rename_reads_what_java_reads(
    java: PaimonJava, wh: str, lake: Catalog, filters: list[tuple[str, str, int]]
) -> None:
    java.create_table(wh, "db.t", SCHEMA, options={"bucket": "-1"})
    java.write(wh, "db.t", pa.table({"k": [1, 2], "v": [1, 2], "w": [100, 200]}, schema=SCHEMA))
    java.alter_table(wh, "db.t", {"change": "drop_column", "name": "v"})
    java.alter_table(wh, "db.t", {"change": "rename_column", "name": "w", "new_name": "v"})
    java.write(wh, "db.t", [{"k": 3, "v": 1}], schema=pa.schema([("k", pa.int64()), ("v", pa.int64())]))
    t = lake.get_table("db.t")
    expected = java.read(wh, "db.t", snapshot_id=1, filter=filters)
    assert_same_table(t.to_arrow(snapshot_id=1, filter=filters), expected)
    if not any(c == "w" for c, _, _ in filters):  # snapshot 2 was committed under the new names
        expected = java.read(wh, "db.t", snapshot_id=2, filter=filters)
        assert_same_table(t.to_arrow(snapshot_id=2, filter=filters), expected)
    assert java.read(wh, "db.t", snapshot_id=1, filter=[("v", "=", 1)]).num_rows == 1


def test_bounds_of_an_int_column_widened_to_double(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Java 0.9 predates the behaviour we follow for ``v > -0.0``.

    Paimon 0.9 casts a DOUBLE filter's literal to an INT file's type (-0.0 becomes 0) and prunes
    the file holding 0 for ``v > 0``, though its rows read as 0.0, which ``Double.compare`` puts
    above -0.0. Paimon 1.x drops such a filter for files whose type differs
    (``CastExecutors.castLiteralsWithEvolution`` casts integer literals to integer types only), so
    the file is read and its rows filtered: we keep the file, as 1.x."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.int32())])
    java.create_table(wh, "db.t", schema, options={"bucket": "-1"})
    java.write(wh, "db.t", pa.table({"k": [1, 2], "v": [0, 0]}, schema=schema))
    java.alter_table(wh, "db.t", {"change": "update_column_type", "name": "v", "type": pa.float64()})
    java.write(wh, "db.t", [{"k": 3, "v": -1.5}], schema=pa.schema([("k", pa.int64()), ("v", pa.float64())]))
    t = lake.get_table("db.t")
    for f in ([("v", ">=", 0.0)], [("v", "<", 0.0)], [("v", "=", 0.0)], [("v", ">", -1.0)], [("v", "in", [0.0, 8.0])]):
        assert_same_table(t.to_arrow(filter=f), java.read(wh, "db.t", filter=f))
        assert_same_table(t.to_arrow(snapshot_id=1, filter=f), java.read(wh, "db.t", snapshot_id=1, filter=f))
    assert java.read(wh, "db.t", filter=[("v", ">", -0.0)]).num_rows == 0  # 0.9: the INT file pruned
    assert sorted(t.to_arrow(filter=[("v", ">", -0.0)]).column("k").to_pylist()) == [1, 2]
