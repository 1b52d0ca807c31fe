"""``docs/options.md``, generated from the option registry (`lake_assets.option_rules`).

``python -m lake_assets.option_docs`` rewrites the file; a unit test asserts that the checked-in
file is what the registry generates, so the documentation cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from lake_assets.durations import UNIT_LABELS
from lake_assets.option_rules import RULES, rule_for
from lake_assets.option_rules_fields import FIELD_RULES
from lake_assets.option_rules_file_index import FILE_INDEX_COLUMN_RULES, OTHER_TYPE_COLUMNS
from lake_assets.option_rules_formats import COLUMN_FORMAT_RULES
from lake_assets.option_types import INT_MAX, SIZE_UNIT_LABELS, MiB, OptionRule

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "options.md"

_KIND_TEXT = {
    "int": "int", "long": "long", "size": "memory size", "duration": "duration", "bool": "boolean",
    "enum": "enum", "ratio": "ratio (0..1)", "string": "string",
}


def _default(rule: OptionRule) -> str:
    d = rule.default
    if d is None:
        return "—"
    if isinstance(d, bool):
        return "true" if d else "false"
    if rule.kind == "size" and isinstance(d, int):
        if d % MiB == 0:
            return f"{d // MiB} mb"
        return f"{d // 1024} kb" if d % 1024 == 0 else f"{d} b"
    if rule.kind == "duration" and isinstance(d, int):
        for unit, ms in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
            if d and d % ms == 0:
                return f"{d // ms} {unit}"
        return f"{d} ms"
    if d == INT_MAX:
        return "2147483647"
    return str(d)


def _support(rule: OptionRule, key: str) -> str:
    parts: list[str] = []
    if rule.supported is not None:
        values = ", ".join(f"`{v}`" for v in rule.supported)
        parts.append(f"only {values}" if values else "refused whenever set")
        if rule.why:
            parts.append(rule.why)
        if rule.refuses:
            carrying = "tables carrying another value" if rule.supported else "tables carrying it"
            parts.append(f"{carrying}: refused for " + ", ".join(n.lower() for n in rule.refuses))
        if rule.action:
            # the row's key as the table lists it (`file-index.<type>.<column>.<option>`)
            parts.append(f"what to do: {dataclasses.replace(rule, key=key).advice()}")
    if rule.lake_assets_only:
        parts.append("lake_assets option")
    if rule.note:
        parts.append(rule.note)
    if rule.writer_only:
        refused = ", ".join(n.lower() for n in rule.refuses or ("WRITE", "COMPACT"))
        parts.append(f"a carried value that does not parse refuses {refused} only")
    if rule.fallback_keys:
        keys = ", ".join(f"`{k}`" for k in rule.fallback_keys)
        parts.append(f"fallback keys {keys}: read when the key is unset, the first one set wins (Paimon's "
                     "Options.get); each is validated and refused as the key")
    return "; ".join(parts) or "yes"


def _row(key: str, rule: OptionRule) -> str:
    kind = _KIND_TEXT[rule.kind]
    if rule.choices:
        kind += ": " + " / ".join(rule.choices)
    if rule.minimum is not None:
        kind += f", ≥ {rule.minimum}"
    cells = (f"`{key}`", kind, _default(rule), rule.description, _support(rule, key))
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def render() -> str:
    """The text of ``docs/options.md``."""
    head = [
        "# Table options",
        "",
        "Generated from the option registry (`lake_assets/option_rules.py`) by",
        "`python -m lake_assets.option_docs`; do not edit by hand.",
        "",
        "Every option a table carries is checked against its row when the table is created or",
        "altered, all problems in one error (`OptionError`, or `UnsupportedFeatureError` for a",
        "value lake_assets does not implement). A key not listed here is refused at create and",
        "ALTER; on a table another engine wrote, it refuses writes and maintenance (see",
        "`lake_assets/table_support.py`), except unlisted `parquet.*`, `orc.*` and `avro.*` keys",
        "(options of a format's writer), which refuse only writes and compaction of tables writing",
        "that format. *Support* says how lake_assets honours an option when",
        "that is not simply as Paimon does (\"yes\").",
        "",
        "Durations use Paimon's grammar: a whole number and an optional unit (none: milliseconds),",
        "units " + ", ".join(f"`{u}`" for u in UNIT_LABELS) + ".",
        "Memory sizes use Paimon's grammar too: a whole number and an optional unit (none: bytes),",
        "units " + ", ".join(f"`{u}`" for u in SIZE_UNIT_LABELS) + ".",
        "",
        "| Key | Type | Default | Description | Support |",
        "|---|---|---|---|---|",
    ]
    # each fallback key right after its option's row, described as standing in for it
    rows = [_row(k, rule_for(k) or rule) for key, rule in RULES.items() for k in (key, *rule.fallback_keys)]
    fields = [
        "",
        "## Per-field options",
        "",
        "Keys `fields.<column>.<suffix>` (`sequence-group` also `fields.<a>,<b>.sequence-group`); the",
        "columns must exist. Keys `file-index.<type>.<column>.<option>` tune the index of a column that",
        "`file-index.<type>.columns` lists (docs/format.md §7.6).",
        "",
        "| Key | Type | Default | Description | Support |",
        "|---|---|---|---|---|",
    ]
    field_rows = [_row(f"fields.<column>.{suffix}", rule) for suffix, rule in FIELD_RULES.items()]
    column_rows = [_row(f"{key}#<column>", rule) for key, rule in COLUMN_FORMAT_RULES.items()]
    column_rows += [_row(OTHER_TYPE_COLUMNS.key, OTHER_TYPE_COLUMNS)]
    column_rows += [_row(f"file-index.{t}.<column>.{option}", rule)
                    for (t, option), rule in FILE_INDEX_COLUMN_RULES.items()]
    return "\n".join([*head, *rows, *fields, *field_rows, *column_rows]) + "\n"


def main() -> int:
    """Write ``docs/options.md``."""
    DOC_PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
