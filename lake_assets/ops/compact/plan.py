"""Compaction planning: which files of each (partition, bucket) to compact, from manifests only.

A plan is a list of independent, serializable `CompactionTask` units (one partition and bucket
each), biggest first; `lake_assets.ops.compact.rewrite` runs them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lake_assets.errors import InvalidArgumentError, UnsupportedFeatureError
from lake_assets.formats.format_options import FORMAT_PER_LEVEL, format_of_level
from lake_assets.lsm.bucketed_append import bucketed_append_groups
from lake_assets.lsm.compact_strategy import (
    CompactUnit,
    RewriteSection,
    UniversalCompaction,
    pick_append_full,
    pick_append_small_files,
    pick_full,
    plan_rewrite,
    should_drop_delete,
)
from lake_assets.lsm.levels import Levels
from lake_assets.lsm.lookup_merge import merges_by_lookup, needs_lookup
from lake_assets.lsm.merge_engine.first_row import lookup_files
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.ops.append_vectors import plan_groups
from lake_assets.ops.bucket_count import check_bucket_count
from lake_assets.ops.compact.data_evolution_compact import plan_groups as plan_data_evolution
from lake_assets.ops.dv_compact import delete_heavy_files
from lake_assets.ops.lookup_unit_rules import needs_old_values
from lake_assets.ops.plan import plan_splits
from lake_assets.ops.row_tracking import data_evolution_enabled
from lake_assets.ops.scan import Split
from lake_assets.predicate import Predicate
from lake_assets.spec.manifest import DataFileMeta, IndexManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.table_rules import check_engine_producer
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.options import CoreOptions
    from lake_assets.store.file_store import FileStore


@dataclass(frozen=True)
class CompactionTask:
    """One independent unit of compaction work: some files of one (partition, bucket)."""

    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    total_buckets: int
    sections: tuple[RewriteSection, ...] = ()  # primary-key tables
    append_groups: tuple[tuple[DataFileMeta, ...], ...] = ()  # append tables
    full: bool = False
    # changelog production: "lookup" or "full-compaction", and the files of the state before
    changelog_producer: str | None = None
    before_files: tuple[DataFileMeta, ...] = ()
    # first-row: older files whose keys the output drops (see lsm/merge_engine/first_row.py)
    lookup_files: tuple[DataFileMeta, ...] = ()
    # deletion vectors (ops/dv_compact.py): the bucket's index files, and the files above the
    # unit whose rows the output supersedes
    deletion_vectors: bool = False
    dv_entries: tuple[IndexManifestEntry, ...] = ()
    dv_lookup_files: tuple[DataFileMeta, ...] = ()
    # files past compaction.delete-ratio-threshold, rewritten at their level without their dead rows
    dv_rewrite_files: tuple[DataFileMeta, ...] = ()
    # lookup tables merging old rows without deletion vectors: the files above the output level in
    # which the unit's level-0 keys are looked up (ops/dv_old_values.py, `AboveLookup`)
    lookup_above_files: tuple[DataFileMeta, ...] = ()

    @property
    def input_files(self) -> list[DataFileMeta]:
        files = [f for s in self.sections if s.kind != "keep" for f in s.files]
        return files + [f for g in self.append_groups for f in g] + list(self.dv_rewrite_files)

    @property
    def output_level(self) -> int:
        """The unit's output level (Paimon's CompactUnit has one; upgrades and keeps share it)."""
        return max((s.output_level for s in self.sections), default=0)

    @property
    def input_bytes(self) -> int:
        return sum(f.file_size for f in self.input_files)

    @property
    def input_rows(self) -> int:
        return sum(f.row_count for f in self.input_files)


@dataclass
class CompactionPlan:
    """The tasks of one compaction run, planned from ``snapshot``."""

    snapshot_id: int | None
    tasks: list[CompactionTask] = field(default_factory=list)


def commits_since_last_compaction(store: FileStore, latest: Snapshot | None, cap: int = 1000) -> int:
    """APPEND/OVERWRITE snapshots since the newest COMPACT one (for full-compaction.delta-commits)."""
    if latest is None:
        return 0
    n = 0
    sm = store.snapshot_manager
    for sid in range(latest.id, max(latest.id - cap, 0), -1):
        snap = sm.try_snapshot(sid)
        if snap is None or snap.commit_kind == CommitKind.COMPACT:
            break
        n += 1
    return n


def needs_level0_compaction(opts: CoreOptions) -> bool:
    """Whether every compaction takes all of level 0, as Paimon's ForceUpLevel0Compaction does.

    Paimon uses it when the table "needs lookup" (`lookup_merge.needs_lookup`: ``changelog-producer
    = lookup``, where changelog comes from compacting level-0 data; ``merge-engine=first-row`` and
    deletion vectors, whose level 0 batch reads do not see, so a writer compacts it on every commit
    to make rows visible at once; ``force-lookup``) - and when ``compaction.force-up-level-0`` is set.
    """
    return needs_lookup(opts) or opts.compaction_force_up_level0


def _rewrite_level0_into_other_formats(sections: list[RewriteSection], options: Mapping[str, str],
                                       drop_delete: bool) -> list[RewriteSection]:
    """Level-0 files a lookup compaction would relabel into a level of another format
    (``file.format.per.level``) are rewritten into that format instead, as Paimon 1.x's
    LookupMergeTreeCompactRewriter.upgradeStrategy does. (Java 0.9 relabels them: such a level then
    keeps files of the level-0 format, which every reader takes, by extension, all the same.)"""
    if not options.get(FORMAT_PER_LEVEL):
        return sections
    level0 = format_of_level(options, 0, "")
    return [RewriteSection("rewrite", s.output_level, s.intervals, drop_delete)
            if s.kind == "upgrade" and s.files[0].level == 0 and format_of_level(options, s.output_level, "") != level0
            else s for s in sections]


def _dv_enabled(opts: CoreOptions) -> bool:
    """``deletion-vectors.enabled``: Paimon's writer then "needs lookup" as well."""
    return str(opts.raw.get("deletion-vectors.enabled", "false")).strip().lower() == "true"


def plan_bucket(
    store: FileStore, split: Split, *, full: bool, commits_since_full: int | None = None
) -> CompactionTask | None:
    """Choose what to compact in one (partition, bucket) (pure: file metadata only)."""
    schema = store.schema
    opts = schema.core_options
    if not schema.primary_keys:
        target = opts.target_file_size
        if _dv_enabled(opts):
            # files with deletion vectors are rewritten without their deleted rows (ops/append_vectors.py;
            # a fixed-bucket table's bucket picked as Java's BucketedAppendCompactManager)
            vector_groups = plan_groups(store, split, full=full, commits_since_full=commits_since_full)
            if not vector_groups:
                return None
            return CompactionTask(split.partition, split.partition_values, split.bucket, split.total_buckets,
                                  append_groups=tuple(tuple(g) for g in vector_groups), full=full,
                                  deletion_vectors=True, dv_entries=split.dv_entries)
        if data_evolution_enabled(schema.options):
            # units of whole row-id ranges, HEAD's DataEvolutionCompactCoordinator (no full mode)
            groups = plan_data_evolution(split.files, opts, store.name)
        elif split.bucket >= 0 and split.total_buckets > 0:
            # a fixed-bucket append table's bucket: an ordered stream (lsm/bucketed_append.py)
            groups = bucketed_append_groups(split.files, opts, full=full, commits_since_full=commits_since_full)
        elif full:
            files = pick_append_full(split.files, target)
            groups = [files] if files else []
        else:
            groups = pick_append_small_files(split.files, target, opts.compaction_min_file_num,
                                             small_file_ratio=opts.small_file_ratio,
                                             max_file_num=opts.compaction_max_file_num)
        if not groups:
            return None
        return CompactionTask(split.partition, split.partition_values, split.bucket, split.total_buckets,
                              append_groups=tuple(tuple(g) for g in groups), full=full)
    key_types = schema.types(list(schema.trimmed_primary_keys))
    levels = Levels(split.files, opts.num_levels)
    runs = levels.level_sorted_runs()
    producer = opts.changelog_producer
    unit: CompactUnit | None
    if full:
        unit = pick_full(opts.num_levels, runs)
    else:
        unit = UniversalCompaction.from_options(opts).pick(
            opts.num_levels, runs, commits_since_full=commits_since_full
        )
        n_level0 = len(levels.level0)
        if needs_level0_compaction(opts) and n_level0 and (
            unit is None or not all(f in unit.files for f in levels.level0)
        ):
            # Paimon's ForceUpLevel0Compaction: take all of level 0 now
            unit = UniversalCompaction.create_unit(runs, levels.max_level, n_level0)
    dv = _dv_enabled(opts)
    # files whose vectors hide too many rows: rewritten in place (compaction.delete-ratio-threshold)
    heavy = delete_heavy_files(store, split) if dv else []
    if unit is None or not unit.files:
        if not heavy:
            return None
        unit = CompactUnit(levels.max_level, ())
    drop = should_drop_delete(unit.output_level, levels)
    sections = plan_rewrite(unit, key_types, opts.target_file_size, opts.small_file_ratio, drop_delete=drop)
    if needs_lookup(opts):  # Java's lookup rewriter
        sections = _rewrite_level0_into_other_formats(sections, schema.options, drop)
    lookup: tuple[DataFileMeta, ...] = ()
    if dv:
        # Every level-0 row is looked up above (a relabelled level-0 file has its keys read for
        # that), and retract rows go: the vectors hide what they retracted, and raw reads must
        # never meet one. So a level-0 file that may hold retracts is rewritten, not relabelled.
        # Engines that merge a key's old row in (dv_old_values.py) rewrite every level-0 file
        # unless the unit writes the top level (nothing above to look up), as Java's
        # LookupMergeTreeCompactRewriter.upgradeStrategy.
        merges_old = needs_old_values(opts)
        sections = [RewriteSection("rewrite", s.output_level, s.intervals, True)
                    if s.kind == "rewrite" or (s.files[0].level == 0 and (
                        s.files[0].delete_row_count != 0 or (merges_old and s.output_level != levels.max_level)))
                    else s for s in sections]
        in_unit = {f.file_name for f in unit.files}
        heavy = [f for f in heavy if f.file_name not in in_unit]
    above: tuple[DataFileMeta, ...] = ()
    if not dv and merges_by_lookup(opts) and needs_old_values(opts):
        sections, above = _lookup_sections(sections, split.files, unit.output_level, levels.max_level)
    if engine_of(opts).drops_known_keys:
        lookup = lookup_files(unit.files, split.files, key_types)
        if lookup:
            # a level-0 file may repeat keys of the lookup files: rewrite it through the filter
            sections = [RewriteSection("rewrite", s.output_level, s.intervals, s.drop_delete)
                        if s.kind == "upgrade" and s.files[0].level == 0 else s for s in sections]
    if all(s.kind == "keep" for s in sections) and not heavy:
        return None
    changelog: str | None = None
    before: tuple[DataFileMeta, ...] = ()
    if producer == "lookup" and any(f.level == 0 for f in unit.files):
        changelog = "lookup"
        before = tuple(f for f in split.files if f.level > 0)
    elif producer == "full-compaction" and unit.full:
        changelog = "full-compaction"
        before = tuple(f for f in split.files if f.level == levels.max_level)
    dv_lookup: tuple[DataFileMeta, ...] = ()
    if dv:
        rewritten = {f.file_name for s in sections if s.kind == "rewrite" for f in s.files}
        rewritten |= {f.file_name for f in heavy}
        dv_lookup = tuple(f for f in split.files if f.level > 0 and f.file_name not in rewritten)
    return CompactionTask(split.partition, split.partition_values, split.bucket, split.total_buckets,
                          sections=tuple(sections), full=unit.full, changelog_producer=changelog,
                          before_files=before, lookup_files=lookup, deletion_vectors=dv,
                          dv_entries=split.dv_entries if dv else (), dv_lookup_files=dv_lookup,
                          dv_rewrite_files=tuple(heavy), lookup_above_files=above)


def _lookup_sections(sections: list[RewriteSection], files: Iterable[DataFileMeta], output_level: int,
                     max_level: int) -> tuple[list[RewriteSection], tuple[DataFileMeta, ...]]:
    """A lookup unit of a partial-update, aggregation or ``sequence.field`` table (no deletion
    vectors): its sections, with every level-0 file it would relabel to a level below the top
    rewritten instead (its rows must be merged with the keys' rows above: Java's
    ``LookupMergeTreeCompactRewriter.upgradeStrategy``), and the files above the output level in
    which such a unit looks its level-0 keys up (none when the unit has no level-0 file or
    writes the top level: nothing is above)."""
    if output_level == 0 or not any(f.level == 0 for s in sections if s.kind != "keep" for f in s.files):
        return sections, ()
    sections = [RewriteSection("rewrite", s.output_level, s.intervals, s.drop_delete)
                if s.kind == "upgrade" and s.files[0].level == 0 and s.output_level != max_level else s
                for s in sections]
    return sections, tuple(f for f in files if f.level > output_level)


def plan_compaction(
    store: FileStore,
    *,
    full: bool = False,
    partitions: Iterable[dict[str, Any]] | None = None,
    max_units: int | None = None,
    snapshot: Snapshot | None = None,
) -> CompactionPlan:
    """Plan compaction units for every (partition, bucket) that needs one, from manifests only."""
    check_engine_producer(f"Cannot compact {store.name}", store.schema.core_options)
    store.require(Op.COMPACT)
    if store.schema.primary_keys and store.schema.core_options.bucket == -2:
        # bucket-postpone is no LSM bucket: its files move into real buckets (ops/postpone.py)
        raise UnsupportedFeatureError(
            f"Cannot plan a compaction of {store.name}: it is a postpone-bucket table (bucket = -2); "
            "compact() moves its postponed rows into real buckets"
        )
    snap = snapshot if snapshot is not None else store.snapshot_manager.latest()
    if snap is None:
        return CompactionPlan(None)
    pred = partition_predicate(store, partitions)
    splits = plan_splits(store, snap, pred, Op.COMPACT)
    for split in splits:  # as Java's compaction writer, never into a partition of another count
        if split.bucket >= 0 and split.total_buckets > 0:
            check_bucket_count(store.name, store.schema.partition_keys, split.partition_values,
                               split.total_buckets, store.schema.core_options.bucket)
    commits = commits_since_last_compaction(store, snap) if not full else None
    tasks = []
    for split in splits:
        task = plan_bucket(store, split, full=full, commits_since_full=commits)
        if task is not None:
            tasks.append(task)
    # biggest units first: with a cap, they buy the most
    tasks.sort(key=lambda t: -t.input_bytes)
    if max_units is not None:
        tasks = tasks[:max_units]
    return CompactionPlan(snap.id, tasks)


def partition_predicate(store: FileStore, partitions: Iterable[dict[str, Any]] | None) -> Predicate | None:
    """``partitions`` (``[{"dt": "2024-01-01"}, ...]``, any of them) as a predicate on partition
    keys, for the compactions (LSM and postpone). A filter on another column would prune files
    inside a bucket by their stats and compact some of its files only, breaking the level
    invariants: refused by name."""
    if partitions is None:
        return None
    specs = [dict(p) for p in partitions]
    keys = set(store.schema.partition_keys)
    for spec in specs:
        unknown = sorted(set(spec) - keys)
        if unknown:
            raise InvalidArgumentError(
                f"Cannot compact {store.name}: {unknown} are not partition keys (partition keys: {sorted(keys)})"
            )
    # a null partition value is the partition of nulls: `is null` (an `=` with None matches nothing)
    pred = Predicate.of([[(k, "is null") if v is None else (k, "=", v) for k, v in spec.items()]
                         for spec in specs] or None)
    if pred is not None:
        pred = pred.bind(store.schema.arrow_schema, store.name)
    return pred


def group_by_bucket(entries: Iterable[Any]) -> dict[tuple[bytes, int], list[DataFileMeta]]:
    out: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for e in entries:
        out[(e.partition, e.bucket)].append(e.file)
    return out
