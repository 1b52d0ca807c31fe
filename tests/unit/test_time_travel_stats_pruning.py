"""Stats pruning evaluates each file's stats with the schema that wrote it, against a filter in the
read's schema (Paimon's ``SimpleStatsEvolutions``), never through the handle's current names.

The schema evolves between snapshots so that a name of the current schema belongs to another
field id than in the snapshot read (columns renamed across each other, dropped and added again),
or a column is widened: pruning through the current schema would skip files holding matching rows.
"""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog

APPEND = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("w", pa.int64())])


def _rows(table: pa.Table) -> list[dict[str, object]]:
    return sorted(table.to_pylist(), key=lambda r: sorted(r.items()))


def test_time_travel_prunes_by_the_snapshots_field_ids_after_a_drop_and_rename(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", APPEND, options={"bucket": "-1"})
    t.write_arrow(pa.table({"k": [1], "v": [1], "w": [100]}, schema=APPEND))
    # v is dropped and w takes its name: the current "v" is the old file's w (stats 100..100)
    t.update_schema().drop_column("v").rename_column("w", "v").commit()
    t.write_arrow(pa.table({"k": [2], "v": [5]}))
    assert _rows(t.to_arrow(snapshot_id=1, filter=[("v", "=", 1)])) == [{"k": 1, "v": 1, "w": 100}]
    assert _rows(t.to_arrow(snapshot_id=1, filter=[("w", "=", 100)])) == [{"k": 1, "v": 1, "w": 100}]
    assert [s.bucket for s in t.plan(snapshot_id=1, filter=[("v", "=", 1)])] == [0]
    assert t.plan(snapshot_id=1, filter=[("v", "=", 100)]) == []  # still pruned, by the right stats
    # the latest read maps the old file's w to today's v
    assert _rows(t.to_arrow(filter=[("v", "=", 100)])) == [{"k": 1, "v": 100}]
    assert sum(b.num_rows for b in t.to_batches(snapshot_id=1, filter=[("v", "=", 1)])) == 1


def test_time_travel_after_primary_keys_swapped_names(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.int64(), nullable=False),
                        ("x", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["a", "b"], options={"bucket": "1"})
    t.write_arrow(pa.table({"a": [1], "b": [50], "x": ["old"]}, schema=schema))
    t.update_schema().rename_column("a", "tmp").rename_column("b", "a").rename_column("tmp", "b").commit()
    t.write_arrow(pa.table({"b": [2], "a": [60], "x": ["new"]}))
    # key stats of the first file: a in [1, 1], b in [50, 50] as schema-0 names them
    assert _rows(t.to_arrow(snapshot_id=1, filter=[("a", "=", 1)])) == [{"a": 1, "b": 50, "x": "old"}]
    assert _rows(t.to_arrow(snapshot_id=1, filter=[("b", "=", 50)])) == [{"a": 1, "b": 50, "x": "old"}]
    latest = _rows(t.to_arrow(filter=[("a", "=", 50)]))
    assert latest == [{"b": 1, "a": 50, "x": "old"}]


def test_a_column_dropped_and_added_again_has_no_stats_of_the_old_one(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", APPEND, options={"bucket": "-1"})
    t.write_arrow(pa.table({"k": [1], "v": [7], "w": [0]}, schema=APPEND))
    t.update_schema().drop_column("v").commit()
    t.update_schema().add_column("v", pa.int64()).commit()  # same name, new field id
    t.write_arrow(pa.table({"k": [2], "w": [0], "v": [1]}))
    assert _rows(t.to_arrow(snapshot_id=1, filter=[("v", "=", 7)])) == [{"k": 1, "v": 7, "w": 0}]
    # the first file's v is another column: its rows read null and no filter on v keeps them
    assert _rows(t.to_arrow(filter=[("v", "=", 7)])) == []
    assert _rows(t.to_arrow(filter=[("v", "=", 1)])) == [{"k": 2, "w": 0, "v": 1}]


def test_bounds_of_an_int_widened_to_double_compare_as_doubles(catalog: Catalog) -> None:
    """0.0 > -0.0 for Paimon's filters (``Double.compare``): an INT file's bound 0 read as DOUBLE
    must keep the file for ``v > -0.0`` as its row does."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.int32())])
    t = catalog.create_table("db.t", schema, options={"bucket": "-1"})
    t.write_arrow(pa.table({"k": [1], "v": [0]}, schema=schema))
    t.update_schema().update_column_type("v", pa.float64()).commit()
    t.write_arrow(pa.table({"k": [2], "v": [-1.5]}))
    assert _rows(t.to_arrow(filter=[("v", ">", -0.0)])) == [{"k": 1, "v": 0.0}]
    assert _rows(t.to_arrow(snapshot_id=2, filter=[("v", ">", -0.0)])) == [{"k": 1, "v": 0.0}]
    # the INT column of snapshot 1 compares as an INT: 0 > -0.0 is false there, as in Java
    assert _rows(t.to_arrow(snapshot_id=1, filter=[("v", ">", -0.0)])) == []
