"""Option parsing of the partial-update and aggregation engines, checked against the schema.

The per-field options (``fields.<c>.aggregate-function``, ``fields.<c>.ignore-retract``,
``fields.<c>.list-agg-delimiter``, ``fields.<seq>.sequence-group``), ``sequence.field`` as those
engines see it and their boolean switches. Values are parsed when an engine is built, so a bad
option fails at create/ALTER and before any write, never mid-merge. (The options the table as a
whole reads - ``merge-engine``, ``ignore-delete`` and its aliases for deduplicate and first-row -
are `lake_assets.options.CoreOptions`'.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lake_assets.errors import OptionError
from lake_assets.lsm.merge_engine.aggregate_functions import FieldFunction, resolve_function

_SEQUENCE_GROUP = re.compile(r"^fields\.(?P<seq>.+)\.sequence-group$")
_AGG_OPTION = re.compile(r"^fields\.(?P<col>[^.]+)\.aggregate-function$")


@dataclass(frozen=True)
class SequenceGroup:
    """Columns that update together, ordered by their own sequence columns."""

    sequence_fields: tuple[str, ...]
    members: tuple[str, ...]


def bool_option(options: Mapping[str, str], key: str) -> bool:
    """A boolean option, false when absent; any other value than true/false raises `OptionError`."""
    raw = options.get(key)
    if raw is None:
        return False
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"Option {key!r} must be 'true' or 'false', not {raw!r}")
    return value == "true"


def split_names(value: str) -> tuple[str, ...]:
    """The names of a comma-separated list, blanks dropped."""
    return tuple(s.strip() for s in value.split(",") if s.strip())


def field_function(options: Mapping[str, str], column: str, dtype: pa.DataType, name: str) -> FieldFunction:
    """Column ``column``'s aggregate function ``name`` with its per-field options, checked against its type."""
    func = resolve_function(column, dtype, name)
    delimiter = options.get(f"fields.{column}.list-agg-delimiter")
    return FieldFunction(
        column=column,
        function=func,
        ignore_retract=bool_option(options, f"fields.{column}.ignore-retract"),
        delimiter="," if delimiter is None else delimiter,
    )


def check_aggregate_options(options: Mapping[str, str], names: set[str]) -> None:
    """Raise when a ``fields.<c>.aggregate-function`` option names a column the table does not have."""
    for key in options:
        m = _AGG_OPTION.match(key)
        if m and m.group("col") not in names:
            raise OptionError(f"Option {key!r} names column {m.group('col')!r}, which the table does not have")


def sequence_fields_option(options: Mapping[str, str], names: set[str]) -> tuple[str, ...]:
    """The ``sequence.field`` columns, each checked to be a table column."""
    fields = split_names(options.get("sequence.field") or "")
    for f in fields:
        if f not in names:
            raise OptionError(f"Option 'sequence.field' names column {f!r}, which the table does not have")
    return fields


def parse_sequence_groups(
    options: Mapping[str, str], names: Sequence[str], key_names: Sequence[str]
) -> list[SequenceGroup]:
    """The ``fields.<seq>.sequence-group`` options, validated against the schema."""
    known, keys = set(names), set(key_names)
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for key in sorted(options):
        m = _SEQUENCE_GROUP.match(key)
        if not m:
            continue
        seq = split_names(m.group("seq"))
        members = split_names(options[key])
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

