"""The option registry: every table option lake_assets knows, one declarative row each.

Each row (`OptionRule`, `lake_assets.option_types`) gives the key, type, default, description,
validator and how lake_assets supports it. Everything else derives from these rows: the known
key sets and refused values (`lake_assets.options`), the typed accessors of `CoreOptions`, which
parse through them once per schema, `CoreOptions.validate` at create and ALTER, the per-operation
refusals of `lake_assets.table_support`, and ``docs/options.md`` (`lake_assets.option_docs`).
The rows live in one module per group (``lake_assets/option_rules_<group>.py``); this module merges
them into `RULES` and looks a key's row up (`rule_for`). Per-field options
(``fields.<column>.<suffix>``) are rows of `FIELD_RULES` (`lake_assets.option_rules_fields`), keyed by
suffix.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import lru_cache

from lake_assets.option_rules_commit import COMMIT_RULES
from lake_assets.option_rules_compaction import COMPACTION_RULES
from lake_assets.option_rules_engines import ENGINE_RULES
from lake_assets.option_rules_fields import FIELD_OPTION, FIELD_RULES
from lake_assets.option_rules_file_index import FILE_INDEX_RULES, file_index_rule
from lake_assets.option_rules_formats import COLUMN_FORMAT_OPTION, COLUMN_FORMAT_RULES, FORMAT_RULES
from lake_assets.option_rules_layout import LAYOUT_RULES
from lake_assets.option_rules_lifecycle import LIFECYCLE_RULES
from lake_assets.option_rules_mark_done import MARK_DONE_RULES
from lake_assets.option_rules_merging import MERGE_RULES
from lake_assets.option_rules_reads import READ_RULES
from lake_assets.option_rules_refused import REFUSED_ENGINE_RULES
from lake_assets.option_rules_retention import RETENTION_RULES
from lake_assets.option_rules_row_tracking import ROW_TRACKING_RULES
from lake_assets.option_types import OptionRule, fallback_rule

# Compression codec names Paimon takes (lower case), exported by `lake_assets.options`; the rows'
# own value lists are in their modules (FILE_FORMATS in option_rules_layout, MERGE_ENGINES in
# option_rules_merging).
COMPRESSIONS = ("zstd", "snappy", "gzip", "lz4", "lz4_raw", "none", "uncompressed", "brotli")

# The registry, group by group in the order ``docs/options.md`` lists them; each group is a module
# of its own (lake_assets/option_rules_<group>.py). Other engines' runtime options (Flink's and
# Spark's connectors, Java jobs' caches), accepted without effect, and the few connector keys
# refused by name come last.
RULES: dict[str, OptionRule] = {}
for _rows in (LAYOUT_RULES, FORMAT_RULES, MERGE_RULES, COMPACTION_RULES, RETENTION_RULES, LIFECYCLE_RULES,
              COMMIT_RULES, READ_RULES, FILE_INDEX_RULES, ROW_TRACKING_RULES, ENGINE_RULES, REFUSED_ENGINE_RULES,
              MARK_DONE_RULES):
    if RULES.keys() & _rows.keys():
        raise RuntimeError(f"option rows declared twice: {sorted(RULES.keys() & _rows.keys())}")
    RULES.update(_rows)
del _rows

# Fallback keys (Paimon's withFallbackKeys) -> the key each stands in for; `rule_for` gives their rows.
FALLBACK_OF: dict[str, str] = {fb: r.key for r in RULES.values() for fb in r.fallback_keys}
if FALLBACK_OF.keys() & RULES.keys():
    raise RuntimeError(f"fallback keys declared as rows too: {sorted(FALLBACK_OF.keys() & RULES.keys())}")


def rule_for(key: str) -> OptionRule | None:
    """The registry row of ``key``: a plain option's, a fallback key's (its primary's row under its
    own key), a per-field option's by its suffix, or a per-column format option's by its key."""
    rule = RULES.get(key)
    if rule is not None:
        return rule
    if key in FALLBACK_OF:
        return _fallback_rule(key)
    m = FIELD_OPTION.match(key)
    if m:
        return _field_rule(key, m.group("suffix"))
    c = COLUMN_FORMAT_OPTION.match(key)
    if c:
        return dataclasses.replace(COLUMN_FORMAT_RULES[c.group("key")], key=key)
    return file_index_rule(key)


@lru_cache(maxsize=64)
def _fallback_rule(key: str) -> OptionRule:
    return fallback_rule(RULES[FALLBACK_OF[key]], key)


def carried_key(options: Mapping[str, str], key: str) -> str | None:
    """Which key ``options`` sets ``key``'s value with, as Paimon's ``Options.get`` reads it: ``key``
    itself when set, else the first of its fallback keys that is set; None when neither is."""
    if key in options:
        return key
    rule = RULES.get(key)
    return next((fb for fb in rule.fallback_keys if fb in options), None) if rule is not None else None


def is_shadowed(options: Mapping[str, str], key: str) -> bool:
    """Whether ``key`` is a fallback key that ``options`` also sets its option with by an earlier
    key: Paimon never reads it then (nor does lake_assets: it is neither parsed nor validated)."""
    primary = FALLBACK_OF.get(key)
    return primary is not None and carried_key(options, primary) != key


@lru_cache(maxsize=1024)
def _field_rule(key: str, suffix: str) -> OptionRule:
    # the suffix's row under the full key, so that every message names the key the table carries
    return dataclasses.replace(FIELD_RULES[suffix], key=key)


def per_operation_rule(key: str) -> OptionRule | None:
    """The row of ``key`` when a table carrying a refused value of it is refused per operation
    (the row's ``refuses``, or writes and compaction for options only writers read)."""
    rule = rule_for(key)
    return rule if rule is not None and (rule.refuses or rule.writer_only) else None
