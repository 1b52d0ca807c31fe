"""``collect`` and ``nested_update`` after a -D reset (``aggregation.remove-record-on-delete``), as
Paimon 1.4.1+/HEAD.

The reset makes the key's row the -D's image as it is (``initRow``); the records after it then
aggregate onto that image: ``agg(image, v)``. `Aggregation.merge` folds the image as a leading
insert instead, ``agg(agg(null, image), v)``, which is the same wherever ``agg(null, image)`` is
the image. For two functions it need not be (HEAD's ``FieldCollectAgg``, ``FieldNestedUpdateAgg``):

- ``collect`` with ``distinct`` over elements Java compares with an equaliser (ROW, ARRAY, MAP,
  MULTISET, BINARY, VARBINARY): an accumulator is never deduplicated, so an image holding an
  element twice keeps both (hashable elements go through a HashSet either way: no difference);
- ``nested_update``: an accumulator of ``count-limit`` rows or more is returned as it is (nulls and
  extra rows included) without a nested key, and all its keys stay with one; a null input returns
  it as it is (null elements included), where ``agg(null, image)`` drops null rows and trims to
  the limit.

`java_after_image` gives Java's value for the reset groups where the two differ (found by folding
each image alone and comparing), record by record; only those groups, rare, take this path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.aggregate_collection_options import CollectionOptions

RESET_SENSITIVE = frozenset({"collect", "nested_update"})


def _uses_equaliser(dtype: pa.DataType) -> bool:
    """Java's FieldCollectAgg.needsEqualiser: CONSTRUCTED or BINARY_STRING element types."""
    element = dtype.value_type
    return bool(pa.types.is_nested(element) or pa.types.is_binary(element) or pa.types.is_large_binary(element)
                or pa.types.is_fixed_size_binary(element))


def _collect(opts: CollectionOptions, equaliser: bool, acc: Any, v: Any, retract: bool) -> Any:
    if retract:
        if acc is None:
            return None
        if not v:
            return acc
        return _remove_once(acc, v)  # each retracted element removes one equal element
    if acc is None and v is None:
        return None
    if not opts.distinct:
        return list(v) if acc is None else list(acc) if v is None else [*acc, *v]
    out: list[Any] = []
    for e in acc or []:  # a HashSet dedups the accumulator; the equaliser's list does not
        if equaliser or e not in out:
            out.append(e)
    for e in v or []:
        if e not in out:
            out.append(e)
    return out


def _remove_once(acc: list[Any], v: list[Any]) -> list[Any]:
    remaining, out = list(v), []
    for e in acc:
        if e in remaining:
            remaining.remove(e)
        else:
            out.append(e)
    return out


class _Nested:
    """HEAD's FieldNestedUpdateAgg.agg / retract over Python rows (dicts)."""

    def __init__(self, column: str, opts: CollectionOptions) -> None:
        self.column, self.opts = column, opts

    def _key(self, row: dict[str, Any]) -> tuple[Any, ...] | None:
        key = tuple(row[f] for f in self.opts.nested_key)
        if None in key and self.opts.nested_key_null_strategy != "merge":
            if self.opts.nested_key_null_strategy == "ignore":
                return None
            raise InvalidDataError(f"Column {self.column!r}: Nested key contains null values. Primary key fields "
                                   f"must not be null ('fields.{self.column}.nested-key-null-strategy' = 'error')")
        return key

    def _seq(self, row: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
        return tuple((row[f] is not None, row[f]) for f in self.opts.nested_sequence_field)

    def _put(self, rows: Sequence[Any], held: dict[Any, dict[str, Any]], limit_new_keys: bool) -> None:
        for row in rows:
            key = None if row is None else self._key(row)
            if key is None:
                continue
            old = held.get(key)
            if old is not None:
                if not self.opts.nested_sequence_field or self._seq(row) >= self._seq(old):
                    held[key] = row
            elif not limit_new_keys or len(held) < self.opts.count_limit:
                held[key] = row

    def step(self, acc: Any, v: Any, retract: bool) -> Any:
        limit = self.opts.count_limit
        if retract:
            if acc is None or v is None:
                return acc
            if not self.opts.nested_key:
                rows = [r for r in acc if r is not None]
                for r in v:
                    if r is not None:
                        rows = [x for x in rows if x != r]
                return rows
            held: dict[Any, dict[str, Any]] = {}
            for r in acc:
                key = None if r is None else self._key(r)
                if key is not None:
                    held[key] = r
            for r in v:
                key = None if r is None else self._key(r)
                held.pop(key, None)
            return list(held.values())
        if v is None:
            return acc
        if not self.opts.nested_key:
            if acc is None:
                return [r for r in v if r is not None][:limit]
            if len(acc) >= limit:
                return acc
            return [r for r in acc if r is not None] + [r for r in v if r is not None][:limit - len(acc)]
        held = {}
        if acc is not None:
            self._put(acc, held, False)
        self._put(v, held, True)
        return list(held.values())


def java_after_image(function: str, opts: CollectionOptions, column: str, dtype: pa.DataType,
                     image: Any, records: Sequence[tuple[Any, bool]]) -> Any:
    """Java's value of ``function`` from the accumulator ``image``, then ``records`` ((value,
    is retraction) in order)."""
    acc = image
    if function == "collect":
        equaliser = _uses_equaliser(dtype)
        for value, retract in records:
            acc = _collect(opts, equaliser, acc, value, retract)
        return acc
    nested = _Nested(column, opts)
    for value, retract in records:
        acc = nested.step(acc, value, retract)
    return acc


__all__ = ["RESET_SENSITIVE", "java_after_image"]
