"""Table options (Paimon's CoreOptions) with defaults, typed accessors and validation.

Options are stored as strings in the schema file exactly as Paimon stores them. Anything this
package does not implement fails loudly before a byte is written, so that no Paimon reader is
ever handed a table it would misread.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.option_rules import RULES, LakeErrorLike, parse_value, raise_all, suggest

MiB = 1024 * 1024

# Options whose every documented value we honour, or that do not change what is written: the
# rows of the option table (lake_assets/option_rules.py) that Paimon has.
KNOWN_OPTIONS: frozenset[str] = frozenset(k for k, r in RULES.items() if not r.lake_assets_only)

# Options of this package that Paimon does not have. Paimon engines (Java and pypaimon) keep
# keys they do not know in the schema and ignore them, so these never change what they read;
# they only tune how lake_assets itself runs (e.g. compaction.parallelism: compaction units run
# at once in one process, memory one unit each).
LAKE_ASSETS_OPTIONS: frozenset[str] = frozenset(k for k, r in RULES.items() if r.lake_assets_only)

# Per-field options (fields.<name>.<suffix>); the engines module interprets them.
FIELD_OPTION = re.compile(
    r"^fields\.(?P<field>[^.]+(?:,[^.]+)*)\.(?P<suffix>aggregate-function|ignore-retract|sequence-group|"
    r"list-agg-delimiter|distinct|stats-mode|nested-key|default-value)$"
)

# Options Paimon has that we recognise but cannot honour yet, with why it matters.
UNSUPPORTED_VALUES: dict[str, tuple[set[str], str]] = {
    "file.format": ({"parquet"}, "only Parquet data files are implemented"),
    "deletion-vectors.enabled": ({"false"}, "deletion vectors are not implemented"),
    "partition.legacy-name": ({"true"}, "only legacy partition directory names are implemented"),
    "file.suffix.include.compression": ({"false"}, "compression suffixes in file names are not implemented"),
    "bucket-function.type": ({"default"}, "only the default bucket function is implemented"),
}

SUPPORTED_MERGE_ENGINES = {"deduplicate", "partial-update", "aggregation", "first-row"}
SUPPORTED_CHANGELOG_PRODUCERS = {"none", "input", "lookup", "full-compaction"}
# Codecs of the writer's local spill files (ops/spill.py): Paimon's zstd and lzo, plus lz4 and none.
SPILL_COMPRESSIONS = {"zstd", "lzo", "lz4", "none"}
COMPRESSIONS = {"zstd", "snappy", "gzip", "lz4", "lz4_raw", "none", "uncompressed", "brotli"}

# Options whose value must be one we implement, checked with the others (all problems at once).
_SUPPORTED_VALUES: dict[str, set[str]] = {
    "merge-engine": SUPPORTED_MERGE_ENGINES,
    "changelog-producer": SUPPORTED_CHANGELOG_PRODUCERS,
    "file.compression": COMPRESSIONS,
    "manifest.compression": {"zstd", "zstandard", "none", "null", "deflate", "snappy"},
    "spill-compression": SPILL_COMPRESSIONS,
}

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_SIZE_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1024, "kb": 1024, "kib": 1024,
    "m": MiB, "mb": MiB, "mib": MiB,
    "g": 1024 * MiB, "gb": 1024 * MiB, "gib": 1024 * MiB,
    "t": 1024**4, "tb": 1024**4, "tib": 1024**4,
}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]+)")
_DURATION_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000, "m": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}


def parse_memory_size(text: str, key: str = "") -> int:
    """Parse Paimon's MemorySize text (``128 mb``, ``64kb``, ``1024``) into bytes."""
    m = _SIZE.match(str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise OptionError(f"Option {key!r}: {text!r} is not a memory size (e.g. '128 mb')")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])


def parse_duration_ms(text: str, key: str = "") -> int:
    """Parse Paimon's Duration text (``1 h``, ``30 min``, ``10s``, ``500 ms``) into milliseconds."""
    s = str(text).strip()
    if s.isdigit():
        return int(s)
    parts = _DURATION.findall(s)
    if not parts or "".join(a + b for a, b in parts) != re.sub(r"\s+", "", s):
        raise OptionError(f"Option {key!r}: {text!r} is not a duration (e.g. '1 h', '30 min')")
    total = 0.0
    for num, unit in parts:
        if unit.lower() not in _DURATION_UNITS_MS:
            raise OptionError(f"Option {key!r}: unknown duration unit {unit!r} in {text!r}")
        total += float(num) * _DURATION_UNITS_MS[unit.lower()]
    return int(total)


@dataclass(frozen=True)
class CoreOptions:
    """Typed, validated view over a table's option map."""

    raw: Mapping[str, str]
    has_primary_key: bool = True

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    def _typed(self, key: str, default: object) -> object:
        """The option's value parsed and bounded by its rule (option_rules.RULES), or ``default``."""
        v = self.raw.get(key)
        return default if v is None else parse_value(RULES[key], v)

    def _int(self, key: str, default: int) -> int:
        return self._typed(key, default)  # type: ignore[return-value]

    def _bool(self, key: str, default: bool) -> bool:
        return self._typed(key, default)  # type: ignore[return-value]

    def _size(self, key: str, default: int) -> int:
        return self._typed(key, default)  # type: ignore[return-value]

    def _duration(self, key: str, default: int) -> int:
        return self._typed(key, default)  # type: ignore[return-value]

    # ---- layout
    @property
    def bucket(self) -> int:
        return self._int("bucket", -1)

    @property
    def bucket_key(self) -> tuple[str, ...]:
        v = self.raw.get("bucket-key")
        return tuple(s.strip() for s in v.split(",") if s.strip()) if v else ()

    @property
    def file_compression(self) -> str:
        return (self.raw.get("file.compression") or "zstd").lower()

    @property
    def zstd_level(self) -> int:
        return self._int("file.compression.zstd-level", 1)

    @property
    def manifest_compression(self) -> str:
        return (self.raw.get("manifest.compression") or "zstd").lower()

    @property
    def manifest_target_file_size(self) -> int:
        return self._size("manifest.target-file-size", 8 * MiB)

    @property
    def manifest_merge_min_count(self) -> int:
        return self._int("manifest.merge-min-count", 30)

    @property
    def target_file_size(self) -> int:
        return self._size("target-file-size", 128 * MiB if self.has_primary_key else 256 * MiB)

    @property
    def write_buffer_size(self) -> int:
        return self._size("write-buffer-size", 256 * MiB)

    @property
    def write_buffer_spillable(self) -> bool | None:
        """``write-buffer-spillable``; None when unset (the writer picks, see ops/write.py)."""
        return self._typed("write-buffer-spillable", None)  # type: ignore[return-value]

    @property
    def write_buffer_spill_max_disk_size(self) -> int | None:
        """``write-buffer-spill.max-disk-size``; None is Paimon's default, unbounded."""
        return self._typed("write-buffer-spill.max-disk-size", None)  # type: ignore[return-value]

    @property
    def spill_compression(self) -> str:
        return (self.raw.get("spill-compression") or "zstd").lower()

    @property
    def spill_zstd_level(self) -> int:
        return self._int("spill-compression.zstd-level", 1)

    @property
    def local_sort_max_num_file_handles(self) -> int:
        return self._int("local-sort.max-num-file-handles", 128)

    @property
    def page_size(self) -> int:
        return self._size("page-size", 64 * 1024)

    @property
    def write_only(self) -> bool:
        return self._bool("write-only", False)

    @property
    def data_file_prefix(self) -> str:
        return self.raw.get("data-file.prefix", "data-")

    @property
    def changelog_file_prefix(self) -> str:
        return self.raw.get("changelog-file.prefix", "changelog-")

    @property
    def partition_default_name(self) -> str:
        return self.raw.get("partition.default-name", "__DEFAULT_PARTITION__")

    @property
    def dynamic_partition_overwrite(self) -> bool:
        return self._bool("dynamic-partition-overwrite", True)

    # ---- merging
    @property
    def merge_engine(self) -> str:
        return (self.raw.get("merge-engine") or "deduplicate").lower()

    @property
    def changelog_producer(self) -> str:
        return (self.raw.get("changelog-producer") or "none").lower()

    @property
    def sequence_fields(self) -> tuple[str, ...]:
        v = self.raw.get("sequence.field")
        return tuple(s.strip() for s in v.split(",") if s.strip()) if v else ()

    @property
    def sequence_descending(self) -> bool:
        return (self.raw.get("sequence.field.sort-order") or "ascending").lower() == "descending"

    @property
    def rowkind_field(self) -> str | None:
        return self.raw.get("rowkind.field") or None

    @property
    def ignore_delete(self) -> bool:
        return (
            self._bool("ignore-delete", False)
            or self._bool("partial-update.ignore-delete", False)
            or self._bool("first-row.ignore-delete", False)
            or self._bool("deduplicate.ignore-delete", False)
        )

    # ---- compaction
    @property
    def num_sorted_run_compaction_trigger(self) -> int:
        return self._int("num-sorted-run.compaction-trigger", 5)

    @property
    def num_sorted_run_stop_trigger(self) -> int:
        return self._int("num-sorted-run.stop-trigger", self.num_sorted_run_compaction_trigger + 3)

    @property
    def num_levels(self) -> int:
        return self._int("num-levels", self.num_sorted_run_compaction_trigger + 1)

    @property
    def max_size_amplification_percent(self) -> int:
        return self._int("compaction.max-size-amplification-percent", 200)

    @property
    def size_ratio(self) -> int:
        return self._int("compaction.size-ratio", 1)

    @property
    def small_file_ratio(self) -> float:
        return self._typed("compaction.small-file-ratio", 0.7)  # type: ignore[return-value]

    @property
    def compaction_min_file_num(self) -> int:
        return self._int("compaction.min.file-num", 5)

    @property
    def compaction_parallelism(self) -> int | None:
        """Units an in-process compaction runs at once (None: as many as reads use)."""
        return self._typed("compaction.parallelism", None)  # type: ignore[return-value]

    @property
    def compaction_force_up_level0(self) -> bool:
        return self._bool("compaction.force-up-level-0", False)

    @property
    def full_compaction_delta_commits(self) -> int | None:
        return self._typed("full-compaction.delta-commits", None)  # type: ignore[return-value]

    # ---- retention
    @property
    def snapshot_num_retained_min(self) -> int:
        return self._int("snapshot.num-retained.min", 10)

    @property
    def snapshot_num_retained_max(self) -> int:
        return self._int("snapshot.num-retained.max", 2**31 - 1)

    @property
    def snapshot_time_retained_ms(self) -> int:
        return self._duration("snapshot.time-retained", 3_600_000)

    @property
    def snapshot_expire_limit(self) -> int:
        return self._int("snapshot.expire.limit", 50)

    def changelog_retention(
        self, *, retain_min: int | None = None, retain_max: int | None = None, time_retained_ms: int | None = None
    ) -> tuple[int, int, int]:
        """``changelog.num-retained.min/max`` and ``changelog.time-retained``; each unset one falls back
        to the snapshot setting (given, or the table's ``snapshot.*`` option), as in Paimon."""
        smin = self.snapshot_num_retained_min if retain_min is None else retain_min
        smax = self.snapshot_num_retained_max if retain_max is None else retain_max
        stime = self.snapshot_time_retained_ms if time_retained_ms is None else time_retained_ms
        return (
            self._int("changelog.num-retained.min", smin),
            self._int("changelog.num-retained.max", smax),
            self._duration("changelog.time-retained", stime),
        )

    def changelog_decoupled(
        self, *, retain_min: int | None = None, retain_max: int | None = None, time_retained_ms: int | None = None
    ) -> bool:
        """Whether changelogs outlive snapshots: any changelog retention setting exceeds the snapshot one."""
        smin = self.snapshot_num_retained_min if retain_min is None else retain_min
        smax = self.snapshot_num_retained_max if retain_max is None else retain_max
        stime = self.snapshot_time_retained_ms if time_retained_ms is None else time_retained_ms
        cmin, cmax, ctime = self.changelog_retention(retain_min=smin, retain_max=smax, time_retained_ms=stime)
        return cmin > smin or cmax > smax or ctime > stime

    @property
    def clean_empty_directories(self) -> bool:
        return self._bool("snapshot.clean-empty-directories", False)

    @property
    def consumer_expiration_ms(self) -> int | None:
        return self._typed("consumer.expiration-time", None)  # type: ignore[return-value]

    # ---- lifecycle
    @property
    def partition_expiration_time_ms(self) -> int | None:
        return self._typed("partition.expiration-time", None)  # type: ignore[return-value]

    @property
    def partition_expiration_check_interval_ms(self) -> int:
        return self._duration("partition.expiration-check-interval", 3_600_000)

    @property
    def partition_expiration_strategy(self) -> str:
        return self._typed("partition.expiration-strategy", "values-time")  # type: ignore[return-value]

    @property
    def partition_expiration_max_num(self) -> int:
        return self._int("partition.expiration-max-num", 100)

    @property
    def tag_automatic_creation(self) -> str:
        return self._typed("tag.automatic-creation", "none")  # type: ignore[return-value]

    @property
    def tag_creation_period(self) -> str:
        return self._typed("tag.creation-period", "daily")  # type: ignore[return-value]

    @property
    def tag_creation_delay_ms(self) -> int:
        return self._duration("tag.creation-delay", 0)

    @property
    def tag_period_formatter(self) -> str:
        return self._typed("tag.period-formatter", "with_dashes")  # type: ignore[return-value]

    @property
    def tag_num_retained_max(self) -> int | None:
        return self._typed("tag.num-retained-max", None)  # type: ignore[return-value]

    @property
    def tag_default_time_retained_ms(self) -> int | None:
        return self._typed("tag.default-time-retained", None)  # type: ignore[return-value]

    @property
    def tag_automatic_completion(self) -> bool:
        return self._bool("tag.automatic-completion", False)

    # ---- commit
    @property
    def commit_max_retries(self) -> int:
        return self._int("commit.max-retries", 10)

    @property
    def commit_min_retry_wait_ms(self) -> int:
        return self._duration("commit.min-retry-wait", 10)

    @property
    def commit_max_retry_wait_ms(self) -> int:
        return self._duration("commit.max-retry-wait", 10_000)

    @property
    def ignore_empty_commit(self) -> bool:
        return self._bool("snapshot.ignore-empty-commit", True)

    # ------------------------------------------------------------ validation
    def validate(self, *, field_names: tuple[str, ...] = (), strict: bool = True) -> None:
        """Reject unknown, malformed, out-of-range and unsupported options, naming each key.

        Every value is checked against its row of the option table (option_rules.RULES), and all
        problems are reported at once. ``strict`` (creating or altering a table, writing) also
        rejects keys we do not know, suggesting close names; reading a table another engine wrote
        only rejects options that would change what a read returns.
        """
        problems: list[LakeErrorLike] = []
        for key, value in self.raw.items():
            if key in UNSUPPORTED_VALUES:
                allowed, why = UNSUPPORTED_VALUES[key]
                if str(value).lower() not in allowed:
                    problems.append(UnsupportedFeatureError(f"Option {key}={value!r} is not supported: {why}"))
                    continue
            rule = RULES.get(key)
            if rule is not None:
                try:
                    parse_value(rule, value)
                except (OptionError, UnsupportedFeatureError) as exc:
                    problems.append(exc)
                    continue
                supported = _SUPPORTED_VALUES.get(key)
                if supported is not None and str(value).strip().lower() not in supported:
                    # name the values we take (and the closest one): the user should not have to guess
                    problems.append(UnsupportedFeatureError(
                        f"Option {key}={value!r} is not supported{suggest(str(value).strip().lower(), supported)}; "
                        f"supported values: {', '.join(sorted(supported))}"))
                continue
            m = FIELD_OPTION.match(key)
            if m:
                for f in m.group("field").split(","):
                    if field_names and f not in field_names:
                        problems.append(OptionError(
                            f"Option {key!r} names column {f!r}, which the table does not have"
                            f"{suggest(f, field_names)}"))
                continue
            if strict:
                problems.append(OptionError(
                    f"Unknown table option {key!r} (value {value!r}){suggest(key, RULES)}"))
        raise_all(problems)
        # Every value parses: now the supported values and the options' relations to each other.
        if strict:
            try:
                _check_java_spellings(self)
            except (OptionError, UnsupportedFeatureError) as exc:
                problems.append(exc)
        if self.merge_engine not in SUPPORTED_MERGE_ENGINES:
            problems.append(UnsupportedFeatureError(f"Option merge-engine={self.merge_engine!r} is not supported"))
        if self.changelog_producer not in SUPPORTED_CHANGELOG_PRODUCERS:
            problems.append(UnsupportedFeatureError(
                f"Option changelog-producer={self.changelog_producer!r} is not supported"))
        if self.file_compression not in COMPRESSIONS:
            problems.append(UnsupportedFeatureError(
                f"Option file.compression={self.file_compression!r} is not supported"))
        if self.manifest_compression not in {"zstd", "zstandard", "none", "null", "deflate", "snappy"}:
            problems.append(UnsupportedFeatureError(
                f"Option manifest.compression={self.manifest_compression!r} is not supported"))
        if self.spill_compression not in SPILL_COMPRESSIONS:
            problems.append(UnsupportedFeatureError(
                f"Option spill-compression={self.spill_compression!r} is not supported"))
        if self.snapshot_num_retained_max < self.snapshot_num_retained_min:
            problems.append(OptionError(
                f"Contradictory options: snapshot.num-retained.max={self.snapshot_num_retained_max} "
                f"is below snapshot.num-retained.min={self.snapshot_num_retained_min}"))
        cmin, cmax, _ = self.changelog_retention()
        if cmax < cmin:
            problems.append(OptionError(
                f"Contradictory options: changelog.num-retained.max={cmax} is below changelog.num-retained.min={cmin}"))
        if self.num_sorted_run_stop_trigger < self.num_sorted_run_compaction_trigger:
            problems.append(OptionError(
                "Contradictory options: num-sorted-run.stop-trigger is below num-sorted-run.compaction-trigger"))
        raise_all(problems)


# Values we would write that Paimon Java's writers reject: its Parquet writer takes the codec names
# of parquet-mr's CompressionCodecName, its Avro manifest writer Avro's codec names.
_JAVA_SPELLINGS = {
    ("file.compression", "none"): "uncompressed",
    ("manifest.compression", "none"): "null",
}
# Codecs we could write but Paimon Java cannot read (its bundle has no Hadoop Brotli codec).
_JAVA_UNREADABLE = {("file.compression", "brotli"): "Paimon Java has no Brotli codec to read the files"}


def _check_java_spellings(opts: CoreOptions) -> None:
    """Reject, when a table is created or altered, values a Paimon Java writer could not use.

    Tables that already carry them stay readable and writable here (the files are valid).
    """
    for key, value in (("file.compression", opts.file_compression),
                       ("manifest.compression", opts.manifest_compression)):
        if key not in opts.raw:
            continue
        java = _JAVA_SPELLINGS.get((key, value))
        if java is not None:
            raise OptionError(
                f"Option {key}={opts.raw[key]!r} is not a value Paimon's Java writer accepts; "
                f"use {key}={java!r}"
            )
        why = _JAVA_UNREADABLE.get((key, value))
        if why is not None:
            raise UnsupportedFeatureError(f"Option {key}={opts.raw[key]!r} is not supported: {why}")
