"""``DELETE FROM <table> WHERE <condition>`` from Spark, for append tables with deletion vectors.

`delete_where` runs the core's `Table.delete_where` in the driver (it reads only the files that
may hold a matching row and commits their deletion vectors; no Spark job runs) with the condition,
a Spark SQL boolean expression, translated to the core's filter (an OR of ANDs of
``(column, op, value)`` terms) exactly or not at all:

- Spark's own parser reads the condition (``sessionState.sqlParser.parseExpression``, a classic
  session: Spark Connect has no driver-side parser), so its literals are Spark's: ``5``, ``'eu'``,
  ``1.50`` (a DECIMAL), ``DATE '2024-01-01'``, ``TIMESTAMP '...'`` (in the session time zone),
  ``NULL``.
- Translated: comparisons of a top-level column with a literal (``= == != <> < <= > >= <=>``),
  ``[NOT] BETWEEN``, ``[NOT] IN (...)``, ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT``. The core's
  filters have SQL's nulls (`lake_assets.predicate`), so ``NOT`` is pushed down to the terms by
  De Morgan's laws, which hold in three-valued logic, and a row is deleted exactly when Spark's
  ``WHERE`` would select it.
  Column names resolve case-insensitively, as Spark's default analyzer does.
- Refused with a `FilterError` naming the part, before anything is read: functions, arithmetic,
  column-to-column comparisons, nested fields, comparisons on FLOAT/DOUBLE columns (Spark's
  ``-0.0 = 0.0`` is true, the core's ``Double.compare`` is not), literals that are no value of
  their column (`Predicate.bind`). Deleting fewer or other rows than Spark would select is never
  an option.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from lake_assets.catalog import Catalog
from lake_assets.errors import UnsupportedFeatureError
from lake_assets.ops.delete_rows import DeleteResult
from lake_assets.predicate import FilterError

Term = tuple[str, str, Any]
Clauses = list[list[Term]]

# A condition whose OR of ANDs would exceed this many clauses is refused (NOT over ANDs of ORs
# multiplies them out).
MAX_CLAUSES = 256
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<", "in": "not in", "not in": "in",
           "is null": "is not null", "is not null": "is null"}
_COMPARISONS = {"EqualTo": "=", "LessThan": "<", "LessThanOrEqual": "<=", "GreaterThan": ">",
                "GreaterThanOrEqual": ">=", "EqualNullSafe": "<=>"}
_EPOCH = dt.date(1970, 1, 1)


def delete_where(
    spark: SparkSession,
    warehouse: str,
    identifier: str,
    condition: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> DeleteResult:
    """Delete the rows of append table ``identifier`` (``deletion-vectors.enabled``, ``bucket =
    -1`` or ``N``) for which the Spark SQL ``condition`` is true, as ``DELETE FROM ... WHERE condition``
    (see the module docstring for what translates). Returns the core's `DeleteResult`; raises
    `FilterError` for a condition that does not translate and `UnsupportedFeatureError` for
    other tables (as `Table.delete_where`), changing nothing."""
    table = Catalog(warehouse, **dict(storage_options or {})).get_table(identifier)
    clauses = condition_clauses(spark, condition, table.arrow_schema, table.name)
    return table.delete_where(clauses)


def condition_clauses(spark: SparkSession, condition: str, schema: pa.Schema, table_name: str) -> Clauses:
    """The core's filter (OR of ANDs) equal to Spark SQL ``condition`` over ``schema``."""
    if not isinstance(condition, str) or not condition.strip():
        raise FilterError(f"Cannot delete from {table_name}: the condition must be a non-empty SQL string")
    session = getattr(spark, "_jsparkSession", None)
    if session is None:
        raise UnsupportedFeatureError(
            f"Cannot delete from {table_name} through this session: translating a Spark condition needs "
            "Spark's SQL parser in the driver (a classic session, not Spark Connect); call "
            "Table.delete_where with the core's filter instead")
    translator = _Translator(schema, table_name, condition)
    parsed = session.sessionState().sqlParser().parseExpression(condition)
    return translator.clauses(parsed, negated=False)


class _Translator:
    def __init__(self, schema: pa.Schema, table_name: str, condition: str) -> None:
        self.types = {f.name: f.type for f in schema}
        self.lower: dict[str, list[str]] = {}
        for name in self.types:
            self.lower.setdefault(name.lower(), []).append(name)
        self.where = f"Cannot delete from {table_name} where {condition}"

    def refuse(self, expr: Any, why: str) -> FilterError:
        return FilterError(f"{self.where}: {expr.toString()} {why} (translated: comparisons of a column with a "
                           "literal, BETWEEN, IN, IS [NOT] NULL, <=>, AND, OR, NOT)")

    def clauses(self, expr: Any, negated: bool) -> Clauses:
        node, kids = expr.nodeName(), _children(expr)
        if node == "Not":
            return self.clauses(kids[0], not negated)
        if node in ("And", "Or"):
            left, right = (self.clauses(k, negated) for k in kids)
            if (node == "Or") != negated:  # an OR, or a negated AND (De Morgan)
                return left + right
            out = [a + b for a in left for b in right]
            if len(out) > MAX_CLAUSES:
                raise self.refuse(expr, f"expands to more than {MAX_CLAUSES} OR-ed clauses")
            return out
        return self.leaf(expr, node, kids, negated)

    def leaf(self, expr: Any, node: str, kids: list[Any], negated: bool) -> Clauses:
        if node in ("IsNull", "IsNotNull"):
            op = "is null" if node == "IsNull" else "is not null"
            return [[(self.column(kids[0], expr, null_test=True), _NEGATE[op] if negated else op, None)]]
        if node == "In":
            name = self.column(kids[0], expr)
            values = [self.literal(k, expr) for k in kids[1:]]
            return [[(name, "not in" if negated else "in", values)]]
        if node == "UnresolvedFunction" and _function_name(expr) == "between" and len(kids) == 3:
            # x BETWEEN a AND b is x >= a AND x <= b, in three-valued logic too
            name, low, high = self.column(kids[0], expr), self.literal(kids[1], expr), self.literal(kids[2], expr)
            if negated:
                return [[(name, "<", low)], [(name, ">", high)]]
            return [[(name, ">=", low), (name, "<=", high)]]
        if node not in _COMPARISONS:
            raise self.refuse(expr, "cannot be translated")
        op = _COMPARISONS[node]
        left, right = kids
        if _is_literal(left) and not _is_literal(right):
            left, right, op = right, left, _FLIP.get(op, op)
        name, value = self.column(left, expr), self.literal(right, expr)
        if op == "<=>":
            if value is None:  # x <=> NULL is x IS NULL
                return [[(name, "is not null" if negated else "is null", None)]]
            if negated:  # NOT (x <=> v): x differs from v, or x is null
                return [[(name, "!=", value)], [(name, "is null", None)]]
            return [[(name, "=", value)]]
        return [[(name, _NEGATE[op] if negated else op, value)]]

    def column(self, expr: Any, whole: Any, null_test: bool = False) -> str:
        if expr.getClass().getSimpleName() != "UnresolvedAttribute":
            raise self.refuse(whole, "does not compare a column with a literal")
        parts = expr.nameParts()
        if parts.size() != 1:
            raise self.refuse(whole, "names a nested field")
        text = str(parts.apply(0))
        names = [text] if text in self.types else self.lower.get(text.lower(), [])
        if len(names) != 1:
            raise FilterError(f"{self.where}: {'no' if not names else 'more than one'} column {text!r} "
                              f"(columns: {list(self.types)})")
        typ = self.types[names[0]]
        if not null_test and pa.types.is_floating(typ):
            raise self.refuse(whole, f"compares FLOAT/DOUBLE column {names[0]!r}, where Spark's -0.0 = 0.0 "
                              "and lake_assets' (Paimon's Double.compare) differ")
        return names[0]

    def literal(self, expr: Any, whole: Any) -> Any:
        if not _is_literal(expr):
            raise self.refuse(whole, "does not compare a column with a literal")
        value, typ = expr.value(), expr.dataType().typeName()
        if value is None:
            return None
        if typ in ("byte", "short", "integer", "long"):
            return int(value)
        if typ == "boolean":
            return bool(value)
        if typ == "string":
            return str(value.toString())
        if typ.startswith("decimal"):
            return decimal.Decimal(str(value.toString()))
        if typ == "date":
            return _EPOCH + dt.timedelta(days=int(value))
        if typ in ("timestamp", "timestamp_ntz"):
            moment = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value))
            return moment.replace(tzinfo=dt.UTC) if typ == "timestamp" else moment
        raise self.refuse(whole, f"has a {typ} literal, which is not translated")


def _children(expr: Any) -> list[Any]:
    kids = expr.children()
    return [kids.apply(i) for i in range(kids.size())]


def _function_name(expr: Any) -> str:
    parts = expr.nameParts()
    return str(parts.apply(parts.size() - 1)).lower() if parts.size() else ""


def _is_literal(expr: Any) -> bool:
    return bool(expr.nodeName() == "Literal")


__all__ = ["MAX_CLAUSES", "condition_clauses", "delete_where"]
