"""Registry rows of the options that say what expiry keeps: snapshots, changelogs and consumers
(`lake_assets.ops.expire`, `lake_assets.ops.expire_changelog`). `lake_assets.option_rules` merges
them into the registry in their place.
"""

from __future__ import annotations

from lake_assets.option_rules_layout import path_part_problem
from lake_assets.option_types import INT_MAX, OptionRule

R = OptionRule
RETENTION_RULES: dict[str, OptionRule] = {r.key: r for r in (
    R("snapshot.num-retained.min", "int", 10, "Snapshots expiry always keeps.", minimum=1),
    R("snapshot.num-retained.max", "int", INT_MAX, "Snapshots expiry keeps at most.", minimum=1),
    R("snapshot.time-retained", "duration", 3_600_000, "Age after which snapshots expire."),
    R("snapshot.expire.limit", "int", 50, "Snapshots one expiry removes at most.", minimum=1),
    R("snapshot.clean-empty-directories", "bool", False, "Expiry removes emptied partition/bucket directories.",
      fallback_keys=("snapshot.expire.clean-empty-directories",)),
    R("changelog.num-retained.min", "int", None, "Changelogs kept at least (snapshot.num-retained.min).",
      minimum=1),
    R("changelog.num-retained.max", "int", None, "Changelogs kept at most (snapshot.num-retained.max).",
      minimum=1),
    R("changelog.time-retained", "duration", None, "Age after which changelogs expire (snapshot.time-retained)."),
    R("consumer.expiration-time", "duration", None, "Idle consumers expire after this (never)."),
    R("consumer-id", "string", None, "Consumer id of streaming reads.", check=path_part_problem,
      note="accepted; lake_assets streams take the consumer id as an argument (Table.stream, the Spark "
      "source's read option), and expiry keeps every consumer's snapshots either way"),
)}
del R
