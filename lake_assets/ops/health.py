"""Per-bucket LSM health of one table, computed from live file metadata only (no storage access).

Tables without a primary key (append tables: unaware-bucket ``bucket = -1``, fixed-bucket, and
row-tracking ones) have no LSM: their files are append files, all at level 0, never merged by key,
so level-0 files, sorted runs, size amplification and level-0 age do not apply (None). Paimon's
append compaction (``BucketedAppendCompactManager``, ``UnawareAppendTableCompactionCoordinator``)
has no levels to bring down either: its backlog is small files (and, with deletion vectors, files
to purge), which ``small_file_count`` and ``compaction_would_trigger`` (what our compaction's planner
would rewrite) report. A data-evolution table's (``data-evolution.enabled``)
files of one row-id range are one set of rows (a column update's file holds new values of rows its
range's base file holds): its rows, small files and compaction trigger are counted by row-id range,
as Paimon HEAD's ``DataEvolutionCompactCoordinator`` plans (ops/compact/data_evolution_compact.py).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from lake_assets.lsm.bucketed_append import bucketed_append_groups
from lake_assets.lsm.compact_strategy import UniversalCompaction, pick_append_small_files, small_file_threshold
from lake_assets.lsm.levels import Levels
from lake_assets.ops.compact.data_evolution_compact import plan_groups as plan_data_evolution
from lake_assets.ops.data_evolution_read import overlap_groups, ranged_files
from lake_assets.ops.row_tracking import data_evolution_enabled
from lake_assets.options import CoreOptions
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.table_support import POSTPONE_BUCKET

__all__ = ["NO_LSM", "BucketHealth", "append_groups", "bucket_health", "health_rows_to_pylist"]

#: Why the LSM numbers of a table without a primary key are None.
NO_LSM = ("a table without a primary key has no LSM levels: its files are append files, all at level 0, "
          "never merged by key (no sorted runs, size amplification or level-0 backlog); its compaction "
          "backlog is small files, as compaction_would_trigger says")


@dataclass(frozen=True, slots=True)
class BucketHealth:
    """Health numbers of one (partition, bucket).

    ``size_amplification_percent`` is 100 × (size of all runs but the oldest) / size of the oldest
    run, the quantity universal compaction bounds; ``inf`` when the oldest run is empty of bytes.
    ``oldest_level0_age_ms`` is None when there is no level-0 file with a creation time. The four
    LSM numbers (level-0 files, sorted runs, size amplification, level-0 age) are None for
    tables without a primary key (`NO_LSM`).

    ``row_count`` is the rows the files hold, before deletion vectors: their records for a table
    without a primary key, each row-id range once for a data-evolution table (`rows_of_row_ranges`),
    their records for a primary-key bucket of one sorted run without retract rows (each key once);
    None where the metadata cannot tell (more runs, retracts, and bucket-postpone, whose rows no
    reader sees until they are moved).
    """

    partition: Hashable
    bucket: int
    file_count: int
    level0_file_count: int | None
    sorted_runs: int | None
    total_bytes: int
    avg_file_bytes: float
    small_file_count: int
    size_amplification_percent: float | None
    oldest_level0_age_ms: int | None
    delete_row_count: int
    compaction_would_trigger: bool
    row_count: int | None

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
    table: str = "the table",
) -> list[BucketHealth]:
    """One :class:`BucketHealth` per (partition, bucket) key, in the mapping's order.

    ``now_ms`` must be on the same clock as ``creation_time_ms``: the writer's local wall clock
    encoded as if it were UTC epoch millis (e.g. ``local_now.replace(tzinfo=UTC).timestamp() * 1000``),
    not ``time.time()``, or ages are off by the UTC offset.

    ``compaction_would_trigger`` asks universal compaction (PK tables, without the delta-commit full
    compaction, which depends on commit history), the data-evolution planner (data-evolution
    tables: units of whole row-id ranges) or append small-file picking (other tables without a key,
    as `Table.compact` plans them; `table_health` asks with their deletion vectors' rows).
    A data-evolution table's small files are the files of its row-id ranges smaller together than
    the threshold: a column update's file is never compacted alone, only with its range.
    Keys are never decoded, so large tables stay cheap.
    """
    threshold = _default_threshold(options) if small_file_threshold is None else small_file_threshold
    strategy = UniversalCompaction(
        options.max_size_amplification_percent, options.size_ratio, options.num_sorted_run_compaction_trigger
    )
    return [
        _one_bucket(partition, bucket, files, num_levels, options, strategy, threshold, now_ms, table)
        for (partition, bucket), files in files_by_bucket.items()
    ]


def _default_threshold(options: CoreOptions) -> int:
    return small_file_threshold(options.target_file_size, options.small_file_ratio)


def _row_range_groups(files: Sequence[DataFileMeta], table: str) -> list[list[DataFileMeta]]:
    """A data-evolution table's files by row-id range: each group is one set of rows (its base
    file's, and the column updates of them). Metadata no Paimon writer leaves (a file without a
    first row id, overlapping files of different ranges) raises `CorruptMetadataError`."""
    return overlap_groups(ranged_files(files, f"count the rows of {table}", table), f"count the rows of {table}")


def _one_bucket(
    partition: Hashable,
    bucket: int,
    files: Sequence[DataFileMeta],
    num_levels: int,
    options: CoreOptions,
    strategy: UniversalCompaction,
    threshold: int,
    now_ms: int,
    table: str,
) -> BucketHealth:
    total = deletes = 0
    for f in files:
        total += f.file_size
        deletes += f.delete_row_count or 0
    common = {"partition": partition, "bucket": bucket, "file_count": len(files), "total_bytes": total,
              "avg_file_bytes": total / len(files) if files else 0.0, "delete_row_count": deletes}
    if not options.has_primary_key:
        return _append_bucket(files, options, threshold, common, table)
    levels = Levels(files, num_levels)
    runs = levels.level_sorted_runs()
    level0_created = [f.creation_time_ms for f in levels.level0 if f.creation_time_ms is not None]
    would_trigger = strategy.pick(levels.number_of_levels, runs) is not None
    exact = len(runs) <= 1 and deletes == 0 and bucket != POSTPONE_BUCKET
    return BucketHealth(
        **common,  # type: ignore[arg-type]
        level0_file_count=len(levels.level0),
        sorted_runs=len(runs),
        small_file_count=sum(1 for f in files if f.file_size < threshold),
        size_amplification_percent=_size_amplification(r.run.total_size for r in runs),
        oldest_level0_age_ms=now_ms - min(level0_created) if level0_created else None,
        compaction_would_trigger=would_trigger,
        row_count=sum(f.row_count for f in files) if exact else None,
    )


def _append_bucket(files: Sequence[DataFileMeta], options: CoreOptions, threshold: int,
                   common: dict[str, object], table: str) -> BucketHealth:
    """A bucket of a table without a primary key: no LSM numbers (`NO_LSM`); a data-evolution
    table's rows, small files and trigger by row-id range (see `bucket_health`)."""
    if data_evolution_enabled(options.raw):
        groups = _row_range_groups(files, table)
        rows = sum(g[0].row_count for g in groups)  # a range's files span it alike (checked)
        small = sum(len(g) for g in groups if sum(f.file_size for f in g) < threshold)
        would_trigger = bool(plan_data_evolution(files, options, table))
    else:
        rows = sum(f.row_count for f in files)
        small = sum(1 for f in files if f.file_size < threshold)
        would_trigger = bool(append_groups(files, options))
    return BucketHealth(
        **common,  # type: ignore[arg-type]
        level0_file_count=None, sorted_runs=None, small_file_count=small, size_amplification_percent=None,
        oldest_level0_age_ms=None, compaction_would_trigger=would_trigger, row_count=rows,
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


def append_groups(files: Sequence[DataFileMeta], options: CoreOptions) -> list[list[DataFileMeta]]:
    """The groups of small files a (not full) compaction of one bucket of a table without a primary
    key, nor deletion vectors, nor data evolution, rewrites: the planner's own rule
    (`compact.plan.plan_bucket`): Paimon's bucketed pick for a fixed-bucket table
    (`lsm.bucketed_append`), the small-file stretches for an unaware-bucket one."""
    if options.bucket > 0:
        return bucketed_append_groups(files, options, full=False)
    return pick_append_small_files(
        files, options.target_file_size, options.compaction_min_file_num, small_file_ratio=options.small_file_ratio,
        max_file_num=options.compaction_max_file_num,
    )


def health_rows_to_pylist(rows: Iterable[BucketHealth]) -> list[dict[str, object]]:
    """Rows as plain dicts, ready for ``pyarrow.Table.from_pylist``."""
    return [r.to_dict() for r in rows]
