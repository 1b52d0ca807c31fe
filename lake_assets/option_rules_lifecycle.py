"""Registry rows of the lifecycle options Paimon's committer acts on: partition expiry
(`lake_assets.ops.partition_expire`) and automatic tags (`lake_assets.ops.tag_auto`), with the
checks that parse their formatter and tag mode. `lake_assets.option_rules` merges them into the
registry in their place.
"""

from __future__ import annotations

from lake_assets.option_types import OptionRule


def _timestamp_formatter(v: object) -> str | None:
    from lake_assets.ops.partition_expire import check_formatter

    return check_formatter(v)


def _tag_mode(v: object) -> str | None:
    from lake_assets.ops.tag_auto import check_mode

    return check_mode(v)


R = OptionRule
LIFECYCLE_RULES: dict[str, OptionRule] = {r.key: r for r in (
    R("partition.expiration-time", "duration", None, "Age after which partitions are dropped at commit."),
    R("partition.expiration-check-interval", "duration", 3_600_000, "How often commits check partition ages."),
    R("partition.expiration-strategy", "enum", "values-time", "Where a partition's time comes from.",
      choices=("values-time", "update-time")),
    R("partition.expiration-max-num", "int", 100, "Partitions one check drops at most.", minimum=1),
    R("partition.timestamp-formatter", "string", None, "Pattern parsing a partition's time.",
      check=_timestamp_formatter),
    R("partition.timestamp-pattern", "string", None, "How partition values form the time text ($dt ...)."),
    R("tag.automatic-creation", "enum", "none", "When commits create tags.",
      choices=("none", "process-time", "watermark", "batch"), check=_tag_mode),
    R("tag.creation-period", "enum", "daily", "Period one automatic tag covers.",
      choices=("daily", "hourly", "two-hours")),
    R("tag.creation-delay", "duration", 0, "Delay after a period ends before its tag."),
    R("tag.period-formatter", "enum", "with_dashes", "Name format of automatic tags.",
      choices=("with_dashes", "without_dashes")),
    R("tag.num-retained-max", "int", None, "Automatic tags kept at most.", minimum=1),
    R("tag.default-time-retained", "duration", None, "Age after which tags expire."),
    R("tag.automatic-completion", "bool", False, "Create tags of missed periods too."),
)}
del R
