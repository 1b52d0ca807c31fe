"""Dagster's standard table metadata on the ingest and maintenance assets, and code references (no Spark)."""

import dagster as dg
import pyarrow as pa

from lake_assets.defs.assets.metadata import partition_row_counts, rows_where, table_location, table_state_metadata
from lake_assets.defs.partitions import path_value

STEPS = ("ingest", "compaction", "expiry", "orphans", "changelog")


def test_definitions_carry_table_name_column_schema_and_code_references(core_lake) -> None:
    _, defs = core_lake
    graph = defs.resolve_asset_graph()
    for step in STEPS:
        md = graph.get(dg.AssetKey(["db", f"orders_{step}"])).metadata
        assert md["dagster/table_name"] == "db.orders"
        schema = md["dagster/column_schema"]
        assert [c.name for c in schema.columns] == ["id", "dt", "name", "amount"]
        assert [c.constraints.nullable for c in schema.columns] == [False, False, True, True]
        assert schema.constraints.other == ["primary key (id, dt)"]
        [ref] = md["dagster/code_references"].code_references
        assert ref.file_path.endswith(f"lake_assets/defs/assets/{step}.py") and ref.line_number > 0
    events = graph.get(dg.AssetKey(["db", "events_compaction"])).metadata["dagster/column_schema"]
    assert all(c.constraints.nullable for c in events.columns) and events.constraints.other == []


def _commit(table, ids: list[int]) -> None:
    writer = table.new_writer("md", write_only=True)
    writer.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": ["2024-01-01"] * len(ids),
                                 "name": ["x"] * len(ids), "amount": [1.0] * len(ids)}))
    table.new_committer("md").commit(writer.prepare_commit(), ids[0] + 1)
    writer.close()


def test_row_count_and_uri_only_when_exact(core_lake) -> None:
    config, defs = core_lake
    warehouse = defs.resources["warehouse"]
    spec = config.table("db.orders")
    table = warehouse.ensure_table(spec)
    uri = table_location(warehouse.url, warehouse.table_path(spec.identifier))
    _commit(table, list(range(10)))
    md = table_state_metadata(warehouse.table(spec.identifier), spec, uri)
    assert md["dagster/uri"] == uri and md["dagster/row_count"].value == 10
    _commit(table, list(range(5, 15)))  # overlapping keys in a second run: 20 records, 15 rows
    md = table_state_metadata(warehouse.table(spec.identifier), spec, uri)
    assert "dagster/row_count" not in md
    table = warehouse.table(spec.identifier)
    table.compact(full=True)
    md = table_state_metadata(warehouse.table(spec.identifier), spec, uri)
    assert md["dagster/row_count"].value == 15 == warehouse.table(spec.identifier).to_arrow().num_rows


def test_partition_row_counts_only_where_exact(core_lake) -> None:
    """Per-partition row counts (the ingest's dagster/partition_row_count) from manifests: a partition
    with two overlapping sorted runs in a bucket has no count until a compaction merges them."""
    config, defs = core_lake
    warehouse = defs.resources["warehouse"]
    spec = config.table("db.orders")
    table = warehouse.ensure_table(spec)
    _commit(table, list(range(10)))  # dt=2024-01-01
    writer = table.new_writer("md2", write_only=True)
    writer.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "dt": ["2024-01-02"] * 3,
                                 "name": ["y"] * 3, "amount": [2.0] * 3}))
    table.new_committer("md2").commit(writer.prepare_commit(), 1)
    writer.close()
    counts = partition_row_counts(warehouse.table(spec.identifier))
    assert counts == {"dt=2024-01-01": 10, "dt=2024-01-02": 3}
    assert rows_where(counts, "dt", "2024-01-02") == 3 and rows_where(counts, "dt", "2024-01-09") == 0

    _commit(table, list(range(5, 15)))  # overlaps day 1's keys in a second sorted run: 20 records, 15 rows
    counts = partition_row_counts(warehouse.table(spec.identifier))
    assert counts == {"dt=2024-01-01": None, "dt=2024-01-02": 3}
    assert rows_where(counts, "dt", "2024-01-01") is None
    warehouse.table(spec.identifier).compact(full=True)
    counts = partition_row_counts(warehouse.table(spec.identifier))
    assert counts == {"dt=2024-01-01": 15, "dt=2024-01-02": 3}


def test_append_table_partition_row_counts_are_its_records(core_lake) -> None:
    config, defs = core_lake
    warehouse = defs.resources["warehouse"]
    table = warehouse.ensure_table(config.table("db.events"))
    rows = pa.table({"event_id": pa.array([1, 1, 2], pa.int64()),
                     "day": pa.array([19723, 19723, 19724], pa.int32()).cast(pa.date32()), "kind": ["a", "a", "b"]})
    table.write_arrow(rows)
    table.write_arrow(rows)
    counts = partition_row_counts(warehouse.table("db.events"))
    assert counts == {"day=19723": 4, "day=19724": 2}  # Paimon's legacy partition names: DATE as days
    # the ingest asset finds a day of a DATE partition column by the path's spelling
    assert rows_where(counts, "day", path_value(warehouse.table("db.events"), "day", "2024-01-02")) == 2



def test_ingest_days_of_a_table_with_paimon_1x_partition_names(core_lake) -> None:
    """With ``partition.legacy-name = false`` (Paimon 1.x's cast names) a DATE partition's path value
    is the day itself, and the ingest asset finds its rows by it."""
    config, defs = core_lake
    warehouse = defs.resources["warehouse"]
    spec = config.table("db.events")
    catalog = warehouse.catalog()
    catalog.create_database("db")
    table = catalog.create_table(
        "db.events_cast", spec.arrow_schema, partition_keys=spec.partition_keys,
        options={**spec.options, "partition.legacy-name": "false"})
    rows = pa.table({"event_id": pa.array([1, 1, 2], pa.int64()),
                     "day": pa.array([19723, 19723, 19724], pa.int32()).cast(pa.date32()), "kind": ["a", "a", "b"]})
    table.write_arrow(rows)
    counts = partition_row_counts(warehouse.table("db.events_cast"))
    assert counts == {"day=2024-01-01": 2, "day=2024-01-02": 1}
    assert path_value(table, "day", "2024-01-02") == "2024-01-02"
    assert rows_where(counts, "day", path_value(table, "day", "2024-01-02")) == 1
