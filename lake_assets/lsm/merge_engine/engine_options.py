"""The options of the partial-update and aggregation engines, checked against the table's columns.

Values come parsed from the option registry's typed accessors (`lake_assets.options.CoreOptions`:
``aggregate_function``, ``ignore_retract``, ``list_agg_delimiter``, ``sequence_groups``,
``sequence_fields``); this module only checks what the registry cannot know - that the columns
they name exist, fit the function and are not primary-key columns. Engines are built (and so
these checks run) at create and ALTER and before any write, so a bad option never fails mid-merge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from lake_assets.errors import OptionError
from lake_assets.lsm.merge_engine.aggregate_collection_options import (
    COLLECTION_FUNCTIONS,
    NO_COLLECTION_OPTIONS,
    collection_options,
    refuse_listagg_distinct,
)
from lake_assets.lsm.merge_engine.aggregate_functions import FieldFunction, resolve_function
from lake_assets.options import FIELD_OPTION, CoreOptions

_SUFFIX_AGGREGATE = "aggregate-function"


@dataclass(frozen=True)
class SequenceGroup:
    """Columns that update together, ordered by their own sequence columns."""

    sequence_fields: tuple[str, ...]
    members: tuple[str, ...]


def field_function(options: CoreOptions, column: str, dtype: pa.DataType, name: str) -> FieldFunction:
    """Column ``column``'s aggregate function ``name`` with its per-field options, checked against its type."""
    function = resolve_function(column, dtype, name)
    if function == "listagg":
        refuse_listagg_distinct(options, column)
    collection = NO_COLLECTION_OPTIONS
    if function in COLLECTION_FUNCTIONS:
        collection = collection_options(options, column, dtype, function)
    return FieldFunction(
        column=column,
        function=function,
        ignore_retract=options.ignore_retract(column),
        delimiter=options.list_agg_delimiter(column),
        collection=collection,
    )


def refuse_ignore_retract_with_remove_on_delete(options: CoreOptions, columns: Sequence[str]) -> None:
    """Raise when ``aggregation.remove-record-on-delete`` is set and one of ``columns`` (those Paimon
    builds a field aggregator for) sets ``fields.<c>.ignore-retract``.

    Paimon 1.1+ ``FieldAggregatorFactory.create`` refuses the pair for every aggregator it makes:
    every column of an aggregation table, and on a partial-update table the primary-key columns
    and the columns with an aggregate function (own or ``fields.default-aggregate-function``),
    sequence fields excepted. ``partial-update.remove-record-on-delete`` is not part of that check.
    """
    if not options.aggregation_remove_record_on_delete:
        return
    for name in columns:
        if options.ignore_retract(name):
            raise OptionError(
                f"Options 'aggregation.remove-record-on-delete' and 'fields.{name}.ignore-retract' have "
                "conflicting behavior so should not be enabled at the same time (Paimon 1.1+ refuses "
                "the table too)")


def check_aggregate_options(options: CoreOptions, names: set[str]) -> None:
    """Raise when a ``fields.<c>.aggregate-function`` option names a column the table does not have."""
    for key in options.raw:
        m = FIELD_OPTION.match(key)
        if m and m.group("suffix") == _SUFFIX_AGGREGATE and m.group("field") not in names:
            raise OptionError(f"Option {key!r} names column {m.group('field')!r}, which the table does not have")


def checked_sequence_fields(options: CoreOptions, names: set[str]) -> tuple[str, ...]:
    """The ``sequence.field`` columns, each checked to be a table column."""
    fields = options.sequence_fields
    for f in fields:
        if f not in names:
            raise OptionError(f"Option 'sequence.field' names column {f!r}, which the table does not have")
    return fields


def checked_sequence_groups(
    options: CoreOptions, names: Sequence[str], key_names: Sequence[str]
) -> list[SequenceGroup]:
    """The ``fields.<seq>.sequence-group`` options, validated against the schema: every column
    exists, none is a primary-key column, no column is in two groups."""
    known, keys = set(names), set(key_names)
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for seq, members in options.sequence_groups.items():
        key = f"fields.{','.join(seq)}.sequence-group"
        if not seq or not members:
            raise OptionError(f"Option {key!r} needs sequence fields and at least one column")
        for col in (*seq, *members):
            if col not in known:
                raise OptionError(f"Option {key!r} names column {col!r}, which the table does not have")
            if col in keys:
                raise OptionError(f"Option {key!r}: primary-key column {col!r} cannot be in a sequence group")
        members = tuple(m for m in members if m not in seq)
        for col in (*seq, *members):
            previous = owner.get(col)
            if previous is not None:
                raise OptionError(f"Column {col!r} is used by more than one sequence group ({previous!r}, {key!r})")
            owner[col] = key
        groups.append(SequenceGroup(seq, members))
    return groups
