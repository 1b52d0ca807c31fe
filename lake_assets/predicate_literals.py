"""Filter literals as values of the column they are compared with.

Paimon's ``PredicateBuilder.convertJavaObject`` converts every literal to its column's type before
comparing: ``((Number) o).longValue()`` for BIGINT, ``doubleValue()`` / ``floatValue()`` for
DOUBLE / FLOAT, ``Decimal.fromBigDecimal`` for DECIMAL, ``o.toString()`` for VARCHAR. Where that
conversion is exact, comparing the converted literal is comparing the literal, and lake_assets
does the same (`bind_literal`). Where it is not, Java's answer is not the literal's, and
lake_assets either compares exactly or refuses the filter up front (`LiteralError`, which
`Predicate.bind` turns into a `FilterError` naming column, type and literal):

* a number between two values of an integer or DECIMAL column, or beyond its range (1.5 for
  BIGINT - Java would truncate it to 1 -, 1.005 for DECIMAL(10, 2) - Java would round it -,
  1e30 for BIGINT) is compared exactly, the term rewritten on the column's values around it
  (`bind_term`: ``k < 1.5`` is ``k <= 1``, ``k = 1.5`` no row), as Flink and Spark SQL do by
  casting the column (they never push such a literal to Paimon); NaN on such a column, a float
  on a DECIMAL column (0.1 is not exactly 0.10: pass a ``decimal.Decimal``) are refused;
* an integer beyond a narrower integer column's range compares as the integer it is (the
  column widens to BIGINT exactly: ``tinyint < 1000`` is every row; Java would wrap 1000);
* a time finer than a TIMESTAMP column's precision compares at its own precision
  (``ts = 12:00:00.0005`` on a millisecond column is no row);
* FLOAT / DOUBLE columns take any number rounded to the column's type, as Java's
  ``floatValue`` / ``doubleValue`` round it: that is the value Java's predicate holds;
* any other mismatch - text for a number or a number for text (Java would compare "5"), a
  boolean for a number, a datetime for a DATE (Java would drop its time), a zoned time for a
  TIMESTAMP without zone or the reverse - is refused.

Without this, Arrow's compute kernels cast implicitly at read time: a float literal on a BIGINT
column casts the column to double, which fails mid-read (``ArrowInvalid``) on a value beyond 2**53
and compares inexactly below it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa

_INT64 = (-(2**63), 2**63 - 1)


class LiteralError(ValueError):
    """A literal that is not a value of its column's type (the message says why)."""


def _a(x: Any) -> str:
    """"an int", "a str": the literal's Python type, for messages."""
    name = type(x).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _is_bool(x: Any) -> bool:
    return isinstance(x, (bool, np.bool_))


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not _is_bool(x)


def _is_real(x: Any) -> bool:
    return isinstance(x, (float, np.floating, decimal.Decimal))


class OffGrid(LiteralError):
    """A number between two values of its column's type (1.5 for BIGINT, 1.005 for
    DECIMAL(10, 2)) or beyond its range: it equals no value, and orders as the greatest value
    below it (``below``) and the least above it (``above``), None where there is none."""

    def __init__(self, below: Any, above: Any) -> None:
        super().__init__("between two values of the column's type, or beyond its range")
        self.below, self.above = below, above


def _grid(x: Any, lo: Any, hi: Any, floor: Any, ceil: Any) -> OffGrid:
    """The `OffGrid` of ``x`` on a grid of values from ``lo`` to ``hi`` (``floor``/``ceil``:
    the grid values at or below / above it)."""
    if _is_real(x) and not isinstance(x, decimal.Decimal) and math.isinf(float(x)):
        return OffGrid(hi, None) if x > 0 else OffGrid(None, lo)
    f, c = floor(x), ceil(x)
    return OffGrid(min(f, hi) if f >= lo else None, max(c, lo) if c <= hi else None)


def _integral(x: Any, typ: pa.DataType) -> int:
    if not (_is_int(x) or _is_real(x)):
        raise LiteralError(f"{_a(x)} is not a number")
    if _is_real(x) and (x.is_nan() if isinstance(x, decimal.Decimal) else math.isnan(float(x))):
        raise LiteralError("NaN is no integer (Paimon would make it 0)")
    if isinstance(x, decimal.Decimal) and x.is_infinite():
        x = float(x)
    exact = int(x) if _is_int(x) else (x if isinstance(x, decimal.Decimal) else float(x))
    if _is_int(x) or (not math.isinf(exact) and exact == math.floor(exact)):
        v = int(exact)
        if _INT64[0] <= v <= _INT64[1]:
            return v
    raise _grid(exact, *_INT64, math.floor, math.ceil)


def _floating(x: Any, typ: pa.DataType) -> float:
    if not (_is_int(x) or _is_real(x)):
        raise LiteralError(f"{_a(x)} is not a number")
    if _is_int(x) and not _INT64[0] <= int(x) <= _INT64[1]:
        raise LiteralError("beyond BIGINT's range (Paimon's literal would wrap)")
    if pa.types.is_float32(typ):
        # Java's floatValue: one rounding, from the long or double itself
        with np.errstate(over="ignore"):
            source = np.int64(int(x)) if _is_int(x) else np.float64(float(x))
            return float(np.float32(source))
    return float(x)


def _decimal(x: Any, typ: pa.Decimal128Type | pa.Decimal256Type) -> decimal.Decimal:
    if _is_int(x):
        d = decimal.Decimal(int(x))
    elif isinstance(x, decimal.Decimal):
        d = x
    elif _is_real(x):
        raise LiteralError("a float is not a decimal (pass a decimal.Decimal)")
    else:
        raise LiteralError(f"{_a(x)} is not a decimal")
    if d.is_nan():
        raise LiteralError("NaN is no decimal")
    step = decimal.Decimal(1).scaleb(-typ.scale)
    top = decimal.Decimal(1).scaleb(typ.precision - typ.scale) - step  # the greatest value
    with decimal.localcontext() as ctx:
        ctx.prec = 200  # Paimon's precision is at most 38: every bound and literal of interest fits
        ctx.traps[decimal.InvalidOperation] = False
        if d.is_infinite():
            raise OffGrid(top, None) if d > 0 else OffGrid(None, -top)
        q = d.quantize(step)
        if q == d and -top <= q <= top:
            return q
        raise _grid(d, -top, top, lambda v: v.quantize(step, decimal.ROUND_FLOOR),
                    lambda v: v.quantize(step, decimal.ROUND_CEILING))


def bind_term(typ: pa.DataType, op: str, value: Any) -> tuple[str, Any]:
    """(op, literal) of a term on a column of type ``typ`` that compares exactly: the literal
    bound (`bind_literal`), or, for a number between two values of an integer or decimal type
    or beyond its range, the term on the values it orders between - ``k < 1.5`` is ``k <= 1``,
    ``k = 1.5`` is ``k in []`` (no row), ``k != 1.5`` is ``k is not null``, and an ``in`` /
    ``not in`` list loses it (it equals no value). `LiteralError` for a literal that is no value
    of the type. (Java's ``longValue()`` would truncate 1.5 to 1: ``k < 1.5`` would lose the
    rows equal to 1; Flink and Spark never push such a literal to Paimon, they cast the column.)"""
    if op in ("is null", "is not null"):
        return op, None
    if op in ("in", "not in"):
        kept = []
        for v in value:
            try:
                kept.append(bind_literal(typ, v))
            except OffGrid:
                continue
        return op, kept
    try:
        return op, bind_literal(typ, value)
    except OffGrid as grid:
        if op in ("=", "=="):
            return "in", []
        if op == "!=":
            return "is not null", None
        bound = grid.below if op in ("<", "<=") else grid.above
        if bound is None:
            return "in", []
        return ("<=" if op in ("<", "<=") else ">="), bound


def plain_type(typ: pa.DataType) -> pa.DataType:
    """A dictionary type's value type (a file read may give a string column dictionary-encoded)."""
    return typ.value_type if pa.types.is_dictionary(typ) else typ


def bind_literal(typ: pa.DataType, value: Any) -> Any:
    """``value`` as the Python value of ``typ`` a filter compares with (None stays None), or
    `LiteralError` when it is not one (see the module's docstring for the exact rules)."""
    typ = plain_type(typ)
    if value is None:
        return None
    if pa.types.is_integer(typ):
        return _integral(value, typ)
    if pa.types.is_floating(typ):
        return _floating(value, typ)
    if pa.types.is_decimal(typ):
        return _decimal(value, typ)
    if pa.types.is_boolean(typ):
        if not _is_bool(value):
            raise LiteralError(f"{_a(value)} is not a boolean")
        return bool(value)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        if not isinstance(value, str):
            raise LiteralError(f"{_a(value)} is not a string (Paimon would compare its text)")
        return str(value)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        if not isinstance(value, (bytes, bytearray)):
            raise LiteralError(f"{_a(value)} is not bytes")
        return bytes(value)
    if pa.types.is_date(typ):
        if not isinstance(value, dt.date) or isinstance(value, dt.datetime):
            raise LiteralError(f"{_a(value)} is not a date (pass a datetime.date)")
        return value
    if pa.types.is_timestamp(typ):
        if not isinstance(value, dt.datetime):
            raise LiteralError(f"{_a(value)} is not a datetime")
        if (value.tzinfo is None) != (typ.tz is None):
            raise LiteralError("a zoned time for a column without a zone" if typ.tz is None
                               else "a naive time for a column with a zone")
        return value
    if pa.types.is_time(typ):
        if not isinstance(value, dt.time) or value.tzinfo is not None:
            raise LiteralError(f"{_a(value)} is not a time of day")
        return value
    raise LiteralError(f"columns of type {typ} cannot be compared with a value")


def literal_scalar(typ: pa.DataType, value: Any) -> pa.Scalar:
    """A bound literal as the scalar a comparison kernel gets: of the column's type, except an
    integer beyond a narrower integer type (BIGINT: the column widens exactly) and a time finer
    than the column's precision (its own: the column's unit widens exactly)."""
    if value is None:
        return pa.scalar(None, typ)
    if pa.types.is_integer(typ):
        try:
            return pa.scalar(value, typ)
        except (pa.ArrowInvalid, OverflowError):
            return pa.scalar(value)
    if pa.types.is_timestamp(typ):
        # pa.scalar truncates a finer time to the unit it is given: the first unit holding the
        # value exactly (a pandas Timestamp may carry nanoseconds, a datetime microseconds)
        for unit in (typ.unit, "ns", "us"):
            try:
                scalar = pa.scalar(value, pa.timestamp(unit, typ.tz))
            except (pa.ArrowInvalid, OverflowError, ValueError):
                continue
            if scalar.as_py() == value:
                return scalar
    return pa.scalar(value, typ)


def value_set(typ: pa.DataType, values: list[Any]) -> pa.Array:
    """The non-null bound literals of an ``in`` list as an array of the column's type; one that is
    no value of the type (an integer beyond its range, a time finer than its precision) equals
    no value of the column and is left out."""
    present = [v for v in values if v is not None]
    if not pa.types.is_timestamp(typ):
        # one conversion when every literal is a value of the type (Arrow refuses an integer
        # beyond it; a bound literal of any other type is one): no scalar per literal and batch
        try:
            return pa.array(present, typ)
        except (pa.ArrowInvalid, OverflowError):
            pass
    kept = []
    for v in present:
        scalar = literal_scalar(typ, v)
        if scalar.type == typ:
            kept.append(scalar)
            continue
        try:
            kept.append(scalar.cast(typ, safe=True))
        except (pa.ArrowInvalid, OverflowError):
            continue
    return pa.array(kept, typ)
