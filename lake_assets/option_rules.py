"""The table of option rules: every table option this package knows, its type, default and bounds.

One declarative row per option (`OptionRule`). `CoreOptions.validate` checks every value a table
carries against its row when the table is created or altered (and, leniently, when it is opened),
and the typed accessors of `CoreOptions` parse through the same rows, so an option is parsed and
bounded in exactly one way. Types follow Paimon's ``CoreOptions``: Java ``int`` options must fit 32
bits and ``long`` options 64, memory sizes and durations use Paimon's text forms.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lake_assets.errors import OptionError, UnsupportedFeatureError

INT_MAX = 2**31 - 1
LakeErrorLike = OptionError | UnsupportedFeatureError
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class OptionRule:
    """How one option's value is parsed and bounded.

    ``kind`` is one of ``int`` (Java int), ``long``, ``size`` (MemorySize), ``duration``,
    ``bool``, ``enum`` (one of ``choices``, case-insensitive), ``ratio`` (a number in [0, 1]) and
    ``string`` (free text). ``minimum`` bounds numbers; ``check`` returns a problem (text) for a
    parsed value that is well-formed but not acceptable, or None.
    """

    key: str
    kind: str
    default: object = None
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    check: Callable[[object], str | None] | None = None
    lake_assets_only: bool = False  # an option of this package that Paimon does not have


def _bucket(n: object) -> str | None:
    # -2 (postpone bucket mode) is a valid Paimon value: create_table refuses it, and what tables
    # carrying it may do is decided per operation (lake_assets/table_support.py; batch reads work)
    if n == 0 or (isinstance(n, int) and n < -2):
        return "must be -1 (dynamic for primary-key tables, unaware for append tables) or a bucket count >= 1"
    return None


_STATS_MODE = re.compile(r"^(none|counts|full|truncate\(\d+\))$", re.IGNORECASE)


def _stats_mode(v: object) -> str | None:
    return None if _STATS_MODE.match(str(v).strip()) else "must be none, counts, full or truncate(N)"


def _path_part(v: object) -> str | None:
    """Values that become part of file names inside the table must be plain (paths.check_path_part)."""
    from lake_assets.errors import UnsafePathError
    from lake_assets.paths import check_path_part

    try:
        check_path_part(v, "a file name")
    except UnsafePathError as exc:
        return f"{exc} (it becomes part of file names inside the table)"
    return None


def _timestamp_formatter(v: object) -> str | None:
    from lake_assets.ops.partition_expire import check_formatter

    return check_formatter(v)


def _tag_mode(v: object) -> str | None:
    from lake_assets.ops.tag_auto import check_mode

    return check_mode(v)


def _rules(*rows: OptionRule) -> dict[str, OptionRule]:
    return {r.key: r for r in rows}


R = OptionRule
RULES: dict[str, OptionRule] = _rules(
    # ---- layout
    R("bucket", "int", -1, check=_bucket),
    R("bucket-key", "string"),
    R("bucket-function.type", "string", "default"),
    R("file.format", "string", "parquet"),
    R("file.compression", "string", "zstd"),
    R("file.compression.zstd-level", "int", 1),
    R("manifest.compression", "string", "zstd"),
    R("manifest.target-file-size", "size", 8 * 1024 * 1024, minimum=1),
    R("manifest.merge-min-count", "int", 30, minimum=1),
    R("manifest.full-compaction-threshold-size", "size", 16 * 1024 * 1024, minimum=1),
    R("target-file-size", "size", None, minimum=1),
    R("target-file-row-num", "long", None, minimum=1),
    R("write-buffer-size", "size", 256 * 1024 * 1024, minimum=1),
    R("write-buffer-spillable", "bool"),
    R("write-buffer-spill.max-disk-size", "size", None, minimum=1),
    R("spill-compression", "string", "zstd"),
    R("spill-compression.zstd-level", "int", 1),
    R("local-sort.max-num-file-handles", "int", 128, minimum=2),
    R("page-size", "size", 64 * 1024, minimum=1),
    R("write-only", "bool", False),
    R("data-file.prefix", "string", "data-", check=_path_part),
    R("changelog-file.prefix", "string", "changelog-", check=_path_part),
    R("file.suffix.include.compression", "bool", False),
    R("partition.default-name", "string", "__DEFAULT_PARTITION__"),
    R("partition.legacy-name", "bool", True),
    R("metadata.stats-mode", "string", "truncate(16)", check=_stats_mode),
    R("dynamic-partition-overwrite", "bool", True),
    R("deletion-vectors.enabled", "bool", False),
    R("bucket-append-ordered", "bool", True),
    R("write.sequence-number-init-mode", "string"),
    R("path", "string"),
    R("type", "string"),
    # ---- merging
    R("merge-engine", "string", "deduplicate"),
    R("changelog-producer", "string", "none"),
    R("changelog-producer.row-deduplicate", "bool", False),
    R("sequence.field", "string"),
    R("sequence.field.sort-order", "enum", "ascending", choices=("ascending", "descending")),
    R("rowkind.field", "string"),
    R("ignore-delete", "bool", False),
    R("partial-update.ignore-delete", "bool", False),
    R("first-row.ignore-delete", "bool", False),
    R("deduplicate.ignore-delete", "bool", False),
    R("fields.default-aggregate-function", "string"),
    R("aggregation.remove-record-on-delete", "bool", False),
    R("partial-update.remove-record-on-delete", "bool", False),
    # ---- compaction
    R("num-sorted-run.compaction-trigger", "int", 5, minimum=1),
    R("num-sorted-run.stop-trigger", "int", None, minimum=1),
    R("num-levels", "int", None, minimum=2),
    R("compaction.max-size-amplification-percent", "int", 200, minimum=0),
    R("compaction.size-ratio", "int", 1, minimum=0),
    R("compaction.small-file-ratio", "ratio", 0.7),
    R("compaction.min.file-num", "int", 5, minimum=1),
    R("compaction.force-up-level-0", "bool", False),
    R("full-compaction.delta-commits", "int", None, minimum=1),
    R("compaction.parallelism", "int", None, minimum=1, lake_assets_only=True),
    # ---- retention
    R("snapshot.num-retained.min", "int", 10, minimum=1),
    R("snapshot.num-retained.max", "int", INT_MAX, minimum=1),
    R("snapshot.time-retained", "duration", 3_600_000),
    R("snapshot.expire.limit", "int", 50, minimum=1),
    R("snapshot.clean-empty-directories", "bool", False),
    R("changelog.num-retained.min", "int", None, minimum=1),
    R("changelog.num-retained.max", "int", None, minimum=1),
    R("changelog.time-retained", "duration"),
    R("consumer.expiration-time", "duration"),
    R("consumer-id", "string", check=_path_part),
    # ---- lifecycle (ops/partition_expire.py, ops/tag_auto.py)
    R("partition.expiration-time", "duration"),
    R("partition.expiration-check-interval", "duration", 3_600_000),
    R("partition.expiration-strategy", "enum", "values-time", choices=("values-time", "update-time")),
    R("partition.expiration-max-num", "int", 100, minimum=1),
    R("partition.timestamp-formatter", "string", check=_timestamp_formatter),
    R("partition.timestamp-pattern", "string"),
    R("tag.automatic-creation", "enum", "none", choices=("none", "process-time", "watermark", "batch"),
      check=_tag_mode),
    R("tag.creation-period", "enum", "daily", choices=("daily", "hourly", "two-hours")),
    R("tag.creation-delay", "duration", 0),
    R("tag.period-formatter", "enum", "with_dashes", choices=("with_dashes", "without_dashes")),
    R("tag.num-retained-max", "int", None, minimum=1),
    R("tag.default-time-retained", "duration"),
    R("tag.automatic-completion", "bool", False),
    # ---- commit
    R("commit.max-retries", "int", 10, minimum=0),
    R("commit.min-retry-wait", "duration", 10),
    R("commit.max-retry-wait", "duration", 10_000),
    R("commit.timeout", "duration"),
    R("commit.force-create-snapshot", "bool", False),
    R("snapshot.ignore-empty-commit", "bool", True),
    # ---- scans
    R("scan.mode", "enum", "default", choices=(
        "default", "latest-full", "full", "latest", "compacted-full", "from-timestamp", "from-snapshot",
        "from-snapshot-full", "incremental", "from-file-creation-time")),
    R("scan.snapshot-id", "long", None, minimum=1),
    R("scan.timestamp-millis", "long", None, minimum=0),
    R("scan.tag-name", "string"),
    R("streaming-read-overwrite", "bool", False),
)
del R


def parse_value(rule: OptionRule, text: object) -> object:
    """The typed value of ``text`` under ``rule``; OptionError naming the key when it does not fit."""
    # late import: options.py holds the text parsers and imports this module
    from lake_assets.options import parse_duration_ms, parse_memory_size

    key, kind, s = rule.key, rule.kind, str(text)
    value: object
    if kind in ("int", "long"):
        try:
            value = int(s.strip())
        except ValueError:
            raise OptionError(f"Option {key!r}: {s!r} is not an integer") from None
        top = INT_MAX if kind == "int" else LONG_MAX
        if not -top - 1 <= value <= top:
            raise OptionError(f"Option {key!r}: {s!r} does not fit a {'32' if kind == 'int' else '64'}-bit integer")
    elif kind == "size":
        value = parse_memory_size(s, key)
    elif kind == "duration":
        value = parse_duration_ms(s, key)
    elif kind == "bool":
        v = s.strip().lower()
        if v not in ("true", "false"):
            raise OptionError(f"Option {key!r}: {s!r} is not 'true' or 'false'")
        value = v == "true"
    elif kind == "enum":
        value = s.strip().lower()
        if value not in rule.choices:
            raise OptionError(f"Option {key!r}: {s!r} is not one of {list(rule.choices)}")
    elif kind == "ratio":
        try:
            value = float(s.strip())
        except ValueError:
            raise OptionError(f"Option {key!r}: {s!r} is not a number") from None
        if not 0.0 <= value <= 1.0:  # also false for NaN
            raise OptionError(f"Option {key!r}: {s!r} must be a ratio between 0 and 1")
    else:
        value = s
    if rule.minimum is not None and isinstance(value, int) and not isinstance(value, bool) and value < rule.minimum:
        raise OptionError(f"Option {key!r}: {s!r} must be at least {rule.minimum}")
    if rule.check is not None:
        problem = rule.check(value)
        if problem:
            cls = UnsupportedFeatureError if "not supported" in problem else OptionError
            raise cls(f"Option {key!r}: {s!r}: {problem}")
    return value


def suggest(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a close known option name, else ``""``."""
    close = difflib.get_close_matches(key, list(known), n=3, cutoff=0.75)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def raise_all(problems: list[LakeErrorLike]) -> None:
    """Raise one error for every problem found: OptionError unless all are unsupported features."""
    if not problems:
        return
    if len(problems) == 1:
        raise problems[0]
    cls = UnsupportedFeatureError if all(isinstance(p, UnsupportedFeatureError) for p in problems) else OptionError
    raise cls(f"{len(problems)} problems with table options: " + "; ".join(str(p) for p in problems))

