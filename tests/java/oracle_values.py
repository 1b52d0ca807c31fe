"""The Java oracle's value encoding (see ``Values.java``): Arrow arrays to typed JSON values and back
(floats as round-trip text, decimals as strings, binaries as base64, timestamps as ``[epoch millis,
nano of milli]``, maps as key/value pairs), rows and results, schema-file types and filters."""

from __future__ import annotations

import base64
import decimal
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lake_assets.spec.types import from_arrow, parse_type, to_arrow

Filter = Sequence[Any] | None
"""pyarrow-style filters: ``[(col, op, value), ...]`` (AND) or a list of such lists (OR)."""


# ---------------------------------------------------------------------------------- value codec


def float_text(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


_TS_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def encode_values(arr: pa.Array) -> list[Any]:
    """JSON values of an Arrow array (the encoding Values.fromJson expects), by Arrow type."""
    t = arr.type
    valid = arr.is_valid().to_pylist()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offsets = arr.offsets.to_pylist()  # absolute into .values (unsliced)
        if pa.types.is_map(t):
            entries = arr.values
            keys, items = encode_values(entries.field(0)), encode_values(entries.field(1))
            child: list[Any] = [[k, v] for k, v in zip(keys, items, strict=True)]
        else:
            child = encode_values(arr.values)
        return [child[offsets[i] : offsets[i + 1]] if ok else None for i, ok in enumerate(valid)]
    if pa.types.is_struct(t):
        fields = [encode_values(arr.field(i)) for i in range(t.num_fields)]
        return [[f[i] for f in fields] if ok else None for i, ok in enumerate(valid)]
    if pa.types.is_timestamp(t):
        scale = _TS_NANOS[t.unit]
        out = []
        for v in arr.cast(pa.int64()).to_pylist():
            if v is None:
                out.append(None)
            else:
                nanos = v * scale
                out.append([nanos // 1_000_000, nanos % 1_000_000])
        return out
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_time(t):
        # Paimon keeps TIME as milliseconds of the day whatever its precision.
        per_ms = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}[t.unit]
        ints = arr.cast(pa.int64() if t.bit_width == 64 else pa.int32()).to_pylist()
        if per_ms is None:
            return [None if v is None else v * 1000 for v in ints]
        return [None if v is None else v // per_ms for v in ints]
    if pa.types.is_floating(t):
        return [None if v is None else float_text(v) for v in arr.to_pylist()]
    if pa.types.is_decimal(t):
        return [None if v is None else format(v, "f") for v in arr.to_pylist()]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return [None if v is None else base64.b64encode(v).decode() for v in arr.to_pylist()]
    if pa.types.is_dictionary(t):
        return encode_values(arr.dictionary_decode())
    return arr.to_pylist()


def decode_values(values: list[Any], t: pa.DataType) -> pa.Array:
    """An Arrow array of type ``t`` from JSON values (the encoding Values.toJson produces)."""
    mask = [v is None for v in values]
    if pa.types.is_list(t) or pa.types.is_map(t):
        offsets = [0]
        flat: list[Any] = []
        for v in values:
            flat.extend(v or [])
            offsets.append(len(flat))
        mask_arr = pa.array(mask, pa.bool_()) if any(mask) else None
        if pa.types.is_map(t):
            keys = decode_values([kv[0] for kv in flat], t.key_type)
            items = decode_values([kv[1] for kv in flat], t.item_type)
            return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), keys, items, type=t, mask=mask_arr)
        child = decode_values(flat, t.value_type)
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), child, type=t, mask=mask_arr)
    if pa.types.is_struct(t):
        children = [
            decode_values([None if v is None else v[i] for v in values], t.field(i).type) for i in range(t.num_fields)
        ]
        return pa.StructArray.from_arrays(
            children, fields=list(t), mask=pa.array(mask, pa.bool_()) if any(mask) else None
        )
    if pa.types.is_timestamp(t):
        scale = _TS_NANOS[t.unit]
        ints = [None if v is None else (v[0] * 1_000_000 + v[1]) // scale for v in values]
        return pa.array(ints, pa.int64()).cast(t)
    if pa.types.is_date32(t):
        return pa.array(values, pa.int32()).cast(t)
    if pa.types.is_time32(t) and t.unit == "ms":
        return pa.array(values, pa.int32()).cast(t)
    if pa.types.is_floating(t):
        return pa.array([None if v is None else float(v) for v in values], t)
    if pa.types.is_decimal(t):
        return pa.array([None if v is None else decimal.Decimal(v) for v in values], t)
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.array([None if v is None else base64.b64decode(v) for v in values], t)
    return pa.array(values, t)


def encode_rows(data: pa.Table | pa.RecordBatch | Sequence[Mapping[str, Any]], schema: pa.Schema | None = None):
    """(column names, rows as lists of JSON values) of Arrow data or of a list of dicts (typed by ``schema``)."""
    if not isinstance(data, pa.Table | pa.RecordBatch):
        if schema is None:
            raise TypeError("rows given as dicts need an Arrow schema")
        data = pa.Table.from_pylist(list(data), schema=schema)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    data = data.combine_chunks()
    columns = [encode_values(col.chunk(0) if col.num_chunks else pa.array([], col.type)) for col in data.columns]
    rows = [list(r) for r in zip(*columns, strict=True)] if columns else []
    return data.column_names, rows


def decode_result(result: Mapping[str, Any], with_kinds: bool = False) -> pa.Table:
    """Arrow table of a read result; ``with_kinds`` adds a ``_row_kind`` column (+I, -U, +U, -D)."""
    fields = parse_type(result["type"]).fields
    schema = pa.schema([pa.field(f.name, to_arrow(f.type), nullable=f.type.nullable) for f in fields])
    rows = result["rows"]
    arrays = [decode_values([r[i] for r in rows], f.type) for i, f in enumerate(schema)]
    table = pa.Table.from_arrays(arrays, schema=schema)
    if with_kinds:
        table = table.append_column("_row_kind", pa.array(result["kinds"], pa.string()))
    return table


def paimon_fields(schema: pa.Schema) -> list[dict[str, Any]]:
    """Schema-file JSON types of an Arrow schema, for ``create_table`` (same mapping as lake_assets)."""
    return [{"name": f.name, "type": from_arrow(f.type, f.nullable).to_json()} for f in schema]


def filter_json(filter: Filter) -> list[list[list[Any]]] | None:
    """A filter as a list of AND-clauses of ``[column, op, JSON value]`` (values encoded by their Python type)."""
    if not filter:
        return None
    clauses = [filter] if isinstance(filter[0], tuple | list) and isinstance(filter[0][0], str) else filter
    out = []
    for clause in clauses:
        terms = []
        for term in clause:
            col, op, *rest = term
            value = rest[0] if rest else None
            value = [_literal(v) for v in value] if op in ("in", "not in") else _literal(value)
            terms.append([col, op, value])
        out.append(terms)
    return out


def _literal(v: Any) -> Any:
    """A Python literal in the oracle's JSON value encoding (typed by its Python type)."""
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return float_text(v)
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    return encode_values(pa.array([v]))[0]
