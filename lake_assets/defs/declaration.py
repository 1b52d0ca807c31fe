"""lake.yaml's declaration of a table against the table in storage.

lake.yaml creates a table that does not exist yet and never alters one that does (a table written
by Flink, Spark or pypaimon is the source of truth). A declaration that says something else than
the table would otherwise be ignored without a word: options the user believes the table carries
(a retention, a changelog producer the changelog asset is built for), keys the ingest relies on.
So the maintenance and ingest assets compare the two first and fail, naming every difference,
before any job runs. Columns may differ (schema evolution adds them): that is a warning of the
ingest asset, not a failure.
"""

from __future__ import annotations

from collections.abc import Mapping

from lake_assets.errors import LakeError
from lake_assets.option_rules import FALLBACK_OF, carried_key, rule_for
from lake_assets.option_types import parse_value
from lake_assets.table import Table

# The blocking asset check on each maintenance asset that says whether lake.yaml's declaration matches
# the table (`lake_assets.defs.checks`); the health sensor evaluates it at every tick and the
# automation conditions launch no run while it fails (`lake_assets.defs.automation`).
DECLARATION_CHECK = "declaration"


def _option_value(key: str, text: str | None) -> object:
    """``text`` as the registry parses ``key`` (its default when unset), else the text itself, so
    ``"4"`` and ``"04"`` or ``"TRUE"`` and ``"true"`` are one value, as Paimon reads them."""
    rule = rule_for(key)
    if rule is None:
        return text
    if text is None:
        return rule.default
    try:
        return parse_value(rule, text)
    except LakeError:
        return text


def option_differences(declared: Mapping[str, str], carried: Mapping[str, str]) -> list[str]:
    """One line per option lake.yaml declares with another value than the table carries."""
    problems = []
    for key, text in declared.items():
        # an option set under an older spelling (Paimon's fallback keys, e.g. partial-update.ignore-delete
        # for ignore-delete) is the same option, on either side
        primary = FALLBACK_OF.get(key, key)
        carried_as = carried_key(carried, primary)
        stored = None if carried_as is None else carried[carried_as]
        if _option_value(key, text) == _option_value(key, stored):
            continue
        if stored is None:
            default = _option_value(key, None)
            shown = str(default).lower() if isinstance(default, bool) else repr(default)  # as Paimon spells it
            has = "does not set it" + ("" if default is None else f" (so {shown}, Paimon's default)")
        else:
            has = f"has {stored!r}"
        problems.append(f"option {key}: lake.yaml declares {text!r}, the table {has}")
    return problems


def declaration_differences(
    table: Table, primary_keys: list[str], partition_keys: list[str], options: Mapping[str, str]
) -> list[str]:
    """Every way lake.yaml's keys and options differ from ``table``'s (empty when they agree)."""
    problems = []
    if list(table.primary_keys) != list(primary_keys):
        problems.append(f"primary_keys: lake.yaml declares {list(primary_keys)}, the table has "
                        f"{list(table.primary_keys)}")
    if list(table.partition_keys) != list(partition_keys):
        problems.append(f"partition_keys: lake.yaml declares {list(partition_keys)}, the table has "
                        f"{list(table.partition_keys)}")
    return problems + option_differences(options, table.schema.options)


def mismatch_message(identifier: str, problems: list[str]) -> str:
    """What a run of a table whose declaration differs fails with: the differences and what to do."""
    lines = "\n".join(f"  {p}" for p in problems)
    return (f"lake.yaml's declaration of {identifier} does not match the existing table ({len(problems)} "
            f"difference{'s' if len(problems) > 1 else ''}):\n{lines}\n"
            "lake_assets creates a table from lake.yaml but never alters an existing one: make lake.yaml "
            "say what the table is (or change the table with ALTER TABLE, e.g. "
            "Table.update_schema().set_option(...).commit()).")


def skip_message(identifier: str, problems: list[str]) -> str:
    """Why a schedule or sensor launches no maintenance run of the table: its differences."""
    return f"{identifier}: not requested: lake.yaml's declaration differs from the table: {'; '.join(problems)}"


def declaration_result(
    table: Table, primary_keys: list[str], partition_keys: list[str], options: Mapping[str, str]
) -> tuple[bool, dict[str, str]]:
    """The ``declaration`` check's verdict: whether lake.yaml's keys and options are the table's,
    and the differences as metadata (none when there are none)."""
    problems = declaration_differences(table, primary_keys, partition_keys, options)
    return not problems, ({"differences": "; ".join(problems)} if problems else {})
