"""Dagster's standard table metadata on the maintenance assets, and code references (no Spark)."""

import dagster as dg
import pyarrow as pa

from lake_assets.defs.assets.metadata import table_location, table_state_metadata

MAINTENANCE = ("compaction", "expiry", "orphans", "changelog")


def test_definitions_carry_table_name_column_schema_and_code_references(core_lake) -> None:
    _, defs = core_lake
    graph = defs.resolve_asset_graph()
    for step in MAINTENANCE:
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
