"""How one filter term (a leaf, as Paimon calls it) tests a value or a column's stats range.

A term is ``(column, op, literal)`` (`lake_assets.predicate`). These are Paimon's ``LeafFunction``
tests, in SQL's null semantics: a null literal matches nothing (`matches_nothing`); a value test
(`value_matches`) sees non-null values only; a range test (`range_may_match`) says whether a file
or manifest whose column lies in ``[lo, hi]`` may hold a match. Floats compare as Java's
``Double.compare`` does (NaN above +inf and equal to itself, -0.0 below 0.0) through
`float_code`, so a stats test and a row test never disagree on a float.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np

from lake_assets.lsm.key_compare import float_code

NULL_TESTS = ("is null", "is not null")
LISTS = ("in", "not in")


def mismatched(v: Any, lit: Any) -> bool:
    """Values Python would compare without complaint but meaninglessly: a zoned vs a naive time."""
    items = lit if isinstance(lit, (list, tuple, set, frozenset)) else (lit,)
    for x in items:
        if isinstance(v, datetime) and isinstance(x, datetime) and (v.tzinfo is None) != (x.tzinfo is None):
            return True
    return False


def is_number(x: Any) -> bool:
    """An int or float literal (a bool is not a number here)."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _code(x: Any) -> Any:
    """`float_code` of a number (None stays None): Java converts the literal to the column's type."""
    return None if x is None else float_code(float(x))


def _codes(v: Any, lit: Any) -> tuple[Any, Any]:
    """(v, lit) as `float_code` codes when ``v`` is a float and ``lit`` numbers: their order is
    ``Double.compare``'s; otherwise unchanged."""
    if not isinstance(v, float):
        return v, lit
    try:
        if isinstance(lit, (list, tuple, set, frozenset)):
            if all(x is None or is_number(x) for x in lit):
                return float_code(v), [_code(x) for x in lit]
        elif is_number(lit):
            return float_code(v), float_code(float(lit))
    except OverflowError:  # an int beyond any double: leave the comparison as it was
        pass
    return v, lit


_VALUE_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "in": lambda v, lit: v in lit, "not in": lambda v, lit: v not in lit,
}


def matches_nothing(op: str, lit: Any) -> bool:
    """Whether a comparison term matches no row whatever the values: a null literal (SQL's
    unknown, Paimon's ``NullFalseLeafBinaryFunction``), an ``in`` list of nulls only, a ``not in``
    list holding a null (``x not in (1, NULL)`` is never true, as Paimon's ``NotIn.test``)."""
    if op == "in":
        return all(x is None for x in lit)
    if op == "not in":
        return any(x is None for x in lit)
    return op not in NULL_TESTS and lit is None


def _non_null(op: str, lit: Any) -> Any:
    """An ``in`` list without its nulls (they match nothing); other literals as they are."""
    return [x for x in lit if x is not None] if op == "in" else lit


def value_matches(op: str, v: Any, lit: Any) -> bool:
    """``v op lit`` for a non-null value ``v`` and a term that can match something."""
    v, lit = _codes(v, _non_null(op, lit))
    return _VALUE_TESTS[op](v, lit)


def range_may_match(op: str, lo: Any, hi: Any, lit: Any) -> bool:
    """May a non-null value in ``[lo, hi]`` satisfy ``op lit``, for a term that can match something?"""
    lit = _non_null(op, lit)
    if isinstance(lo, float) and isinstance(hi, float):
        # Stats that Arrow's min/max computed do not tell -0.0 from 0.0: widen zero bounds.
        lo = -0.0 if lo == 0.0 else lo
        hi = 0.0 if hi == 0.0 else hi
        coded_lo, coded_lit = _codes(lo, lit)
        if not isinstance(coded_lo, float):  # the literal is numeric: compare codes
            lo, hi, lit = coded_lo, float_code(hi), coded_lit
    if op in ("=", "=="):
        return lo <= lit <= hi
    if op == "!=":
        return not (lo == hi == lit)
    if op == "<":
        return lo < lit
    if op == "<=":
        return lo <= lit
    if op == ">":
        return hi > lit
    if op == ">=":
        return hi >= lit
    if op == "in":
        return any(lo <= x <= hi for x in lit)
    return not any(lo == hi == x for x in lit)  # not in: a file of one value, listed, has no match
