"""The ``merge-engine`` values lake_assets implements: the one list of their names.

The option registry (`lake_assets.option_rules`) takes them as the option's accepted values and
default, and the engine registry (`lake_assets.lsm.merge_engine.registry`) builds one engine per
name and checks at import that it covers exactly these. This module imports nothing, so the
option registry can use it without importing the engines (which import the options).
"""

from __future__ import annotations

DEDUPLICATE = "deduplicate"
PARTIAL_UPDATE = "partial-update"
AGGREGATION = "aggregation"
FIRST_ROW = "first-row"

# Paimon's CoreOptions.MergeEngine values, in its order; the first is Paimon's default.
MERGE_ENGINE_NAMES: tuple[str, ...] = (DEDUPLICATE, PARTIAL_UPDATE, AGGREGATION, FIRST_ROW)
DEFAULT_MERGE_ENGINE = DEDUPLICATE
