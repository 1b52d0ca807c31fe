"""Per-bucket LSM health of one table, computed from live file metadata only (no storage access)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from lake_assets.lsm.compact_strategy import UniversalCompaction, pick_append_small_files, small_file_threshold
from lake_assets.lsm.levels import Levels
from lake_assets.options import CoreOptions
from lake_assets.spec.manifest import DataFileMeta

__all__ = ["BucketHealth", "bucket_health", "health_rows_to_pylist"]


@dataclass(frozen=True, slots=True)
class BucketHealth:
    """Health numbers of one (partition, bucket).

    ``size_amplification_percent`` is 100 × (size of all runs but the oldest) / size of the oldest
    run, the quantity universal compaction bounds; ``inf`` when the oldest run is empty of bytes.
    ``oldest_level0_age_ms`` is None when there is no level-0 file with a creation time.
    """

    partition: Hashable
    bucket: int
    file_count: int
    level0_file_count: int
    sorted_runs: int
    total_bytes: int
    avg_file_bytes: float
    small_file_count: int
    size_amplification_percent: float
    oldest_level0_age_ms: int | None
    delete_row_count: int
    compaction_would_trigger: bool

    def to_dict(self) -> dict[str, object]:
        # Shallow on purpose: asdict would deep-copy the partition key for nothing.
        return {f.name: getattr(self, f.name) for f in fields(self)}


def bucket_health(
    files_by_bucket: Mapping[tuple[Hashable, int], Sequence[DataFileMeta]],
    *,
    num_levels: int,
    options: CoreOptions,
    now_ms: int,
    small_file_threshold: int | None = None,
) -> list[BucketHealth]:
    """One :class:`BucketHealth` per (partition, bucket) key, in the mapping's order.

    ``now_ms`` must be on the same clock as ``creation_time_ms``: the writer's local wall clock
    encoded as if it were UTC epoch millis (e.g. ``local_now.replace(tzinfo=UTC).timestamp() * 1000``),
    not ``time.time()``, or ages are off by the UTC offset.

    ``compaction_would_trigger`` asks universal compaction (PK tables, without the delta-commit full
    compaction, which depends on commit history) or append small-file picking (tables without a key).
    Keys are never decoded, so large tables stay cheap.
    """
    threshold = _default_threshold(options) if small_file_threshold is None else small_file_threshold
    strategy = UniversalCompaction(
        options.max_size_amplification_percent, options.size_ratio, options.num_sorted_run_compaction_trigger
    )
    return [
        _one_bucket(partition, bucket, files, num_levels, options, strategy, threshold, now_ms)
        for (partition, bucket), files in files_by_bucket.items()
    ]


def _default_threshold(options: CoreOptions) -> int:
    return small_file_threshold(options.target_file_size, options.small_file_ratio)


def _one_bucket(
    partition: Hashable,
    bucket: int,
    files: Sequence[DataFileMeta],
    num_levels: int,
    options: CoreOptions,
    strategy: UniversalCompaction,
    threshold: int,
    now_ms: int,
) -> BucketHealth:
    levels = Levels(files, num_levels)
    runs = levels.level_sorted_runs()
    total = small = deletes = 0
    for f in files:
        total += f.file_size
        if f.file_size < threshold:
            small += 1
        deletes += f.delete_row_count or 0
    level0_created = [f.creation_time_ms for f in levels.level0 if f.creation_time_ms is not None]

    if options.has_primary_key:
        would_trigger = strategy.pick(levels.number_of_levels, runs) is not None
    else:
        would_trigger = bool(_append_groups(files, options))

    return BucketHealth(
        partition=partition,
        bucket=bucket,
        file_count=len(files),
        level0_file_count=len(levels.level0),
        sorted_runs=len(runs),
        total_bytes=total,
        avg_file_bytes=total / len(files) if files else 0.0,
        small_file_count=small,
        size_amplification_percent=_size_amplification(r.run.total_size for r in runs),
        oldest_level0_age_ms=now_ms - min(level0_created) if level0_created else None,
        delete_row_count=deletes,
        compaction_would_trigger=would_trigger,
    )


def _size_amplification(run_sizes: Iterable[int]) -> float:
    sizes = list(run_sizes)
    if len(sizes) < 2:
        return 0.0
    newer = sum(sizes[:-1])
    oldest = sizes[-1]
    if oldest == 0:
        return float("inf") if newer else 0.0
    return 100.0 * newer / oldest


def _append_groups(files: Sequence[DataFileMeta], options: CoreOptions) -> list[list[DataFileMeta]]:
    # Bucketed append tables merge anything below target; unaware-bucket ones apply the small-file ratio.
    ratio = 1.0 if options.bucket > 0 else options.small_file_ratio
    return pick_append_small_files(
        files, options.target_file_size, options.compaction_min_file_num, small_file_ratio=ratio
    )


def health_rows_to_pylist(rows: Iterable[BucketHealth]) -> list[dict[str, object]]:
    """Rows as plain dicts, ready for ``pyarrow.Table.from_pylist``."""
    return [r.to_dict() for r in rows]
