"""Spark's pushed filters → the core's ``(column, op, value)`` terms.

A filter the core cannot express (LIKE, nested columns) stays with Spark. One it can is used to
prune partitions, buckets and files; it is also *claimed* (Spark stops re-checking it) when the
reader's row filter gives exactly SQL's answer. The core's filters have SQL's null semantics (a
null row matches no comparison, ``IN`` ignores a null literal, ``NOT IN`` with one is never true;
`lake_assets.predicate`), so ``IS NULL`` / ``IS NOT NULL`` (on any top-level column), ``<=> NULL``
and ``NOT IN`` are claimed as they are. Comparisons are claimed for integers, booleans, decimals,
strings, binary, dates and timestamps. Floating-point columns are left alone for comparisons:
Spark's ``-0.0 = 0.0`` is true, the core's (Paimon's ``Double.compare``) is not.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
)

from lake_assets.errors import OptionError
from lake_assets.predicate import NULL_TESTS

Term = tuple[str, str, Any]
Clauses = list[list[Term]]  # OR of ANDs

_COMPARISONS: dict[type, str] = {
    EqualTo: "=",
    EqualNullSafe: "=",  # with a non-null literal, <=> is = (a null column is false in both)
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


@dataclass
class PushedFilters:
    """The outcome of `push_filters`: terms to apply, and the Spark filters to hand back."""

    terms: list[Term] = field(default_factory=list)
    rejected: list[Filter] = field(default_factory=list)


def _exact_type(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t)
        or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
        or pa.types.is_large_binary(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
    )


def _literal(value: Any, t: pa.DataType) -> Any:
    """The literal as the Python value the core compares with (raises if it does not fit)."""
    if value is None:
        raise ValueError("null literal")
    if pa.types.is_timestamp(t) and isinstance(value, dt.datetime):
        # Spark sends TIMESTAMP literals as aware UTC datetimes and TIMESTAMP_NTZ ones as naive;
        # the core decodes partition values the same way, so the two compare without surprises.
        if (t.tz is None) != (value.tzinfo is None):
            raise ValueError("time zone mismatch")
        # Kept at Spark's microseconds: cast to a millisecond column it would be rounded, and
        # ts = 12:00:00.0005 would match 12:00:00.000.
        return value
    return pa.scalar(value, type=t).as_py()


def translate(f: Filter, types: dict[str, pa.DataType]) -> list[Term] | None:
    """Terms (ANDed) equivalent to ``f`` under SQL semantics, or None if there are none."""
    try:
        if isinstance(f, Not):
            return _translate_not(f.child, types)
        if isinstance(f, (IsNull, IsNotNull)):
            return _null_test(f.attribute, "is null" if isinstance(f, IsNull) else "is not null", types)
        if isinstance(f, EqualNullSafe) and f.value is None:
            return _null_test(f.attribute, "is null", types)  # x <=> NULL is x IS NULL
        op = _COMPARISONS.get(type(f))
        if op is not None:
            t = _column_type(f.attribute, types)  # type: ignore[attr-defined]
            if t is None:
                return None
            return [(f.attribute[0], op, _literal(f.value, t))]  # type: ignore[attr-defined]
        if isinstance(f, In):
            t = _column_type(f.attribute, types)
            if t is None:
                return None
            # x IN (1, NULL) is true for 1 and never true otherwise: the NULL adds nothing.
            values = [_literal(v, t) for v in f.value if v is not None]
            return [(f.attribute[0], "in", values)]
    except (ValueError, TypeError, pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    return None


def _translate_not(child: Filter, types: dict[str, pa.DataType]) -> list[Term] | None:
    if isinstance(child, (IsNull, IsNotNull)):
        return _null_test(child.attribute, "is not null" if isinstance(child, IsNull) else "is null", types)
    if isinstance(child, EqualTo):
        t = _column_type(child.attribute, types)
        return None if t is None else [(child.attribute[0], "!=", _literal(child.value, t))]
    if isinstance(child, In):
        t = _column_type(child.attribute, types)
        if t is None or not child.value:
            return None
        # SQL's NOT IN, the core's too: a null row is no match, and a NULL in the list (never
        # true) makes the term match no row
        return [(child.attribute[0], "not in", [None if v is None else _literal(v, t) for v in child.value])]
    return None


def _null_test(attribute: Sequence[str], op: str, types: dict[str, pa.DataType]) -> list[Term] | None:
    """``IS NULL`` / ``IS NOT NULL`` of a top-level column of any type (NaN is not null in
    Spark, nor in the core)."""
    if len(attribute) != 1 or attribute[0] not in types:
        return None
    return [(attribute[0], op, None)]


def _column_type(attribute: Sequence[str], types: dict[str, pa.DataType]) -> pa.DataType | None:
    if len(attribute) != 1:
        return None  # nested field
    t = types.get(attribute[0])
    return t if t is not None and _exact_type(t) else None


def push_filters(filters: Sequence[Filter], types: dict[str, pa.DataType]) -> PushedFilters:
    """Split ``filters`` into the terms we apply exactly and the filters Spark must keep."""
    out = PushedFilters()
    not_null: list[IsNotNull] = []
    for f in filters:
        if isinstance(f, IsNotNull):
            not_null.append(f)
            continue
        terms = translate(f, types)
        if terms is None:
            out.rejected.append(f)
        else:
            out.terms.extend(terms)
    # Spark adds IS NOT NULL next to every comparison; a claimed comparison already drops nulls,
    # so such an IS NOT NULL is implied and claimed with it, without a term of its own.
    compared = {t[0] for t in out.terms if t[1] not in NULL_TESTS}
    for f in not_null:
        if len(f.attribute) == 1 and f.attribute[0] in compared:
            continue
        terms = translate(f, types)
        if terms is None:
            out.rejected.append(f)
        else:
            out.terms.extend(terms)
    return out


def parse_filter_option(text: str, types: dict[str, pa.DataType]) -> Clauses:
    """The ``filter`` read option: JSON ``[[col, op, value], ...]`` (AND) or a list of such lists
    (OR of ANDs), the core's filter convention. Text values are parsed as the column's type
    (``"2024-01-01"`` for a date), so dates, timestamps and decimals can be written in JSON."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"Option 'filter' is not JSON: {exc}") from None
    if not isinstance(data, list) or not data:
        raise OptionError(f"Option 'filter' must be a non-empty JSON list of [column, op, value], got {text!r}")
    clauses = [data] if all(_is_term(t) for t in data) else data
    out: Clauses = []
    for clause in clauses:
        if not isinstance(clause, list) or not clause or not all(_is_term(t) for t in clause):
            raise OptionError(f"Option 'filter': expected [column, op, value] terms, got {clause!r}")
        out.append([_term(t, types) for t in clause])
    return out


def _is_term(t: Any) -> bool:
    """``[column, op, value]``, or ``[column, "is null"]`` / ``[column, "is not null"]``."""
    if not (isinstance(t, list) and t and isinstance(t[0], str)):
        return False
    return (len(t) == 3 and isinstance(t[1], str)) or (len(t) == 2 and t[1] in NULL_TESTS)


def _term(t: list, types: dict[str, pa.DataType]) -> Term:
    col, op, value = t if len(t) == 3 else (*t, None)
    if col not in types:
        raise OptionError(f"Option 'filter': the table has no column {col!r}")
    if op in NULL_TESTS:
        if value is not None:
            raise OptionError(f"Option 'filter': {op!r} takes no value, got {value!r}")
        return (col, op, None)
    typ = types[col]
    values = value if op in ("in", "not in") else [value]
    if not isinstance(values, list):
        raise OptionError(f"Option 'filter': {op!r} needs a list, got {value!r}")
    try:
        converted = pa.array(values).cast(typ).to_pylist() if values else []
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise OptionError(f"Option 'filter': {value!r} is not a {typ} for column {col!r}: {exc}") from None
    return (col, op, converted if op in ("in", "not in") else converted[0])
