"""Row filters: exact tests on partition values, may-match tests on min/max stats, and the
residual pyarrow expression applied to rows that are read.

Filters use pyarrow's ``filters`` convention: a list of ``(column, op, value)`` tuples (AND), or a
list of such lists (OR of ANDs). ``op`` is one of ``= == != < <= > >= in not in``.

FLOAT and DOUBLE columns compare as Paimon's predicates do, with Java's ``compareTo``
(``Double.compare``): NaN equals NaN and is greater than +inf, -0.0 is less than 0.0. IEEE
comparisons (Python's, Arrow's) would let ``k = 0.0`` match -0.0 in one place and not in another
(bucket pruning hashes the bits) and never match NaN, so every test here - on partition values,
on min/max stats and on rows - compares floats through `float_code`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_assets.errors import LakeError
from lake_assets.lsm.key_compare import float_code, float_order_codes

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


def _number(x: Any) -> bool:
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
            if all(x is None or _number(x) for x in lit):
                return float_code(v), [_code(x) for x in lit]
        elif _number(lit):
            return float_code(v), float_code(float(lit))
    except OverflowError:  # an int beyond any double: leave the comparison as it was
        pass
    return v, lit


_VALUE_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "in": lambda v, lit: v in lit, "not in": lambda v, lit: v not in lit,
}


def _compare(op: str, v: Any, lit: Any) -> bool:
    v, lit = _codes(v, lit)
    test = _VALUE_TESTS.get(op)
    if test is None:
        raise FilterError(f"Unknown filter operator {op!r}")
    return test(v, lit)


def _range_may_match(op: str, lo: Any, hi: Any, lit: Any) -> bool:
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
        clauses: tuple[tuple[Any, ...], ...]
        if all(isinstance(t, tuple) for t in filters):
            clauses = (tuple(filters),)
        elif all(isinstance(c, (list, tuple)) and all(isinstance(t, tuple) for t in c) for c in filters):
            clauses = tuple(tuple(c) for c in filters)
        else:
            raise FilterError(f"A filter is a list of (column, op, value) tuples, got {filters!r}")
        for clause in clauses:
            if not clause:
                raise FilterError(f"A filter clause is an empty list (match nothing or everything?): {filters!r}")
            for term in clause:
                if len(term) != 3 or not isinstance(term[0], str) or term[1] not in _OPS:
                    raise FilterError(f"Bad filter term {term!r}: expected (column, op, value) with op in {_OPS}")
        return cls(clauses, None)

    def check(self, schema: pa.Schema, table_name: str) -> None:
        """Refuse terms naming a column ``schema`` lacks or comparing it with a value of another
        type, with a `FilterError`, before any file is read (pyarrow would raise its own errors
        mid-read, or compare nothing)."""
        if self.expression is not None:
            try:
                schema.empty_table().filter(self.expression)  # binds field names and types
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as exc:
                raise FilterError(f"Cannot filter {table_name} by {self.expression}: {exc}") from None
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

    def filter_table(self, data: pa.Table) -> pa.Table:
        """The rows of ``data`` that match, float columns compared as ``Double.compare`` does
        (an Expression given by the caller is applied as it is: its semantics are Arrow's)."""
        if self.expression is not None:
            # Only Arrow's expression engine evaluates an Expression, and its module imports
            # pyarrow.dataset: paid by reads given one, not by tuple filters.
            return data.filter(self.expression)
        if not self.clauses:
            return data
        return data.filter(self.mask(data))

    def mask(self, data: pa.Table) -> pa.ChunkedArray:
        """Whether each row of ``data`` matches (null: it does not), for tuple filters.

        Each term calls the compute kernel `to_expression`'s term names, with the same literal
        conversion (`pa.scalar`, `pa.array`) and so the same implicit casts, and the terms combine
        with Kleene AND/OR as an Expression's ``&``/``|`` do: the rows are `to_expression`'s. A
        Table filtered by an Expression goes through Acero: its module imports pyarrow.dataset
        (and pandas, if nothing did before) into every process that reads with a filter, and each
        call builds an execution plan (0.1-0.3 ms, paid per file and batch); the kernels do
        neither, and take a third to two thirds of the CPU (bench/RESULTS.md, session 11).
        Float columns whose literals are numbers compare by `float_order_codes`."""
        coded = self._coded_columns(data.schema)
        columns: dict[str, pa.ChunkedArray] = {}
        matches: pa.ChunkedArray | None = None
        for clause in self.clauses:
            part: pa.ChunkedArray | None = None
            for name, op, lit in clause:
                if name not in columns:
                    if name not in data.column_names:
                        raise FilterError(f"Cannot filter on {name!r}: the rows read have no such column")
                    column = data.column(name)
                    columns[name] = float_order_codes(column) if name in coded else column
                term_mask = _coded_term_mask if name in coded else _term_mask
                term = term_mask(columns[name], op, lit)
                part = term if part is None else pc.and_kleene(part, term)
            matches = part if matches is None else pc.or_kleene(matches, part)
        if matches is None:  # no clause: every row matches (as in `test_values`)
            return pa.chunked_array([pa.array(np.ones(data.num_rows, dtype=bool))])
        return matches

    def _coded_columns(self, schema: pa.Schema) -> set[str]:
        """Float columns whose literals are all numbers (or None): those compare by codes."""
        out = set()
        for name in self.columns:
            if name not in schema.names or not pa.types.is_floating(schema.field(name).type):
                continue
            lits = []
            for clause in self.clauses:
                for col, op, lit in clause:
                    if col == name:
                        lits += list(lit) if op in ("in", "not in") else [lit]
            if all(x is None or _number(x) for x in lits):
                out.add(name)
        return out

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


_COMPARISONS: dict[str, Callable[..., Any]] = {
    "=": pc.equal, "==": pc.equal, "!=": pc.not_equal,
    "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal,
}


def _term_mask(column: pa.ChunkedArray, op: str, lit: Any) -> pa.ChunkedArray:
    """``column op lit`` as `pq.filters_to_expression`'s term computes it: ``pc.field(c) == lit``
    binds ``pa.scalar(lit)`` to ``equal``, ``isin(lit)`` binds ``pa.array(lit)`` to ``is_in``."""
    if op in ("in", "not in"):
        hit = pc.is_in(column, value_set=lit if isinstance(lit, pa.Array) else pa.array(lit))
        return pc.invert(hit) if op == "not in" else hit
    compare = _COMPARISONS.get(op)
    if compare is None:
        raise FilterError(f"Unknown filter operator {op!r}")
    return compare(column, lit if isinstance(lit, pa.Scalar) else pa.scalar(lit))


def _coded_term_mask(codes: pa.ChunkedArray, op: str, lit: Any) -> pa.ChunkedArray:
    """One term on a float column, on its `float_order_codes` with the literal's codes."""
    if op in ("in", "not in"):
        return _term_mask(codes, op, pa.array([_code(x) for x in lit], pa.uint64()))
    return _term_mask(codes, op, pa.scalar(_code(lit), pa.uint64()))


def dataset_expression(pred: Predicate | None) -> pc.Expression | None:
    return None if pred is None else pred.to_expression()
