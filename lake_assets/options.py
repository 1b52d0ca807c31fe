"""Table options (Paimon's CoreOptions) with defaults, typed accessors and validation.

Options are stored as strings in the schema file exactly as Paimon stores them. Anything this
package does not implement fails loudly before a byte is written, so that no Paimon reader is
ever handed a table it would misread.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from lake_assets.errors import OptionError, UnsafePathError, UnsupportedFeatureError
from lake_assets.paths import check_path_part

MiB = 1024 * 1024

# Options whose every documented value we honour, or that do not change what is written.
KNOWN_OPTIONS: frozenset[str] = frozenset(
    {
        "bucket",
        "bucket-key",
        "file.format",
        "file.compression",
        "file.compression.zstd-level",
        "manifest.compression",
        "manifest.target-file-size",
        "manifest.merge-min-count",
        "manifest.full-compaction-threshold-size",
        "target-file-size",
        "target-file-row-num",
        "write-buffer-size",
        "write-buffer-spillable",
        "write-buffer-spill.max-disk-size",
        "spill-compression",
        "spill-compression.zstd-level",
        "local-sort.max-num-file-handles",
        "page-size",
        "write-only",
        "merge-engine",
        "changelog-producer",
        "changelog-producer.row-deduplicate",
        "sequence.field",
        "sequence.field.sort-order",
        "rowkind.field",
        "ignore-delete",
        "partition.default-name",
        "partition.legacy-name",
        "metadata.stats-mode",
        "num-sorted-run.compaction-trigger",
        "num-sorted-run.stop-trigger",
        "num-levels",
        "compaction.max-size-amplification-percent",
        "compaction.size-ratio",
        "compaction.small-file-ratio",
        "compaction.min.file-num",
        "compaction.force-up-level-0",
        "full-compaction.delta-commits",
        "snapshot.num-retained.min",
        "snapshot.num-retained.max",
        "snapshot.time-retained",
        "snapshot.expire.limit",
        "snapshot.clean-empty-directories",
        "changelog.num-retained.min",
        "changelog.num-retained.max",
        "changelog.time-retained",
        "consumer.expiration-time",
        "consumer-id",
        "commit.max-retries",
        "commit.min-retry-wait",
        "commit.max-retry-wait",
        "commit.timeout",
        "commit.force-create-snapshot",
        "snapshot.ignore-empty-commit",
        "dynamic-partition-overwrite",
        "deletion-vectors.enabled",
        "data-file.prefix",
        "changelog-file.prefix",
        "file.suffix.include.compression",
        "partial-update.ignore-delete",
        "fields.default-aggregate-function",
        "aggregation.remove-record-on-delete",
        "partial-update.remove-record-on-delete",
        "first-row.ignore-delete",
        "deduplicate.ignore-delete",
        "path",
        "type",
        "scan.mode",
        "scan.snapshot-id",
        "scan.timestamp-millis",
        "scan.tag-name",
        "streaming-read-overwrite",
        "bucket-append-ordered",
        "write.sequence-number-init-mode",
    }
)

# Options of this package that Paimon does not have. Paimon engines (Java and pypaimon) keep
# keys they do not know in the schema and ignore them, so these never change what they read;
# they only tune how lake_assets itself runs.
LAKE_ASSETS_OPTIONS: frozenset[str] = frozenset(
    {
        "compaction.parallelism",  # compaction units run at once in one process (memory: one unit each)
    }
)

# Options whose value becomes part of a file name: plain text only (see paths.check_path_part).
PATH_PART_OPTIONS = ("data-file.prefix", "changelog-file.prefix", "consumer-id")

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


def _parse_bool(text: str, key: str) -> bool:
    v = str(text).strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise OptionError(f"Option {key!r}: {text!r} is not 'true' or 'false'")


def _parse_int(text: str, key: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise OptionError(f"Option {key!r}: {text!r} is not an integer") from None


@dataclass(frozen=True)
class CoreOptions:
    """Typed, validated view over a table's option map."""

    raw: Mapping[str, str]
    has_primary_key: bool = True

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    def _int(self, key: str, default: int) -> int:
        v = self.raw.get(key)
        return default if v is None else _parse_int(v, key)

    def _bool(self, key: str, default: bool) -> bool:
        v = self.raw.get(key)
        return default if v is None else _parse_bool(v, key)

    def _size(self, key: str, default: int) -> int:
        v = self.raw.get(key)
        return default if v is None else parse_memory_size(v, key)

    def _duration(self, key: str, default: int) -> int:
        v = self.raw.get(key)
        return default if v is None else parse_duration_ms(v, key)

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
        v = self.raw.get("write-buffer-spillable")
        return None if v is None else _parse_bool(v, "write-buffer-spillable")

    @property
    def write_buffer_spill_max_disk_size(self) -> int | None:
        """``write-buffer-spill.max-disk-size``; None is Paimon's default, unbounded."""
        v = self.raw.get("write-buffer-spill.max-disk-size")
        return None if v is None else parse_memory_size(v, "write-buffer-spill.max-disk-size")

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
        v = self.raw.get("compaction.small-file-ratio")
        return 0.7 if v is None else float(v)

    @property
    def compaction_min_file_num(self) -> int:
        return self._int("compaction.min.file-num", 5)

    @property
    def compaction_parallelism(self) -> int | None:
        """Units an in-process compaction runs at once (None: as many as reads use)."""
        v = self.raw.get("compaction.parallelism")
        if v is None:
            return None
        n = _parse_int(v, "compaction.parallelism")
        if n < 1:
            raise OptionError(f"Option 'compaction.parallelism': {v!r} must be at least 1")
        return n

    @property
    def compaction_force_up_level0(self) -> bool:
        return self._bool("compaction.force-up-level-0", False)

    @property
    def full_compaction_delta_commits(self) -> int | None:
        v = self.raw.get("full-compaction.delta-commits")
        return None if v is None else _parse_int(v, "full-compaction.delta-commits")

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
        v = self.raw.get("consumer.expiration-time")
        return None if v is None else parse_duration_ms(v, "consumer.expiration-time")

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
        """Reject unknown, malformed and unsupported options, naming the key.

        ``strict`` (creating a table, writing) also rejects keys we do not know; reading a table
        another engine wrote only rejects options that would change what a read returns.
        """
        for key, value in self.raw.items():
            if key in UNSUPPORTED_VALUES:
                allowed, why = UNSUPPORTED_VALUES[key]
                if str(value).lower() not in allowed:
                    raise UnsupportedFeatureError(f"Option {key}={value!r} is not supported: {why}")
                continue
            if key in KNOWN_OPTIONS or key in LAKE_ASSETS_OPTIONS:
                continue
            m = FIELD_OPTION.match(key)
            if m:
                for f in m.group("field").split(","):
                    if field_names and f not in field_names:
                        raise OptionError(f"Option {key!r} names column {f!r}, which the table does not have")
                continue
            if strict:
                raise OptionError(f"Unknown table option {key!r} (value {value!r})")
        # Typed parse of everything we know, so a malformed value fails now, not mid-write.
        for prop in (
            "bucket", "target_file_size", "write_buffer_size", "write_only", "page_size",
            "num_sorted_run_compaction_trigger", "num_levels", "max_size_amplification_percent",
            "size_ratio", "snapshot_num_retained_min", "snapshot_num_retained_max",
            "snapshot_time_retained_ms", "snapshot_expire_limit", "commit_max_retries",
            "manifest_target_file_size", "manifest_merge_min_count", "ignore_delete",
            "full_compaction_delta_commits", "consumer_expiration_ms", "dynamic_partition_overwrite",
            "zstd_level", "compaction_min_file_num", "compaction_parallelism",
            "write_buffer_spillable", "write_buffer_spill_max_disk_size", "spill_zstd_level",
            "local_sort_max_num_file_handles", "compaction_force_up_level0",
        ):
            getattr(self, prop)
        for key in PATH_PART_OPTIONS:
            if key in self.raw:
                try:
                    check_path_part(self.raw[key], f"option {key}")
                except UnsafePathError as exc:
                    raise OptionError(f"{exc} (it becomes part of file names inside the table)") from None
        if self.merge_engine not in SUPPORTED_MERGE_ENGINES:
            raise UnsupportedFeatureError(f"Option merge-engine={self.merge_engine!r} is not supported")
        if self.changelog_producer not in SUPPORTED_CHANGELOG_PRODUCERS:
            raise UnsupportedFeatureError(
                f"Option changelog-producer={self.changelog_producer!r} is not supported"
            )
        if strict:
            _check_java_spellings(self)
        if self.file_compression not in COMPRESSIONS:
            raise UnsupportedFeatureError(f"Option file.compression={self.file_compression!r} is not supported")
        if self.manifest_compression not in {"zstd", "zstandard", "none", "null", "deflate", "snappy"}:
            raise UnsupportedFeatureError(
                f"Option manifest.compression={self.manifest_compression!r} is not supported"
            )
        if self.spill_compression not in SPILL_COMPRESSIONS:
            raise UnsupportedFeatureError(f"Option spill-compression={self.spill_compression!r} is not supported")
        if self.local_sort_max_num_file_handles < 2:
            raise OptionError("Option local-sort.max-num-file-handles must be at least 2")
        if self.num_levels < 2:
            raise OptionError(f"Option num-levels={self.num_levels} must be at least 2")
        if self.snapshot_num_retained_min < 1:
            raise OptionError("Option snapshot.num-retained.min must be at least 1")
        if self.snapshot_num_retained_max < self.snapshot_num_retained_min:
            raise OptionError(
                f"Contradictory options: snapshot.num-retained.max={self.snapshot_num_retained_max} "
                f"is below snapshot.num-retained.min={self.snapshot_num_retained_min}"
            )
        cmin, cmax, _ = self.changelog_retention()
        if cmin < 1:
            raise OptionError("Option changelog.num-retained.min must be at least 1")
        if cmax < cmin:
            raise OptionError(
                f"Contradictory options: changelog.num-retained.max={cmax} is below changelog.num-retained.min={cmin}"
            )
        if self.num_sorted_run_stop_trigger < self.num_sorted_run_compaction_trigger:
            raise OptionError(
                "Contradictory options: num-sorted-run.stop-trigger is below num-sorted-run.compaction-trigger"
            )


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
