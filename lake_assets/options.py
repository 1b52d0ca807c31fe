"""Table options (Paimon's CoreOptions): typed accessors parsed once, and validation.

Options are stored as strings in the schema file exactly as Paimon stores them. What each key
means, its type, default and validator are rows of the option registry
(`lake_assets.option_rules`); this module derives the known key sets from it and gives the typed
view `CoreOptions`, which parses every option a schema carries once, through those rows (the
parsing in `lake_assets.option_access`, the merge engines' options in `lake_assets.option_merge`,
the retention and lifecycle options in `lake_assets.option_lifecycle`, the table's layout,
compaction and commit options here). Anything this package does not implement fails loudly before
a byte is written, so that no Paimon reader is ever handed a table it would misread.
"""

from __future__ import annotations

from dataclasses import dataclass

from lake_assets.durations import parse_duration_ms
from lake_assets.option_lifecycle import LifecycleOptions
from lake_assets.option_merge import IGNORE_DELETE_KEYS, MergeOptions
from lake_assets.option_rules import COMPRESSIONS, RULES, per_operation_rule, rule_for
from lake_assets.option_rules_fields import FIELD_OPTION
from lake_assets.option_rules_layout import SPILL_COMPRESSIONS
from lake_assets.option_rules_merging import CHANGELOG_PRODUCERS, MERGE_ENGINES
from lake_assets.option_types import MiB, parse_memory_size

__all__ = [
    "CHANGELOG_PRODUCERS",
    "COMPRESSIONS",
    "FIELD_OPTION",
    "IGNORE_DELETE_KEYS",
    "KNOWN_OPTIONS",
    "LAKE_ASSETS_OPTIONS",
    "MERGE_ENGINES",
    "SPILL_COMPRESSIONS",
    "UNSUPPORTED_VALUES",
    "CoreOptions",
    "MiB",
    "parse_duration_ms",
    "parse_memory_size",
    "per_operation_rule",
    "rule_for",
]

# The rows of the registry that Paimon has (how lake_assets supports each: its row, docs/options.md).
KNOWN_OPTIONS: frozenset[str] = frozenset(k for k, r in RULES.items() if not r.lake_assets_only)

# Options of this package that Paimon does not have. Paimon engines (Java and pypaimon) keep
# keys they do not know in the schema and ignore them, so these never change what they read;
# they only tune how lake_assets itself runs (e.g. compaction.parallelism: compaction units run
# at once in one process, memory one unit each).
LAKE_ASSETS_OPTIONS: frozenset[str] = frozenset(k for k, r in RULES.items() if r.lake_assets_only)

# Options whose refused values are refused per operation on tables that carry them (table_support),
# with the values we implement and why the others are refused.
UNSUPPORTED_VALUES: dict[str, tuple[set[str], str]] = {
    k: (set(r.supported or ()), r.why) for k, r in RULES.items() if r.refuses
}


@dataclass(frozen=True)
class CoreOptions(MergeOptions, LifecycleOptions):
    """Typed, validated view over a table's option map (Paimon's CoreOptions)."""

    # ---- layout
    @property
    def bucket(self) -> int:
        return self._int("bucket", -1)

    @property
    def bucket_key(self) -> tuple[str, ...]:
        return self._list("bucket-key")

    @property
    def bucket_function(self) -> str:
        """``bucket-function.type``: ``default``, ``mod`` or ``hive`` (`lake_assets.lsm.bucket_function`)."""
        return self._choice("bucket-function.type")

    @property
    def file_compression(self) -> str:
        return self._choice("file.compression")

    @property
    def zstd_level(self) -> int:
        return self._int("file.compression.zstd-level", 1)

    @property
    def manifest_compression(self) -> str:
        return self._choice("manifest.compression")

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
    def lookup_cache_max_memory_size(self) -> int:
        """``lookup.cache-max-memory-size``: the decoded rows a writer's lookup compaction keeps
        between rounds (`ops.dv_row_cache`)."""
        return self._size("lookup.cache-max-memory-size", 256 * MiB)

    @property
    def write_buffer_spillable(self) -> bool | None:
        """``write-buffer-spillable``; None when unset (the writer picks, see ops/write.py)."""
        return self._typed("write-buffer-spillable", None)  # type: ignore[return-value]

    @property
    def dynamic_bucket_target_row_num(self) -> int:
        """``dynamic-bucket.target-row-num``: keys per bucket in dynamic bucket mode."""
        return self._typed("dynamic-bucket.target-row-num")  # type: ignore[return-value]

    @property
    def cross_partition_index_ttl_ms(self) -> int | None:
        """``cross-partition-upsert.index-ttl`` in ms; None (unset): keys are never forgotten."""
        return self._typed("cross-partition-upsert.index-ttl", None)  # type: ignore[return-value]

    @property
    def dynamic_bucket_assigners(self) -> int:
        """How many assigners a dynamic-bucket writer runs: ``dynamic-bucket.initial-buckets``, else
        ``dynamic-bucket.assigner-parallelism``, else one (ops/dynamic_bucket.py)."""
        for key in ("dynamic-bucket.initial-buckets", "dynamic-bucket.assigner-parallelism"):
            if key in self.raw:
                return self._typed(key)  # type: ignore[return-value]
        return 1

    @property
    def write_buffer_spill_max_disk_size(self) -> int | None:
        """``write-buffer-spill.max-disk-size``; None is Paimon's default, unbounded."""
        return self._typed("write-buffer-spill.max-disk-size", None)  # type: ignore[return-value]

    @property
    def spill_compression(self) -> str:
        return self._choice("spill-compression")

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
        return str(self._typed("data-file.prefix"))

    @property
    def changelog_file_prefix(self) -> str:
        return str(self._typed("changelog-file.prefix"))

    @property
    def partition_default_name(self) -> str:
        return str(self._typed("partition.default-name"))

    @property
    def partition_legacy_name(self) -> bool:
        """``partition.legacy-name``: directory names from toString of the values (else cast to STRING)."""
        return self._bool("partition.legacy-name", True)

    @property
    def dynamic_partition_overwrite(self) -> bool:
        return self._bool("dynamic-partition-overwrite", True)

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
    def compaction_max_file_num(self) -> int | None:
        """``compaction.max.file-num`` (or its fallback key), None when unset: its default is
        the table kind's (`lsm.bucketed_append.DEFAULT_MAX_FILE_NUM`; no cap for unaware-bucket tables)."""
        return self._typed("compaction.max.file-num", None)  # type: ignore[return-value]

    @property
    def compaction_parallelism(self) -> int | None:
        """Units an in-process compaction runs at once (None: as many as reads use)."""
        return self._typed("compaction.parallelism", None)  # type: ignore[return-value]

    @property
    def compaction_merge_rows(self) -> int | None:
        """Rows a compaction unit gathers per merge step (None: `ops.compact.memory`'s default)."""
        return self._typed("compaction.merge-rows", None)  # type: ignore[return-value]

    @property
    def sort_spill_threshold(self) -> int | None:
        """``sort-spill-threshold``: sorted runs a compaction merge reads at once (None: unset,
        `ops.compact.fan_in.sort_spill_threshold` derives it as Paimon does)."""
        return self._typed("sort-spill-threshold", None)  # type: ignore[return-value]

    @property
    def read_batch_size(self) -> int | None:
        """Rows per batch of streaming reads (``read.batch-size``; None: the reader's default)."""
        return self._typed("read.batch-size", None)  # type: ignore[return-value]

    @property
    def read_parquet_buffer_size(self) -> int:
        """Bytes of each Parquet column chunk a batched read holds at a time (0: whole chunks)."""
        return self._size("read.parquet.buffer-size")

    @property
    def read_ahead(self) -> int | None:
        """Batches a streaming read's thread queues ahead (``read.read-ahead``; None: the default)."""
        return self._typed("read.read-ahead", None)  # type: ignore[return-value]

    @property
    def split_target_size(self) -> int:
        """Bytes Paimon's batch planner packs into one split (``source.split.target-size``)."""
        return self._int("source.split.target-size", 128 * 1024 * 1024)

    @property
    def split_open_file_cost(self) -> int:
        """Least weight of a file when packing splits (``source.split.open-file-cost``)."""
        return self._int("source.split.open-file-cost", 4 * 1024 * 1024)

    @property
    def compaction_force_up_level0(self) -> bool:
        return self._bool("compaction.force-up-level-0", False)

    @property
    def full_compaction_delta_commits(self) -> int | None:
        return self._typed("full-compaction.delta-commits", None)  # type: ignore[return-value]

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

    @property
    def file_suffix_include_compression(self) -> bool:
        return self._bool("file.suffix.include.compression", False)

    @property
    def commit_force_create_snapshot(self) -> bool:
        return self._bool("commit.force-create-snapshot", False)

    @property
    def visibility_callback_enabled(self) -> bool:
        return self._bool("visibility-callback.enabled", False)

    @property
    def visibility_callback_timeout_ms(self) -> int:
        return self._duration("visibility-callback.timeout", 1_800_000)

    @property
    def visibility_callback_check_interval_ms(self) -> int:
        return self._duration("visibility-callback.check-interval", 10_000)

    # ------------------------------------------------------------ validation
    def validate(self, *, field_names: tuple[str, ...] = (), strict: bool = True) -> None:
        """Reject unknown, malformed, out-of-range and unsupported options, naming each key
        (all problems in one error; see `lake_assets.option_validation.validate_options`)."""
        from lake_assets.option_validation import validate_options

        validate_options(self, field_names=field_names, strict=strict)
