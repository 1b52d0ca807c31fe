"""The mapping between Paimon's types and Arrow's, both ways (docs/format.md §2.3).

`to_arrow` gives the Arrow type users see (and Parquet files hold, with ``PARQUET:field_id``
metadata when asked); `from_arrow` the Paimon type of an Arrow type, with nested field ids handed
out pre-order (§2.2).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lake_assets.errors import SchemaError
from lake_assets.spec.data_types import (
    MAX_DECIMAL_PRECISION,
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataField,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    bytes_type,
    string_type,
)

FIELD_ID_KEY = b"PARQUET:field_id"
"""Arrow field metadata key that Parquet writers turn into the Parquet field id."""


def _timestamp_unit(precision: int) -> str:
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


def _to_arrow(dt: DataType, field_ids: bool) -> pa.DataType:
    match dt:
        case BooleanType():
            return pa.bool_()
        case TinyIntType():
            return pa.int8()
        case SmallIntType():
            return pa.int16()
        case IntType():
            return pa.int32()
        case BigIntType():
            return pa.int64()
        case FloatType():
            return pa.float32()
        case DoubleType():
            return pa.float64()
        case DecimalType(precision=p, scale=s):
            return pa.decimal128(p, s)
        case CharType() | VarCharType():
            return pa.string()
        case BinaryType() | VarBinaryType():
            return pa.binary()
        case DateType():
            return pa.date32()
        case TimeType():
            return pa.time32("ms")
        case TimestampType(precision=p):
            return pa.timestamp(_timestamp_unit(p))
        case LocalZonedTimestampType(precision=p):
            return pa.timestamp(_timestamp_unit(p), tz="UTC")
        case ArrayType(element=e):
            return pa.list_(pa.field("element", _to_arrow(e, field_ids), nullable=e.nullable))
        case MultisetType(element=e):
            return pa.map_(
                pa.field("key", _to_arrow(e, field_ids), nullable=False),
                pa.field("value", pa.int32(), nullable=False),
            )
        case MapType(key=k, value=v):
            # Arrow map keys are never null, whatever the Paimon key type says.
            return pa.map_(
                pa.field("key", _to_arrow(k, field_ids), nullable=False),
                pa.field("value", _to_arrow(v, field_ids), nullable=v.nullable),
            )
        case RowType(fields=fs):
            return pa.struct([_to_arrow_field(f, field_ids) for f in fs])
    raise SchemaError(f"Type {dt!r} has no Arrow mapping")


def _to_arrow_field(f: DataField, field_ids: bool) -> pa.Field:
    metadata = {FIELD_ID_KEY: str(f.id).encode()} if field_ids else None
    return pa.field(f.name, _to_arrow(f.type, field_ids), nullable=f.type.nullable, metadata=metadata)


def to_arrow(dt: DataType) -> pa.DataType:
    """The Arrow type users see for a Paimon type."""
    return _to_arrow(dt, False)


def to_arrow_field(f: DataField, field_ids: bool = False) -> pa.Field:
    """Arrow field with the type's nullability; ``field_ids`` adds ``PARQUET:field_id`` metadata."""
    return _to_arrow_field(f, field_ids)


def to_arrow_schema(fields: Any, field_ids: bool = False) -> pa.Schema:
    """Arrow schema of a sequence of DataFields."""
    return pa.schema([_to_arrow_field(f, field_ids) for f in fields])


class FieldIdCounter:
    """Hands out consecutive field ids; ``highest`` is the last id handed out."""

    def __init__(self, start: int = 0) -> None:
        self.next_id = start

    def take(self) -> int:
        """Return the next id and advance."""
        fid = self.next_id
        self.next_id += 1
        return fid

    @property
    def highest(self) -> int:
        return self.next_id - 1


def _time_precision(unit: str) -> int:
    return {"s": 0, "ms": 3, "us": 6, "ns": 9}[unit]


def from_arrow(pa_type: pa.DataType, nullable: bool = True, ids: FieldIdCounter | None = None) -> DataType:
    """Paimon type of an Arrow type; ROW fields take ids from ``ids`` (a fresh counter from 0 if None).

    Raises SchemaError for Arrow types Paimon cannot store (unsigned ints, float16, null, ...).
    """
    if ids is None:
        ids = FieldIdCounter()
    t = pa.types
    if t.is_dictionary(pa_type):
        return from_arrow(pa_type.value_type, nullable, ids)
    if t.is_boolean(pa_type):
        return BooleanType(nullable=nullable)
    if t.is_unsigned_integer(pa_type):
        raise SchemaError(f"Arrow type {pa_type} is unsigned; Paimon has no unsigned integers")
    simple = {
        pa.int8(): TinyIntType,
        pa.int16(): SmallIntType,
        pa.int32(): IntType,
        pa.int64(): BigIntType,
        pa.float32(): FloatType,
        pa.float64(): DoubleType,
    }.get(pa_type)
    if simple is not None:
        return simple(nullable=nullable)
    if t.is_decimal(pa_type):
        if pa_type.precision > MAX_DECIMAL_PRECISION:
            raise SchemaError(f"Arrow type {pa_type} exceeds Paimon's maximum decimal precision 38")
        return DecimalType(pa_type.precision, pa_type.scale, nullable=nullable)
    if t.is_string(pa_type) or t.is_large_string(pa_type) or t.is_string_view(pa_type):
        return string_type(nullable)
    if t.is_binary(pa_type) or t.is_large_binary(pa_type) or t.is_binary_view(pa_type):
        return bytes_type(nullable)
    if t.is_fixed_size_binary(pa_type):
        return BinaryType(pa_type.byte_width, nullable=nullable)
    if t.is_date(pa_type):
        return DateType(nullable=nullable)
    if t.is_time(pa_type):
        return TimeType(_time_precision(pa_type.unit), nullable=nullable)
    if t.is_timestamp(pa_type):
        precision = _time_precision(pa_type.unit)
        if pa_type.tz is not None:
            return LocalZonedTimestampType(precision, nullable=nullable)
        return TimestampType(precision, nullable=nullable)
    if t.is_list(pa_type) or t.is_large_list(pa_type) or t.is_fixed_size_list(pa_type):
        vf = pa_type.value_field
        return ArrayType(from_arrow(vf.type, vf.nullable, ids), nullable=nullable)
    if t.is_map(pa_type):
        kf, itf = pa_type.key_field, pa_type.item_field
        key = from_arrow(kf.type, kf.nullable, ids)
        return MapType(key, from_arrow(itf.type, itf.nullable, ids), nullable=nullable)
    if t.is_struct(pa_type):
        if pa_type.num_fields == 0:
            # Parquet cannot store a group without fields: refused here, not mid-write
            raise SchemaError(f"Arrow type {pa_type} has no fields; a ROW needs at least one")
        fields = []
        for child in pa_type:
            # Pre-order: the field takes its id before its own nested fields do (§2.2).
            fid = ids.take()
            fields.append(DataField(fid, child.name, from_arrow(child.type, child.nullable, ids)))
        return RowType(tuple(fields), nullable=nullable)
    raise SchemaError(f"Arrow type {pa_type} has no Paimon equivalent")


def fields_from_arrow_schema(schema: pa.Schema, start_id: int = 0) -> tuple[list[DataField], int]:
    """DataFields for an Arrow schema, ids depth-first from ``start_id``; also returns the highest id."""
    ids = FieldIdCounter(start_id)
    fields: list[DataField] = []
    for f in schema:
        fid = ids.take()
        fields.append(DataField(fid, f.name, from_arrow(f.type, f.nullable, ids)))
    return fields, ids.highest
