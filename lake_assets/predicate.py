"""Row filters: exact tests on partition values, may-match tests on min/max stats, and the
residual pyarrow expression applied to rows that are read.

Filters use pyarrow's ``filters`` convention: a list of ``(column, op, value)`` tuples (AND), or a
list of such lists (OR of ANDs). ``op`` is one of ``= == != < <= > >= in not in``, or ``is null`` /
``is not null`` (``(column, "is null")``; a third item, if given, must be None).

Nulls behave as in SQL and in Paimon's predicates (0.9's ``In`` / ``NotIn`` / ``Equal`` ...
``test``): a null value matches no comparison, ``in`` and ``not in`` included; a null literal
matches nothing (``x = None`` is no row, ``x in [1, None]`` is ``x in [1]``, ``x not in [1, None]``
is no row). Only ``is null`` matches null values. Literals are bound to their column's type before
anything is compared (`Predicate.bind`, `lake_assets.predicate_literals`): one that is not a value
of it fails up front with a `FilterError`.

FLOAT and DOUBLE columns compare as Paimon's predicates do, with Java's ``compareTo``
(``Double.compare``): NaN equals NaN and is greater than +inf, -0.0 is less than 0.0. IEEE
comparisons (Python's, Arrow's) would let ``k = 0.0`` match -0.0 in one place and not in another
(bucket pruning hashes the bits) and never match NaN, so every test here - on partition values,
on min/max stats and on rows - compares floats through `float_code`.

How one term tests a value or a stats range is `lake_assets.predicate_leaves`; this module
parses filters and combines their terms (AND within a clause, OR across clauses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import LakeError
from lake_assets.lsm.key_compare import float_order_codes
from lake_assets.predicate_leaves import (
    LISTS,
    NULL_TESTS,
    is_number,
    matches_nothing,
    mismatched,
    range_may_match,
    value_matches,
)
from lake_assets.predicate_literals import LiteralError, bind_term, plain_type
from lake_assets.predicate_rows import coded_term_mask, term_expression, term_mask

__all__ = ["LISTS", "NULL_TESTS", "FilterError", "Predicate", "Term", "dataset_expression", "matches_nothing"]

_OPS = {"=", "==", "!=", "<", "<=", ">", ">=", *LISTS, *NULL_TESTS}
Term = tuple[str, str, Any]


class FilterError(LakeError):
    """A filter that is not well formed."""


def _term_of(term: Any) -> Term:
    """A well-formed term as (column, op, value): a null test's value is None."""
    if not isinstance(term, tuple) or len(term) not in (2, 3) or not isinstance(term[0], str) or term[1] not in _OPS:
        raise FilterError(f"Bad filter term {term!r}: expected (column, op, value) with op in {sorted(_OPS)}")
    if term[1] in NULL_TESTS:
        if len(term) == 3 and term[2] is not None:
            raise FilterError(f"Bad filter term {term!r}: {term[1]!r} takes no value")
        return (term[0], term[1], None)
    if len(term) != 3:
        raise FilterError(f"Bad filter term {term!r}: {term[1]!r} needs a value")
    return (term[0], term[1], term[2])


_BIND_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError)


def _binds(empty: pa.Table, expression: pc.Expression) -> bool:
    try:
        empty.filter(expression)
    except _BIND_ERRORS:
        return False
    return True


def _expression_columns(empty: pa.Table, expression: pc.Expression, names: list[str]) -> list[str]:
    """The columns of ``empty`` (a table with no rows that ``expression`` binds to) that
    ``expression`` refers to. pyarrow does not list an Expression's field references, so this
    finds them by binding it without some columns: halving the candidates, an expression naming
    k of n columns costs about 2k log n binds (on empty tables, no row is read)."""
    if not names or _binds(empty.drop_columns(names), expression):
        return []
    if len(names) == 1:
        return names
    half = len(names) // 2
    return (_expression_columns(empty, expression, names[:half])
            + _expression_columns(empty, expression, names[half:]))


def _referenced(empty: pa.Table, expression: pc.Expression) -> list[str]:
    """The columns of ``empty`` that ``expression`` refers to, searched first among the names its
    text shows (a superset in practice: a narrow table binds in microseconds where a 400-column
    one takes milliseconds), else - a name printed otherwise - among all."""
    text = str(expression)
    hinted = [n for n in empty.column_names if n in text]
    if _binds(empty.select(hinted), expression):
        return _expression_columns(empty.select(hinted), expression, hinted)
    return _expression_columns(empty, expression, list(empty.column_names))


def _type_name(typ: pa.DataType) -> str:
    """Paimon's name of an Arrow type, for messages (Arrow's if it has none)."""
    from lake_assets.spec.types import from_arrow

    try:
        return str(from_arrow(typ))
    except (LakeError, TypeError, ValueError, KeyError):
        return str(typ)


@dataclass(frozen=True)
class Predicate:
    """A filter in disjunctive normal form. ``bound``: the column types its literals were bound
    to (`bind`), None for a filter not bound yet."""

    clauses: tuple[tuple[Term, ...], ...]
    expression: pc.Expression | None = None
    bound: tuple[tuple[str, pa.DataType], ...] | None = None

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
        raw: tuple[tuple[Any, ...], ...]
        if all(isinstance(t, tuple) for t in filters):
            raw = (tuple(filters),)
        elif all(isinstance(c, (list, tuple)) and all(isinstance(t, tuple) for t in c) for c in filters):
            raw = tuple(tuple(c) for c in filters)
        else:
            raise FilterError(f"A filter is a list of (column, op, value) tuples, got {filters!r}")
        for clause in raw:
            if not clause:
                raise FilterError(f"A filter clause is an empty list (match nothing or everything?): {filters!r}")
        return cls(tuple(tuple(_term_of(t) for t in clause) for clause in raw), None)

    def bind(self, schema: pa.Schema, table_name: str) -> Predicate:
        """This filter with every literal bound to its column's type in ``schema``
        (`predicate_literals.bind_literal`: what Paimon's ``PredicateBuilder`` converts it to,
        when that is exact); a `FilterError` naming the column, its type and the literal, before
        any file is read, for a column ``schema`` lacks or a literal that is no value of its
        column (pyarrow would raise mid-read, or compare something else). Reads prune and filter
        with the bound filter: stats, indexes and rows then see the same literals."""
        if self.expression is not None:
            empty = schema.empty_table()
            try:
                empty.filter(self.expression)  # binds field names and types
            except _BIND_ERRORS as exc:
                raise FilterError(f"Cannot filter {table_name} by {self.expression}: {exc}") from None
            # the columns it refers to are read even when not projected (as Paimon's reads do)
            names = _referenced(empty, self.expression)
            return Predicate((), self.expression, tuple((n, schema.field(n).type) for n in names))
        clauses = []
        for clause in self.clauses:
            terms = []
            for name, op, value in clause:
                if name not in schema.names:
                    raise FilterError(f"Cannot filter {table_name}: no column {name!r} (columns: {schema.names})")
                typ = schema.field(name).type
                if op in LISTS and not isinstance(value, (list, tuple, set, frozenset)):
                    raise FilterError(f"Cannot filter {table_name}: {op!r} on {name!r} needs a list, got {value!r}")
                try:
                    terms.append((name, *bind_term(typ, op, value)))
                except LiteralError as exc:
                    bad = next((v for v in (value if op in LISTS else [value]) if _refused(typ, v)), value)
                    raise FilterError(
                        f"Cannot filter {table_name}: {bad!r} is not a value of column {name!r} "
                        f"({_type_name(typ)}): {exc}"
                    ) from None
            clauses.append(tuple(terms))
        types = tuple((n, plain_type(schema.field(n).type)) for n in sorted(self.columns))
        return Predicate(tuple(clauses), None, types)

    @property
    def columns(self) -> set[str]:
        """The columns of the filter's terms (none for an Expression: see `read_columns`)."""
        return {t[0] for c in self.clauses for t in c}

    @property
    def read_columns(self) -> list[str]:
        """The columns a read must decode to apply the filter, whether projected or not: its
        terms' columns, or those a bound Expression refers to."""
        if self.expression is not None:
            return [n for n, _ in self.bound or ()]
        return sorted(self.columns)

    def to_expression(self) -> pc.Expression:
        """The filter as an Arrow Expression with the same null semantics (IEEE float
        comparisons, though: `filter_table` compares floats as ``Double.compare``)."""
        if self.expression is not None:
            return self.expression
        out: pc.Expression | None = None
        for clause in self.clauses:
            part: pc.Expression | None = None
            for name, op, lit in clause:
                term = term_expression(name, op, lit, matches_nothing(op, lit))
                part = term if part is None else part & term
            assert part is not None
            out = part if out is None else out | part
        assert out is not None
        return out

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

    def _bound_to(self, schema: pa.Schema) -> Predicate:
        """This filter bound to ``schema``'s types, unless it is already."""
        if self.bound is not None:
            types = dict(self.bound)
            if all(n in types and n in schema.names and plain_type(schema.field(n).type) == types[n]
                   for n in self.columns):
                return self
        return self.bind(schema, "the rows read")

    def mask(self, data: pa.Table) -> pa.ChunkedArray:
        """Whether each row of ``data`` matches (null: it does not), for tuple filters.

        Each term is one compute kernel on the column (`predicate_rows.term_mask`), its literal
        bound to the column's type, and the terms combine with Kleene AND/OR. A Table filtered by
        an Expression goes through Acero: its module imports pyarrow.dataset (and pandas, if
        nothing did before) into every process that reads with a filter, and each call builds an
        execution plan (0.1-0.3 ms, paid per file and batch); the kernels do neither, and take a
        third to two thirds of the CPU (bench/RESULTS.md, session 11). Float columns whose
        literals are numbers compare by `float_order_codes`."""
        for name in self.columns:
            if name not in data.column_names:
                raise FilterError(f"Cannot filter on {name!r}: the rows read have no such column")
        bound = self._bound_to(data.schema)
        coded = bound._coded_columns(data.schema)
        columns: dict[str, pa.ChunkedArray] = {}
        matches: pa.ChunkedArray | None = None
        for clause in bound.clauses:
            part: pa.ChunkedArray | None = None
            for name, op, lit in clause:
                if name not in columns:
                    column = data.column(name)
                    columns[name] = float_order_codes(column) if name in coded else column
                typ = data.schema.field(name).type
                nothing = matches_nothing(op, lit)
                if name in coded:
                    term = coded_term_mask(columns[name], op, lit, nothing)
                else:
                    term = term_mask(columns[name], typ, op, lit, nothing)
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
                        lits += list(lit) if op in LISTS else [lit]
            if all(x is None or is_number(x) for x in lits):
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
                if op in NULL_TESTS:
                    ok = (v is None) == (op == "is null")
                elif v is None or matches_nothing(op, lit):
                    ok = False
                elif mismatched(v, lit):
                    continue  # cannot decide here: the residual filter raises or decides
                else:
                    try:
                        ok = value_matches(op, v, lit)
                    except TypeError:
                        continue  # incomparable literal: let the residual filter decide
                if not ok:
                    break
            if ok:
                return True
        return False

    def test_ranges(self, mins: Mapping[str, Any], maxs: Mapping[str, Any],
                    null_counts: Mapping[str, int | None] | None = None, row_count: int | None = None) -> bool:
        """May rows with these per-column [min, max] ranges (and null counts, of ``row_count``
        rows) match? Unknown columns, bounds and counts pass. As Paimon's ``LeafFunction`` stats
        tests: ``is null`` needs a null, ``is not null`` and every comparison a non-null value."""
        if not self.clauses:
            return True
        for clause in self.clauses:
            ok = True
            for col, op, lit in clause:
                nulls = None if null_counts is None else null_counts.get(col)
                all_null = nulls is not None and row_count is not None and nulls >= row_count
                if op == "is null":
                    ok = nulls is None or nulls > 0
                elif all_null or matches_nothing(op, lit):
                    ok = False
                elif op == "is not null":
                    continue
                else:
                    lo, hi = mins.get(col), maxs.get(col)
                    if lo is None or hi is None or mismatched(lo, lit):
                        continue
                    try:
                        ok = range_may_match(op, lo, hi, lit)
                    except TypeError:
                        continue
                if not ok:
                    break
            if ok:
                return True
        return False

    def equality_values(self, columns: Sequence[str]) -> list[dict[str, Any]] | None:
        """If every clause pins each of ``columns`` by = or in, the combinations; else None. A
        null literal pins nothing: it matches no row."""
        out: list[dict[str, Any]] = []
        for clause in self.clauses:
            pinned: dict[str, list[Any]] = {}
            for col, op, lit in clause:
                if col in columns:
                    if op in ("=", "=="):
                        pinned[col] = [] if lit is None else [lit]
                    elif op == "in":
                        pinned[col] = [x for x in lit if x is not None]
            if set(pinned) != set(columns):
                return None
            combos: list[dict[str, Any]] = [{}]
            for col in columns:
                combos = [{**c, col: v} for c in combos for v in pinned[col]]
            out += combos
        return out if self.clauses else None


def _refused(typ: pa.DataType, value: Any) -> bool:
    try:
        bind_term(typ, "=", value)
    except LiteralError:
        return True
    return False


def dataset_expression(pred: Predicate | None) -> pc.Expression | None:
    return None if pred is None else pred.to_expression()
