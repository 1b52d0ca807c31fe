"""Row filters: exact tests on partition values, may-match tests on min/max stats, and the
residual pyarrow expression applied to rows that are read.

Filters use pyarrow's ``filters`` convention: a list of ``(column, op, value)`` tuples (AND), or a
list of such lists (OR of ANDs). ``op`` is one of ``= == != < <= > >= in not in``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from lake_assets.errors import LakeError

_OPS = {"=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"}
Term = tuple[str, str, Any]


class FilterError(LakeError):
    """A filter that is not well formed."""


def _mismatched(v: Any, lit: Any) -> bool:
    """Values Python would compare without complaint but meaninglessly: a zoned vs a naive time."""
    items = lit if isinstance(lit, (list, tuple, set, frozenset)) else (lit,)
    for x in items:
        if isinstance(v, datetime) and isinstance(x, datetime) and (v.tzinfo is None) != (x.tzinfo is None):
            return True
    return False


def _compare(op: str, v: Any, lit: Any) -> bool:
    if op in ("=", "=="):
        return v == lit
    if op == "!=":
        return v != lit
    if op == "<":
        return v < lit
    if op == "<=":
        return v <= lit
    if op == ">":
        return v > lit
    if op == ">=":
        return v >= lit
    if op == "in":
        return v in lit
    if op == "not in":
        return v not in lit
    raise FilterError(f"Unknown filter operator {op!r}")


def _range_may_match(op: str, lo: Any, hi: Any, lit: Any) -> bool:
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
    return True  # "not in" cannot prune on a range


@dataclass(frozen=True)
class Predicate:
    """A filter in disjunctive normal form."""

    clauses: tuple[tuple[Term, ...], ...]
    expression: pc.Expression | None = None

    @classmethod
    def of(cls, filters: Any) -> Predicate | None:
        """Normalize user input (tuples, lists of tuples, or a pyarrow Expression)."""
        if filters is None:
            return None
        if isinstance(filters, pc.Expression):
            return cls((), filters)
        if not isinstance(filters, Sequence) or isinstance(filters, (str, bytes)):
            raise FilterError(f"A filter is a list of (column, op, value) tuples, got {filters!r}")
        if not filters:
            return None
        if all(isinstance(t, tuple) for t in filters):
            clauses = (tuple(filters),)
        elif all(isinstance(c, (list, tuple)) and all(isinstance(t, tuple) for t in c) for c in filters):
            clauses = tuple(tuple(c) for c in filters)
        else:
            raise FilterError(f"A filter is a list of (column, op, value) tuples, got {filters!r}")
        for clause in clauses:
            for term in clause:
                if len(term) != 3 or not isinstance(term[0], str) or term[1] not in _OPS:
                    raise FilterError(f"Bad filter term {term!r}: expected (column, op, value) with op in {_OPS}")
        return cls(clauses, None)

    def check(self, schema: pa.Schema, table_name: str) -> None:
        """Refuse terms naming a column ``schema`` lacks or comparing it with a value of another
        type, with a `FilterError`, before any file is read (pyarrow would raise its own errors
        mid-read, or compare nothing)."""
        for clause in self.clauses:
            for name, op, value in clause:
                if name not in schema.names:
                    raise FilterError(f"Cannot filter {table_name}: no column {name!r} (columns: {schema.names})")
                typ = schema.field(name).type
                if op in ("in", "not in"):
                    if not isinstance(value, (list, tuple, set, frozenset)):
                        raise FilterError(f"Cannot filter {table_name}: {op!r} on {name!r} needs a list, got {value!r}")
                    values = list(value)
                else:
                    values = [value]
                empty = pa.nulls(0, typ)
                for v in values:
                    try:
                        # the comparison the read makes, on no rows: same implicit casts, same refusals
                        pc.equal(empty, pa.scalar(v))
                    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                            OverflowError):
                        raise FilterError(
                            f"Cannot filter {table_name}: {v!r} cannot be compared with column {name!r} ({typ})"
                        ) from None

    @property
    def columns(self) -> set[str]:
        return {t[0] for c in self.clauses for t in c}

    def to_expression(self) -> pc.Expression:
        if self.expression is not None:
            return self.expression
        return pq.filters_to_expression([list(c) for c in self.clauses])

    def test_values(self, values: Mapping[str, Any]) -> bool:
        """Exact test where columns are known (partition values); unknown columns pass."""
        if not self.clauses:
            return True
        for clause in self.clauses:
            ok = True
            for col, op, lit in clause:
                if col not in values:
                    continue
                v = values[col]
                if _mismatched(v, lit):
                    continue  # cannot decide here: the residual filter raises or decides
                try:
                    if v is None or not _compare(op, v, lit):
                        ok = False
                        break
                except TypeError:
                    continue  # incomparable literal: let the residual filter decide
            if ok:
                return True
        return False

    def test_ranges(self, mins: Mapping[str, Any], maxs: Mapping[str, Any]) -> bool:
        """May rows with these per-column [min, max] ranges match? Unknown columns pass."""
        if not self.clauses:
            return True
        for clause in self.clauses:
            ok = True
            for col, op, lit in clause:
                lo, hi = mins.get(col), maxs.get(col)
                if lo is None or hi is None or _mismatched(lo, lit):
                    continue
                try:
                    if not _range_may_match(op, lo, hi, lit):
                        ok = False
                        break
                except TypeError:
                    continue
            if ok:
                return True
        return False

    def equality_values(self, columns: Sequence[str]) -> list[dict[str, Any]] | None:
        """If every clause pins each of ``columns`` by = or in, the combinations; else None."""
        out: list[dict[str, Any]] = []
        for clause in self.clauses:
            pinned: dict[str, list[Any]] = {}
            for col, op, lit in clause:
                if col in columns:
                    if op in ("=", "=="):
                        pinned[col] = [lit]
                    elif op == "in":
                        pinned[col] = list(lit)
            if set(pinned) != set(columns):
                return None
            combos: list[dict[str, Any]] = [{}]
            for col in columns:
                combos = [{**c, col: v} for c in combos for v in pinned[col]]
            out += combos
        return out if self.clauses else None


def dataset_expression(pred: Predicate | None) -> ds.Expression | None:
    return None if pred is None else pred.to_expression()
