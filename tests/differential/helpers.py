"""Comparison helpers for differential tests (order-independent, NaN-aware, schema-tolerant)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa


def _norm(v: Any, t: pa.DataType) -> Any:
    """A comparable stand-in for a value of Arrow type ``t``.

    NaN equals NaN, -0.0 differs from 0.0, and map entries are compared as a set (neither Paimon
    nor Arrow gives map entries an order).
    """
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return ("nan",)
        return ("float", v, math.copysign(1.0, v))
    if pa.types.is_map(t):
        entries = [(_norm(k, t.key_type), _norm(x, t.item_type)) for k, x in v]
        return ("map", tuple(sorted(entries, key=repr)))
    if pa.types.is_struct(t):
        return ("row", tuple(_norm(v[f.name], f.type) for f in t))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ("list", tuple(_norm(x, t.value_type) for x in v))
    return v


def row_set(table: pa.Table, columns: Sequence[str] | None = None) -> list[Any]:
    """The rows of ``table`` (optionally ``columns`` only) as a sorted list of normalized tuples."""
    if columns is not None:
        table = table.select(list(columns))
    types = [f.type for f in table.schema]
    rows = [tuple(_norm(v, t) for v, t in zip(r.values(), types, strict=True)) for r in table.to_pylist()]
    return sorted(rows, key=repr)


def assert_same_rows(actual: pa.Table, expected: pa.Table, columns: Sequence[str] | None = None) -> None:
    """Same multiset of rows (column names must match; Arrow types may differ in nullability only)."""
    cols = list(columns) if columns is not None else expected.column_names
    assert sorted(actual.column_names) == sorted(expected.column_names) or columns is not None, (
        actual.column_names,
        expected.column_names,
    )
    a, e = row_set(actual, cols), row_set(expected, cols)
    if a != e:
        missing = [r for r in e if r not in a][:5]
        extra = [r for r in a if r not in e][:5]
        raise AssertionError(
            f"rows differ: {len(a)} actual vs {len(e)} expected\nmissing (first 5): {missing}\nextra (first 5): {extra}"
        )


def assert_same_table(actual: pa.Table, expected: pa.Table) -> None:
    """Same column names in the same order, same Arrow types, same multiset of rows."""
    assert actual.schema.names == expected.schema.names, (actual.schema.names, expected.schema.names)
    assert [f.type for f in actual.schema] == [f.type for f in expected.schema], (actual.schema, expected.schema)
    assert_same_rows(actual, expected)


def rows_by_bucket(table: Any, snapshot_id: int | None = None) -> dict[tuple[tuple, int], pa.Table]:
    """lake_assets' merged rows of every (partition values, bucket) of a snapshot."""
    from lake_assets.ops.read import SplitReader

    reader = SplitReader(table.store, table.schema, None, None)
    out = {}
    for split in table.plan(snapshot_id=snapshot_id):
        parts = list(reader.read_split(split))
        out[(tuple(split.partition_values), split.bucket)] = (
            pa.concat_tables(parts) if parts else table.arrow_schema.empty_table()
        )
    return out


def compare_every_snapshot(java: Any, wh: str, name: str, table: Any) -> list[int]:
    """Both engines read every live snapshot (and each by its commit time) alike; returns the ids."""
    ids = [s["id"] for s in java.snapshots(wh, name)]
    assert ids == [s.id for s in table.snapshots()]
    for snap in java.snapshots(wh, name):
        sid = snap["id"]
        java_rows = java.read(wh, name, snapshot_id=sid)
        assert_same_table(table.to_arrow(snapshot_id=sid), java_rows)
        # the streaming read (bounded k-way merge, tiny batches) reads the same rows
        streamed = list(table.to_batches(snapshot_id=sid, batch_size=5))
        assert_same_rows(pa.Table.from_batches(streamed) if streamed else table.to_arrow(snapshot_id=sid).slice(0, 0),
                         java_rows)
        by_time = java.read(wh, name, timestamp_millis=snap["timeMillis"])
        assert_same_table(table.to_arrow(timestamp=snap["timeMillis"]), by_time)
    assert_same_table(table.to_arrow(), java.read(wh, name))
    return ids


def write_both(java: Any, wh: str, schema: pa.Schema, options: dict[str, str], data: pa.Table) -> tuple[str, str]:
    """The same rows (their kinds in column ``op``) written once by Java 0.9 and once by lake_assets
    (`write-only`: the flushed level-0 rows stay as the writer merged them), each into its own
    warehouse under ``wh``, as table ``db.t`` keyed by ``k``; returns (Java's, ours)."""
    from lake_assets import Catalog

    theirs, ours = f"{wh}/java", f"{wh}/lake"
    java.create_table(theirs, "db.t", schema, ["k"], [], options)
    java.write(theirs, "db.t", data, kinds=data.column("op").to_pylist())
    catalog = Catalog(ours)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema, primary_keys=["k"], options={**options, "write-only": "true"})
    table.write_arrow(data)
    return theirs, ours
