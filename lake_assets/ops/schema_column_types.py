"""Column types in a schema change: the type a user gives, and the type changes ALTER allows.

A new or changed column's type may be given as a pyarrow type, a Paimon `DataType` or Paimon's
type text; its nested ROW fields get fresh ids as Paimon numbers them. A column's type may only
widen losslessly: data files are never rewritten, and readers map old files to the current
schema by field id (docs/format.md §2.4), so every old value must survive the new type exactly.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, SchemaError
from lake_assets.ops.schema_change_model import TypeLike
from lake_assets.spec.arrow_types import FieldIdCounter, from_arrow
from lake_assets.spec.data_types import (
    ArrayType,
    BigIntType,
    CharType,
    DataType,
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
    TinyIntType,
    VarCharType,
)
from lake_assets.spec.type_parser import parse_type

_INT_RANK = {TinyIntType: 0, SmallIntType: 1, IntType: 2, BigIntType: 3}

WIDENINGS = (
    "TINYINT→SMALLINT→INT→BIGINT, TINYINT/SMALLINT/INT→DOUBLE, FLOAT→DOUBLE, DECIMAL(p,s)→DECIMAL(p',s') "
    "with s'≥s and p'-s'≥p-s, CHAR/VARCHAR length up (CHAR→VARCHAR too), TIMESTAMP precision up to 6"
)
"""The type changes `is_lossless_widening` allows, as an error message names them."""


def to_data_type(t: TypeLike, what: str) -> DataType:
    """Paimon type of a user-given type; nested ROW ids are placeholders (see `reassign_ids`)."""
    if isinstance(t, DataType):
        return t
    if isinstance(t, pa.DataType):
        return from_arrow(t)
    if isinstance(t, str):
        try:
            return parse_type(t)
        except CorruptMetadataError as exc:
            raise SchemaError(f"{what}: {exc}") from None
    raise SchemaError(f"{what}: expected a pyarrow type, a Paimon DataType or type text, got {t!r}")


def reassign_ids(dt: DataType, ids: FieldIdCounter) -> DataType:
    """Give every nested ROW field a fresh id, pre-order (a field before its own children)."""
    match dt:
        case RowType(fields=fs):
            out = []
            for f in fs:
                fid = ids.take()
                out.append(dataclasses.replace(f, id=fid, type=reassign_ids(f.type, ids)))
            return dataclasses.replace(dt, fields=tuple(out))
        case ArrayType(element=e):
            return dataclasses.replace(dt, element=reassign_ids(e, ids))
        case MultisetType(element=e):
            return dataclasses.replace(dt, element=reassign_ids(e, ids))
        case MapType(key=k, value=v):
            key = reassign_ids(k, ids)
            return dataclasses.replace(dt, key=key, value=reassign_ids(v, ids))
    return dt


def is_lossless_widening(old: DataType, new: DataType) -> bool:
    """True for the type changes every old value survives exactly (see module docs)."""
    old_n, new_n = old.copy(nullable=True), new.copy(nullable=True)
    if old_n == new_n:
        return True
    old_rank, new_rank = _INT_RANK.get(type(old_n)), _INT_RANK.get(type(new_n))
    if old_rank is not None:
        if new_rank is not None:
            return new_rank > old_rank
        # A double's 53-bit mantissa holds every INT exactly, but not every BIGINT.
        return isinstance(new_n, DoubleType) and old_rank <= _INT_RANK[IntType]
    if isinstance(old_n, FloatType):
        return isinstance(new_n, DoubleType)
    if isinstance(old_n, DecimalType) and isinstance(new_n, DecimalType):
        # Neither the integer digits nor the fraction digits may shrink.
        return new_n.scale >= old_n.scale and new_n.precision - new_n.scale >= old_n.precision - old_n.scale
    if isinstance(old_n, CharType):
        return isinstance(new_n, CharType | VarCharType) and new_n.length >= old_n.length
    if isinstance(old_n, VarCharType):
        return isinstance(new_n, VarCharType) and new_n.length >= old_n.length
    if isinstance(old_n, TimestampType | LocalZonedTimestampType):
        return type(new_n) is type(old_n) and new_n.precision >= old_n.precision
    return False
