"""One filter term on the rows read: a compute kernel per term, SQL's null semantics.

A null value matches no comparison (``=`` ... ``in``, ``not in``): ``is_in`` gives false for a
null value when the set holds no null, and ``not in`` is ``is_in`` inverted and ANDed with
``is_valid``. A term that matches nothing whatever the values (``Predicate``'s
``matches_nothing``: a null literal, ``not in`` with a null) is an all-false mask. Literals come
bound to the column's type (`lake_assets.predicate_literals`), so a kernel never casts a column
implicitly (a BIGINT column cast to DOUBLE raises on a value beyond 2**53).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.lsm.key_compare import float_code
from lake_assets.predicate_literals import literal_scalar, plain_type, value_set

_COMPARISONS: dict[str, Any] = {
    "=": pc.equal, "==": pc.equal, "!=": pc.not_equal,
    "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal,
}


def _none(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return pa.chunked_array([pa.array(np.zeros(len(column), dtype=bool))])


def _lookup(column: pa.ChunkedArray, op: str, values: pa.Array) -> pa.ChunkedArray:
    hit = pc.is_in(column, value_set=values)
    return pc.and_(pc.invert(hit), pc.is_valid(column)) if op == "not in" else hit


def _null_test(column: pa.ChunkedArray, op: str) -> pa.ChunkedArray:
    # a NaN is a value, not a null (as in Paimon and SQL)
    return pc.is_null(column) if op == "is null" else pc.is_valid(column)


def term_mask(column: pa.ChunkedArray, typ: pa.DataType, op: str, lit: Any, nothing: bool) -> pa.ChunkedArray:
    """``column op lit`` (``column`` of Arrow type ``typ``, a dictionary-encoded one included)."""
    if op in ("is null", "is not null"):
        return _null_test(column, op)
    if nothing:
        return _none(column)
    typ = plain_type(typ)
    if op in ("in", "not in"):
        return _lookup(column, op, value_set(typ, list(lit)))
    return _COMPARISONS[op](column, literal_scalar(typ, lit))


def coded_term_mask(codes: pa.ChunkedArray, op: str, lit: Any, nothing: bool) -> pa.ChunkedArray:
    """One term on a float column, on its `float_order_codes` with the literal's codes."""
    if op in ("is null", "is not null"):
        return _null_test(codes, op)
    if nothing:
        return _none(codes)
    if op in ("in", "not in"):
        return _lookup(codes, op, pa.array([float_code(float(x)) for x in lit if x is not None], pa.uint64()))
    return _COMPARISONS[op](codes, pa.scalar(float_code(float(lit)), pa.uint64()))


def term_expression(name: str, op: str, lit: Any, nothing: bool) -> pc.Expression:
    """The term as an Arrow Expression with the same null semantics (IEEE float comparisons)."""
    field = pc.field(name)
    if op == "is null":
        return field.is_null()
    if op == "is not null":
        return field.is_valid()
    if nothing:
        return pc.scalar(False)
    if op in ("in", "not in"):
        values = [x for x in lit if x is not None]
        hit = field.isin(values)
        return (~hit & field.is_valid()) if op == "not in" else hit
    scalar = lit if isinstance(lit, pa.Scalar) else pa.scalar(lit)
    return {"=": field == scalar, "==": field == scalar, "!=": field != scalar, "<": field < scalar,
            "<=": field <= scalar, ">": field > scalar, ">=": field >= scalar}[op]
