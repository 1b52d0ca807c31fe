"""A read pinned to an older schema meeting nulls that a later schema allows.

A stream keeps the schema it started with (as Paimon Java's streams do). When another handle
then makes a NOT NULL column nullable (or drops it) and writes nulls there, the stream's reader
meets files whose nulls its schema cannot hold: Arrow refuses them (a non-nullable field) and a
batch turned nullable for one file would not concatenate with the others. The read stops with a
`SchemaError` naming the column and the schema change, never a raw Arrow error; files without
such nulls read on, and a batch read of the same handle moves to the newer schema and reads them.

Paimon Java 0.9 maps a newer file by field id and passes a null on unchecked
(``SchemaEvolutionUtil.createIndexCastMapping``: no nullability check on read, a dropped column
reads as null); an Arrow batch cannot carry a null in a non-nullable field, so lake_assets stops.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import SchemaError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False)])


def _tables(tmp: Path, primary_keys: list[str]):  # type: ignore[no-untyped-def]
    catalog = Catalog(str(tmp / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=primary_keys,
                             options={"bucket": "1" if primary_keys else "-1"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    return t, catalog.get_table("db.t")


def _read_stream(t, stream) -> list[pa.Table]:  # type: ignore[no-untyped-def]
    reader = t.change_reader(stream=stream)
    return [reader.read(split) for batch in stream.poll(max_snapshots=10) for split in batch.splits]


@pytest.mark.parametrize("primary_keys", [["k"], []], ids=["pk", "append"])
def test_stream_pinned_to_not_null_refuses_nulls_a_later_schema_allows(tmp_path: Path, primary_keys: list[str]) -> None:
    t, other = _tables(tmp_path, primary_keys)
    stream = t.stream(mode="latest-full")
    other.update_schema().update_column_nullability("v", True).commit()
    nullable = pa.schema([SCHEMA.field("k"), pa.field("v", pa.string())])
    other.refresh().write_arrow(pa.table({"k": [3, 4], "v": ["c", "d"]}, schema=nullable))  # no null: reads on
    kept = _read_stream(t, stream)
    assert sorted(k for b in kept for k in b.column("k").to_pylist()) == [1, 2, 3, 4]
    assert all(not b.schema.field("v").nullable for b in kept)  # every batch in the stream's schema
    pa.concat_tables(kept)
    other.refresh().write_arrow(pa.table({"k": [5, 6], "v": [None, "e"]}, schema=nullable))
    with pytest.raises(SchemaError, match=r"Cannot read db\.t with its schema-0: column v is NOT NULL there, but "
                                          r"schema-1 made it nullable and a data file written under it holds nulls"):
        _read_stream(t, stream)
    # a batch read of the same handle reads with the snapshot's schema, the nulls included
    rows = t.to_arrow()
    assert rows.schema.field("v").nullable
    assert sorted(rows.to_pylist(), key=lambda r: r["k"])[4:] == [{"k": 5, "v": None}, {"k": 6, "v": "e"}]


def test_stream_pinned_to_not_null_refuses_a_column_a_later_schema_dropped(tmp_path: Path) -> None:
    t, other = _tables(tmp_path, [])
    stream = t.stream(mode="latest-full")
    assert sum(b.num_rows for b in _read_stream(t, stream)) == 2
    other.update_schema().drop_column("v").commit()
    other.refresh().write_arrow(pa.table({"k": [3]}, schema=pa.schema([SCHEMA.field("k")])))
    with pytest.raises(SchemaError, match=r"column v is NOT NULL there, but schema-1 dropped it"):
        _read_stream(t, stream)
