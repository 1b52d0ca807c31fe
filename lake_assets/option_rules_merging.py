"""Registry rows of the options that say how the rows of one key merge: the merge engine, the
changelog producer, sequence and row-kind fields, deletes, and the engines' table-wide settings
(per-column ones are `lake_assets.option_rules_fields`). `lake_assets.option_rules` merges them
into the registry in their place.
"""

from __future__ import annotations

from lake_assets.lsm.merge_engine.names import DEFAULT_MERGE_ENGINE, MERGE_ENGINE_NAMES
from lake_assets.option_types import OptionRule

# Values of option texts that Paimon takes and lake_assets implements (lower case).
MERGE_ENGINES = MERGE_ENGINE_NAMES  # the engine registry's names (one list, no import cycle)
CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")

R = OptionRule
MERGE_RULES: dict[str, OptionRule] = {r.key: r for r in (
    R("merge-engine", "enum", DEFAULT_MERGE_ENGINE, "How rows of one key merge.", choices=MERGE_ENGINES),
    R("changelog-producer", "enum", "none", "What produces changelog files.", choices=CHANGELOG_PRODUCERS),
    R("changelog-producer.row-deduplicate", "bool", False, "Drop -U/+U pairs of identical rows."),
    R("sequence.field", "string", None, "Columns that order rows of one key (before the sequence number)."),
    R("sequence.field.sort-order", "enum", "ascending", "Order of sequence.field.",
      choices=("ascending", "descending")),
    R("rowkind.field", "string", None, "Column holding each row's kind (+I, -U, +U, -D)."),
    R("ignore-delete", "bool", False, "Drop deletes and update-befores on write.",
      fallback_keys=("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")),
    R("fields.default-aggregate-function", "string", None, "Aggregate function of columns without their own."),
    R("aggregation.remove-record-on-delete", "bool", False, "A delete removes the aggregated row."),
    R("partial-update.remove-record-on-delete", "bool", False, "A delete removes the partial-update row."),
    R("partial-update.remove-record-on-sequence-group", "string", None, "Sequence fields of the sequence groups "
      "whose -D removes the whole partial-update row (Paimon 1.0+)."),
)}
del R
