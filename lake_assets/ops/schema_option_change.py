"""Table options in a schema change: which ALTER may set or remove, and which name a column.

Some options Paimon never lets ALTER change (`IMMUTABLE_OPTIONS`); ``bucket`` may only go from
one fixed count to another; the rest follow the rules `create_table` applies
(`schema_rules.check_option_change`). Options that name columns keep those columns from being
renamed or dropped (`option_references`). A table refused when it opens for its options' values
(an out-of-range value, contradictory options, an option naming a missing column) can be repaired
by an ALTER of those options (`Catalog.alter_table_options`) when no option ALTER may not change
is among the problems (`repairable_by_alter`, `repair_advice`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lake_assets.errors import LakeError, SchemaError, UnsupportedFeatureError
from lake_assets.options import FIELD_OPTION
from lake_assets.refusal_actions import ACTION_MARK
from lake_assets.schema_rules import check_option_change

IMMUTABLE_OPTIONS: frozenset[str] = frozenset(
    {
        "bucket-key",
        "bucket-function.type",  # @Immutable in Paimon HEAD: existing files are placed by it
        "merge-engine",
        "sequence.snapshot-ordering",
        "rowkind.field",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "aggregation.remove-record-on-delete",
        "primary-key",
        "partition",
        "data-file.path-directory",
        "row-tracking.enabled",
        "data-evolution.enabled",
    }
)
"""Options Paimon never lets ALTER change (docs/format.md §2.3)."""


# What an ALTER of options cannot change on a table: the immutable options, and ``bucket``, which
# goes only from one fixed count to another (Java's checkAlterTableOption parses the old value too).
_NOT_ALTERABLE: frozenset[str] = IMMUTABLE_OPTIONS | {"bucket"}


def repairable_by_alter(options: Mapping[str, str], check: Callable[[dict[str, str]], None]) -> bool:
    """Whether an ALTER of options can make a table whose ``options`` fail ``check`` pass it: with
    every option ALTER may change reset, ``check`` passes, so every problem lies in options the
    user may set or reset. ``check`` raises a `LakeError` for options it refuses."""
    try:
        check({k: v for k, v in options.items() if k in _NOT_ALTERABLE})
    except LakeError:
        return False
    return True


def repair_advice(table: str) -> str:
    """What the user of a table refused for its options' values can do (the refusal's last part)."""
    return (f"{ACTION_MARK}set or reset the options named with lake_assets' "
            f"catalog.alter_table_options({table!r}, set={{...}}, reset=[...]), which opens the table for that "
            "ALTER only and writes the new schema only if its options then pass every check (or ALTER TABLE ... "
            "SET / RESET in Flink, SET / UNSET TBLPROPERTIES in Spark)")


def _split_list(value: str | None) -> list[str]:
    return [s.strip() for s in (value or "").split(",") if s.strip()]


def option_references(options: dict[str, str]) -> dict[str, list[str]]:
    """Column name → option keys that name it (renaming or dropping it would orphan them)."""
    refs: dict[str, list[str]] = {}
    for key, value in options.items():
        cols: list[str] = []
        if key in ("sequence.field", "bucket-key", "partial-update.remove-record-on-sequence-group"):
            cols = _split_list(value)
        elif key == "rowkind.field":
            cols = [value.strip()] if value and value.strip() else []
        else:
            m = FIELD_OPTION.match(key)
            if m:
                cols = m.group("field").split(",")
                if m.group("suffix") == "sequence-group":
                    cols += _split_list(value)
        for c in cols:
            refs.setdefault(c, []).append(key)
    return refs


def check_option_mutable(table: str, original: dict[str, str], key: str, new: str | None) -> None:
    """Refuse setting (``new``) or removing (None) option ``key`` of a table whose options were
    ``original`` before the change, when ALTER may not make that change."""
    old = original.get(key)
    if key in IMMUTABLE_OPTIONS and new != old:
        raise SchemaError(
            f"Cannot change option {key!r} of {table} from {old!r} to {new!r}: it is immutable"
        )
    if key == "bucket" and not _same_int(old, new) and not _fixed_to_fixed(old, new):
        # Paimon allows N -> M (partitions keep their count until overwritten, see
        # ops/bucket_count.py), not to or from dynamic / unaware / postpone modes
        raise UnsupportedFeatureError(
            f"Cannot change option 'bucket' of {table} from {old!r} to {new!r}: that needs a rescale "
            "(rewriting every bucket), which lake_assets does not implement"
        )
    if key == "file.format" and new is None:
        raise SchemaError(f"Cannot remove option 'file.format' of {table}: it is always written explicitly")
    check_option_change(f"Cannot alter {table}", original, key, old, new)


def _fixed_to_fixed(a: str | None, b: str | None) -> bool:
    try:
        return a is not None and b is not None and int(a.strip()) > 0 and int(b.strip()) > 0
    except ValueError:
        return False


def _same_int(a: str | None, b: str | None) -> bool:
    try:
        return a is not None and b is not None and int(a.strip()) == int(b.strip())
    except ValueError:
        return a == b
