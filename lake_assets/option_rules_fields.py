"""Registry rows of the per-field options ``fields.<column>[,<column>...].<suffix>``, keyed by suffix
(the key of a row is a pattern), and `FIELD_OPTION`, the pattern that matches their keys.
`lake_assets.option_rules.rule_for` gives a key's row under the full key.
"""

from __future__ import annotations

import re

from lake_assets.option_rules_formats import STATS_NOTE, stats_mode_problem
from lake_assets.option_types import INT_MAX, OptionRule

R = OptionRule
FIELD_RULES: dict[str, OptionRule] = {r.key: r for r in (
    R("aggregate-function", "string", None, "Aggregate function of the column (aggregation, partial-update)."),
    R("ignore-retract", "bool", False, "The column ignores retractions (-U/-D)."),
    R("sequence-group", "string", None, "Columns this sequence field orders (partial-update)."),
    R("list-agg-delimiter", "string", ",", "Delimiter of listagg."),
    R("distinct", "bool", False, "collect (and Paimon 1.x's listagg) keep distinct values.",
      note="collect honours it; listagg with distinct = true (Paimon 1.x) is refused when the merge "
      "engine is built (create, ALTER, reads, writes)"),
    R("stats-mode", "string", None, "Column stats mode of the column.", check=stats_mode_problem, note=STATS_NOTE),
    R("nested-key", "string", None, "Fields of the ROW elements that key nested_update and "
      "nested_partial_update (comma-separated)."),
    R("nested-sequence-field", "string", None, "Fields of the ROW elements ordering the rows of one nested "
      "key (nested_update, Paimon 1.x; needs nested-key)."),
    R("nested-key-null-strategy", "enum", "merge", "Rows whose nested key holds a null: merge, ignore or "
      "error (Paimon 1.x; needs nested-key).", choices=("merge", "ignore", "error")),
    R("count-limit", "int", INT_MAX, "Most rows nested_update keeps (Paimon 1.x)."),
    R("ts-field", "string", None, "Field (a string) of the MAP's ROW values ordering merge_map_with_keytime "
      "(Paimon 1.x; default: the ROW's last field)."),
    R("default-value", "string", None, "Default value of the column.",
      note="as Paimon 0.9: reads return it in place of the column's nulls (after the merge; filters "
           "see the filled rows, stats never prune on the column), writes keep the nulls; cast to the "
           "column's type as Java does, not on partition or primary-key columns; Paimon 1.3+ readers "
           "ignore the option (lake_assets.ops.default_values)"),
)}
del R

# Per-field options (fields.<name>.<suffix>), one registry row per suffix.
FIELD_OPTION = re.compile(
    r"^fields\.(?P<field>[^.]+(?:,[^.]+)*)\.(?P<suffix>" + "|".join(re.escape(s) for s in FIELD_RULES) + r")$"
)
