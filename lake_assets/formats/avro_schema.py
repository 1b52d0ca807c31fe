"""Paimon's Avro layout of data files: the Avro schema Java 0.9 writes for a row type, and the
Arrow types that schema decodes to.

As Java's ``AvroSchemaConverter`` writes it: the file's schema is the union ``["null", record]`` of
a record named ``org.apache.paimon.avro.generated.record``; a nullable field is ``["null", T]``
with default null, a NOT NULL one plain ``T``; TINYINT and SMALLINT are ``int``; DECIMAL is
``bytes`` with the ``decimal`` logical type; DATE ``int``/``date``, TIME ``int``/``time-millis``;
TIMESTAMP(p) ``long`` with ``timestamp-millis`` (p <= 3) or ``timestamp-micros``, and
TIMESTAMP_LTZ(p) the ``local-timestamp-*`` ones; a map with CHAR/VARCHAR keys is an Avro ``map``,
any other map an ``array`` of ``{key, value}`` records marked ``"logicalType": "map"``; nested
records are named ``<parent record>_<field>``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.spec.data_types import (
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
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
)

RECORD_NAME = "org.apache.paimon.avro.generated.record"
MAP_LOGICAL_TYPE = "map"


def _nullable(avro: Any, nullable: bool) -> Any:
    return ["null", avro] if nullable else avro


def avro_type(t: DataType, record_name: str) -> Any:
    """The Avro type Java writes for ``t``, ignoring its nullability (the caller wraps it)."""
    match t:
        case BooleanType():
            return "boolean"
        case TinyIntType() | SmallIntType() | IntType():
            return "int"
        case BigIntType():
            return "long"
        case FloatType():
            return "float"
        case DoubleType():
            return "double"
        case CharType() | VarCharType():
            return "string"
        case BinaryType() | VarBinaryType():
            return "bytes"
        case DecimalType(precision=p, scale=s):
            return {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s}
        case DateType():
            return {"type": "int", "logicalType": "date"}
        case TimeType():
            return {"type": "int", "logicalType": "time-millis"}
        case TimestampType(precision=p) if p <= 6:
            return {"type": "long", "logicalType": "timestamp-millis" if p <= 3 else "timestamp-micros"}
        case LocalZonedTimestampType(precision=p) if p <= 6:
            return {"type": "long",
                    "logicalType": "local-timestamp-millis" if p <= 3 else "local-timestamp-micros"}
        case ArrayType(element=e):
            return {"type": "array", "items": _nullable(avro_type(e, record_name), e.nullable)}
        case MapType(key=k, value=v) if isinstance(k, (CharType, VarCharType)):
            return {"type": "map", "values": _nullable(avro_type(v, record_name), v.nullable)}
        case MapType(key=k, value=v):
            return _map_as_array(k, v, record_name)
        case MultisetType(element=e) if isinstance(e, (CharType, VarCharType)):
            return {"type": "map", "values": "int"}
        case MultisetType(element=e):
            return _map_as_array(e, IntType(nullable=False), record_name)
        case RowType(fields=fs):
            return record_schema([(f.name, f.type) for f in fs], record_name)
    raise UnsupportedFeatureError(f"Type {t!r} has no Avro data file mapping in lake_assets")


def _map_as_array(k: DataType, v: DataType, record_name: str) -> dict[str, Any]:
    entry = {"type": "record", "name": record_name, "fields": [
        {"name": "key", "type": avro_type(k, record_name + "_key")},
        _field("value", v, record_name + "_value"),
    ]}
    return {"type": "array", "logicalType": MAP_LOGICAL_TYPE, "items": entry}


def _field(name: str, t: DataType, record_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": _nullable(avro_type(t, record_name), t.nullable)}
    if t.nullable:
        out["default"] = None
    return out


def record_schema(fields: list[tuple[str, DataType]], name: str = RECORD_NAME) -> dict[str, Any]:
    """A record of ``fields``, nested records named after their field as Java names them."""
    return {"type": "record", "name": name,
            "fields": [_field(n, t, f"{name}_{n}") for n, t in fields]}


def file_schema(fields: list[tuple[str, DataType]]) -> list[Any]:
    """The schema of a data file with these columns (the file layout: keys, system, values)."""
    return ["null", record_schema(fields)]


# The union index of a row: the file's schema is ["null", record], and every row Paimon writes is
# the record (branch 1), encoded as the int 1 before the record's fields.
BRANCH_FIELD = "_lake_assets_union_branch"
RECORD_BRANCH = 1


def with_branch_field(record: dict[str, Any]) -> dict[str, Any]:
    """The record with a leading int field that stands for the union index: encoding a row of this
    record with the field set to 1 gives exactly the bytes of the row as ``["null", record]``,
    without fastavro resolving the union row by row (it validates the whole row against each
    branch, which cost more than the encoding)."""
    return {**record, "fields": [{"name": BRANCH_FIELD, "type": "int"}, *record["fields"]]}


# ------------------------------------------------------------------ Avro -> Arrow (what a file holds)

_PRIMITIVES = {
    "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(), "null": pa.null(),
}
_TIMES = {
    "date": pa.date32(), "time-millis": pa.time32("ms"), "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms"), "timestamp-micros": pa.timestamp("us"),
    "timestamp-nanos": pa.timestamp("ns"), "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"), "local-timestamp-nanos": pa.timestamp("ns"),
}


def _unwrap(avro: Any) -> tuple[Any, bool]:
    """(the non-null branch, nullable) of a field type; other unions are not Paimon's."""
    if isinstance(avro, list):
        rest = [b for b in avro if b != "null"]
        if len(rest) != 1:
            raise CorruptMetadataError(f"Avro data file union {avro!r} is not a nullable type")
        return rest[0], len(rest) < len(avro)
    return avro, False


def arrow_types(avro: Any) -> tuple[pa.DataType, pa.DataType]:
    """(raw, logical) Arrow types of an Avro type: raw is what fastavro's records of the schema
    without logical types convert to, logical what the column means."""
    if isinstance(avro, str):
        if avro not in _PRIMITIVES:
            raise CorruptMetadataError(f"Avro data file type {avro!r} is not supported")
        return _PRIMITIVES[avro], _PRIMITIVES[avro]
    if not isinstance(avro, dict):
        raise CorruptMetadataError(f"Avro data file type {avro!r} is not supported")
    kind, logical = avro.get("type"), avro.get("logicalType")
    if kind == "fixed":
        raw: pa.DataType = pa.binary()
    elif kind == "array":
        item, item_null = _unwrap(avro["items"])
        if logical == MAP_LOGICAL_TYPE:
            fields = {f["name"]: f["type"] for f in item["fields"]}
            k_raw, k_log = arrow_types(_unwrap(fields["key"])[0])
            v_type, v_null = _unwrap(fields["value"])
            v_raw, v_log = arrow_types(v_type)
            entry = pa.struct([pa.field("key", k_raw, nullable=False), pa.field("value", v_raw, nullable=v_null)])
            return pa.list_(pa.field("element", entry, nullable=False)), pa.map_(
                k_log, pa.field("value", v_log, nullable=v_null))
        i_raw, i_log = arrow_types(item)
        return (pa.list_(pa.field("element", i_raw, nullable=item_null)),
                pa.list_(pa.field("element", i_log, nullable=item_null)))
    elif kind == "map":
        # decoded through `maps_as_arrays`: a list of {key, value} records
        v_type, v_null = _unwrap(avro["values"])
        v_raw, v_log = arrow_types(v_type)
        entry = pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", v_raw, nullable=v_null)])
        return (pa.list_(pa.field("element", entry, nullable=False)),
                pa.map_(pa.string(), pa.field("value", v_log, nullable=v_null)))
    elif kind == "record":
        raws, logs = [], []
        for f in avro["fields"]:
            ftype, fnull = _unwrap(f["type"])
            r, lg = arrow_types(ftype)
            raws.append(pa.field(f["name"], r, nullable=fnull))
            logs.append(pa.field(f["name"], lg, nullable=fnull))
        return pa.struct(raws), pa.struct(logs)
    elif isinstance(kind, (str, dict)):
        raw = arrow_types(kind)[0]
    else:
        raise CorruptMetadataError(f"Avro data file type {avro!r} is not supported")
    if logical == "decimal":
        return raw, pa.decimal128(int(avro["precision"]), int(avro.get("scale", 0)))
    if logical in _TIMES:
        return raw, _TIMES[logical]
    return raw, raw  # unknown logical types read as their base type, as the Avro spec says


def strip_logical_types(avro: Any) -> Any:
    """The schema with every logical type removed: fastavro then yields raw ints and bytes, which
    Arrow converts in bulk, instead of one Python datetime or Decimal per value."""
    if isinstance(avro, list):
        return [strip_logical_types(a) for a in avro]
    if isinstance(avro, dict):
        out = {k: strip_logical_types(v) for k, v in avro.items() if k != "logicalType"}
        if avro.get("logicalType") and out.get("type") in ("bytes", "int", "long", "fixed"):
            return out["type"] if out.get("type") != "fixed" else out
        return out
    return avro


def maps_as_arrays(avro: Any, prefix: str = "lake_assets_map_entry") -> Any:
    """The schema with every ``map`` spelled as an ``array`` of ``{key: string, value}`` records.

    Both encode to the same bytes (blocks of a count and that many items, ended by 0; an item is
    the key string then the value), and as arrays fastavro reads and writes lists of records,
    which Arrow converts in bulk, instead of one Python dict per map.
    """
    counter = [0]

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if node.get("type") == "map":
            counter[0] += 1
            entry = {"type": "record", "name": f"{prefix}_{counter[0]}",
                     "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": walk(node["values"])}]}
            return {"type": "array", "items": entry}
        return {k: walk(v) for k, v in node.items()}

    return walk(avro)
