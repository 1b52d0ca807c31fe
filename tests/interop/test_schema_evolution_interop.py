"""pypaimon 2.1.0 reads tables whose schema lake_assets evolved, with files written under several schemas."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.schema_change import SchemaUpdate
from lake_assets.table import Table
from tests.interop.paimon import canonical

pytestmark = pytest.mark.interop

D = decimal.Decimal
SCHEMA = pa.schema([
    ("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("qty", pa.int32()),
    ("price", pa.float32()), ("amount", pa.decimal128(10, 2)), ("gone", pa.string()),
])


def _same(ours: pa.Table, theirs: pa.Table, keys: list[str]) -> None:
    assert ours.schema.names == theirs.schema.names
    assert [f.type for f in ours.schema] == [f.type for f in theirs.schema]
    assert canonical(ours, keys) == canonical(theirs, keys)


def _evolved(warehouse: str) -> Table:
    """Three schemas, data files under each: add + rename (value and key) + widen, then drop + re-add."""
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.ev", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2"})
    t.write_arrow(pa.table({
        "id": [1, 2, 3, 4], "dt": ["a", "a", "b", "b"], "name": ["w", "x", None, "z"], "qty": [1, None, 3, -4],
        "price": [0.5, 1.25, None, -2.0], "amount": [D("1.10"), None, D("-3.30"), D("99999999.99")],
        "gone": ["g1", "g2", "g3", "g4"],
    }, schema=t.arrow_schema))
    (SchemaUpdate(t.store).add_column("note", pa.string(), position=("after", "name")).rename_column("name", "title")
     .rename_column("id", "key").update_column_type("qty", pa.int64()).update_column_type("price", pa.float64())
     .update_column_type("amount", pa.decimal128(12, 2)).commit())
    t.write_arrow(pa.table({
        "key": [2, 5], "dt": ["a", "b"], "title": ["X", "v"], "note": ["upd", "new"], "qty": [2**40, 5],
        "price": [1e200, 5.5], "amount": [D("9999999999.99"), D("5.00")], "gone": [None, "g5"],
    }, schema=t.arrow_schema))
    SchemaUpdate(t.store).drop_column("gone").commit()
    SchemaUpdate(t.store).add_column("gone", pa.string()).move_column("amount", "first").commit()
    t.write_arrow(pa.table({
        "amount": [D("6.00")], "key": [6], "dt": ["a"], "title": ["s"], "note": [None], "qty": [6], "price": [6.0],
        "gone": ["back"],
    }, schema=t.arrow_schema))
    return t


def test_pypaimon_reads_evolved_pk_table(pypaimon, tmp_warehouse):
    t = _evolved(tmp_warehouse)
    ours = t.to_arrow()
    # sanity of our own read: old rows null in added columns, widened values exact, old "gone" values gone
    by_key = {r["key"]: r for r in ours.to_pylist()}
    assert by_key[1]["note"] is None and by_key[2]["title"] == "X" and by_key[2]["qty"] == 2**40
    assert by_key[4]["amount"] == D("99999999.99") and by_key[5]["gone"] is None and by_key[6]["gone"] == "back"
    theirs = pypaimon.read(tmp_warehouse, "db.ev")
    _same(ours, theirs, ["dt", "key"])
    # projections by new names, and the latest snapshot by id
    cols = ["title", "key", "qty", "dt"]
    _same(t.to_arrow(columns=cols), pypaimon.read(tmp_warehouse, "db.ev", columns=cols), ["dt", "key"])
    latest = t.latest_snapshot().id
    _same(t.to_arrow(snapshot_id=latest), pypaimon.read(tmp_warehouse, "db.ev", snapshot_id=latest), ["dt", "key"])


def test_pypaimon_reads_evolved_append_table(pypaimon, tmp_warehouse):
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    t = cat.create_table("db.app", pa.schema([("a", pa.int8()), ("b", pa.float32()), ("c", pa.string())]))
    t.write_arrow(pa.table({"a": [1, -128], "b": [0.25, None], "c": ["x", "y"]}, schema=t.arrow_schema))
    (SchemaUpdate(t.store).update_column_type("a", pa.int32()).update_column_type("b", pa.float64())
     .rename_column("c", "cc").add_column("d", pa.decimal128(5, 1), position="first").commit())
    t.write_arrow(pa.table({"d": [D("1.5")], "a": [2**30], "b": [1e100], "cc": ["z"]}, schema=t.arrow_schema))
    SchemaUpdate(t.store).update_column_type("a", pa.float64()).commit()
    _same(t.to_arrow(), pypaimon.read(tmp_warehouse, "db.app"), ["a"])


def test_time_travel_schema_matches_pypaimon(pypaimon, tmp_warehouse):
    t = _evolved(tmp_warehouse)
    theirs = pypaimon.read(tmp_warehouse, "db.ev", snapshot_id=1)
    # pinned pypaimon behaviour: the snapshot's own schema (schema 0)
    assert theirs.schema.names == SCHEMA.names
    _same(t.to_arrow(snapshot_id=1), theirs, ["dt", "id"])
