"""Checking and casting incoming Arrow data to a table's schema before anything is written."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError, SchemaError
from lake_assets.spec.schema import TableSchema

ROW_KINDS = ("+I", "-U", "+U", "-D")


def _castable(src: pa.DataType, dst: pa.DataType) -> bool:
    """Casts we accept silently: same family, checked for loss at run time (safe cast)."""
    if src == dst:
        return True
    families = (
        (pa.types.is_integer, pa.types.is_integer),
        (pa.types.is_integer, pa.types.is_floating),
        (pa.types.is_integer, pa.types.is_decimal),
        (pa.types.is_floating, pa.types.is_floating),
        (pa.types.is_decimal, pa.types.is_decimal),
        (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t),
         pa.types.is_string),
        (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
         or pa.types.is_binary_view(t), pa.types.is_binary),
        (pa.types.is_timestamp, pa.types.is_timestamp),
        (pa.types.is_date, pa.types.is_date),
        (pa.types.is_time, pa.types.is_time),
        (pa.types.is_dictionary, lambda t: True),
        (pa.types.is_null, lambda t: True),
    )
    for src_ok, dst_ok in families:
        if src_ok(src) and dst_ok(dst):
            # local vs instant semantics differ: refuse rather than guess
            return not (pa.types.is_timestamp(src) and pa.types.is_timestamp(dst)
                        and (src.tz is None) != (dst.tz is None))
    return pa.types.is_nested(src) and pa.types.is_nested(dst)


def conform(data: pa.Table, schema: TableSchema, table_name: str) -> pa.Table:
    """Return ``data`` with exactly the table's columns, order and types, or raise naming the problem."""
    target = schema.arrow_schema
    names = data.column_names
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise SchemaError(f"Cannot write to {table_name}: duplicate columns {dup}")
    missing = [n for n in target.names if n not in names]
    extra = [n for n in names if not schema.has_field(n)]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unknown columns {extra}")
        raise SchemaError(f"Cannot write to {table_name}: input has {' and '.join(parts)}")
    arrays = []
    for field in target:
        col = data.column(field.name)
        if not _castable(col.type, field.type):
            raise SchemaError(
                f"Cannot write to {table_name}: column {field.name!r} has type {col.type}, "
                f"table expects {field.type}"
            )
        if col.type != field.type:
            try:
                col = pc.cast(col, field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise InvalidDataError(
                    f"Cannot write to {table_name}: column {field.name!r} has values that do not fit "
                    f"{field.type}: {exc}"
                ) from exc
        if not field.nullable and col.null_count:
            role = "primary key " if field.name in schema.primary_keys else ""
            raise InvalidDataError(
                f"Cannot write to {table_name}: {role}column {field.name!r} is NOT NULL "
                f"but {col.null_count} input rows are null"
            )
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=target)


def row_kinds(data: pa.Table, schema: TableSchema, table_name: str) -> np.ndarray:
    """Row kind per input row (0..3) from ``rowkind.field``, or all +I without it."""
    field = schema.core_options.rowkind_field
    n = data.num_rows
    if field is None:
        return np.zeros(n, dtype=np.int8)
    if not schema.has_field(field):
        raise SchemaError(f"Table {table_name}: rowkind.field {field!r} is not a column")
    idx = pc.index_in(data.column(field), value_set=pa.array(ROW_KINDS))
    if idx.null_count:
        bad = pc.unique(pc.filter(data.column(field), pc.is_null(idx))).to_pylist()[:5]
        raise InvalidDataError(
            f"Cannot write to {table_name}: column {field!r} holds row kinds {bad}; "
            f"expected one of {list(ROW_KINDS)}"
        )
    return idx.to_numpy(zero_copy_only=False).astype(np.int8)
