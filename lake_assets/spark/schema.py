"""Table schemas as Spark sees them, and Arrow data converted at the Spark boundary both ways.

Spark checks a reader's first batch against ``to_arrow_schema(schema, timezone="UTC")`` exactly
(types, nullability, column order), so every batch is cast to that. Paimon TIMESTAMP (no zone)
maps to Spark TIMESTAMP_NTZ and TIMESTAMP_LTZ to Spark TIMESTAMP; Spark has microseconds only.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from lake_assets.spec.row_kind import ROW_KIND, check_row_kind_free

# A column write_table adds for routing rows to one task per bucket; writers drop it.
BUCKET_COLUMN = "__lake_bucket"
# Rows per batch handed to Spark: keeps the JVM's per-batch buffers small for wide files.
MAX_BATCH_ROWS = 64 * 1024


def spark_schema(arrow_schema: pa.Schema, *, with_row_kind: bool = False) -> StructType:
    """The Spark schema of a table's Arrow schema (field metadata is dropped: Spark has no use for it)."""
    plain = pa.schema([pa.field(f.name, f.type, f.nullable) for f in arrow_schema])
    schema = from_arrow_schema(plain)
    if with_row_kind:
        check_row_kind_free(arrow_schema.names, "this table")
        schema = schema.add(StructField(ROW_KIND, StringType(), nullable=False))
    return schema


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The exact Arrow schema Spark expects from a Python reader of ``schema``."""
    return to_arrow_schema(schema, timezone="UTC")


def to_spark_batches(data: pa.Table, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Cast a table read from storage to Spark's declared schema and yield its batches."""
    if data.num_rows == 0:
        return
    columns = [_cast(data.column(f.name), f.type) for f in target]
    out = pa.Table.from_arrays(columns, schema=target)
    yield from out.to_batches(max_chunksize=MAX_BATCH_ROWS)


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if col.type == target:
        return col
    # Widening only (ms → us timestamps, time32 → time64, string views): safe casts suffice.
    return pc.cast(col, target, safe=True)


def from_spark(batches: pa.RecordBatch | list[pa.RecordBatch], table_schema: pa.Schema) -> pa.Table:
    """Prepare batches Spark sends to a writer (one schema) for the core's ``conform``.

    Drops the routing column, and truncates timestamps to the table's precision (Spark always
    sends microseconds in the session time zone; Paimon's Spark writer truncates to the column's
    precision too, where a safe cast would reject sub-millisecond values).
    """
    data = pa.Table.from_batches(batches if isinstance(batches, list) else [batches])
    if BUCKET_COLUMN in data.column_names:
        data = data.drop_columns([BUCKET_COLUMN])
    for i, name in enumerate(data.column_names):
        col = data.column(i)
        idx = table_schema.get_field_index(name)
        if idx < 0 or not pa.types.is_timestamp(col.type):
            continue
        target = table_schema.field(idx).type
        if not pa.types.is_timestamp(target) or (target.tz is None) != (col.type.tz is None):
            continue  # conform reports zone mismatches (local vs instant) itself
        if col.type.tz is not None and col.type.tz != target.tz:
            col = pc.cast(col, pa.timestamp(col.type.unit, tz=target.tz))  # same instants
        if col.type.unit != target.unit and _finer(col.type.unit, target.unit):
            # floor, not toward zero: Paimon's Timestamp.fromMicros floors pre-1970 values too
            col = pc.cast(pc.floor_temporal(col, unit=_UNIT_NAMES[target.unit]), target, safe=False)
        data = data.set_column(i, name, col)
    return data


_UNIT_ORDER = {"s": 0, "ms": 1, "us": 2, "ns": 3}
_UNIT_NAMES = {"s": "second", "ms": "millisecond", "us": "microsecond", "ns": "nanosecond"}


def _finer(a: str, b: str) -> bool:
    return _UNIT_ORDER[a] > _UNIT_ORDER[b]
