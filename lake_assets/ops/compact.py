"""Compaction: plan units per (partition, bucket), run each unit, commit the results.

The pieces are separate so a distributed job can plan on a driver, run units on executors (each
unit is independent and serializable) and commit once:

    plan = plan_compaction(table, full=False)          # reads manifests only
    messages = [run_compaction_task(table, t) for t in plan.tasks]
    table.new_committer(user).commit(messages, identifier)   # COMPACT snapshot, conflict-checked

In one process, `run_compaction_tasks` runs the units in a bounded thread pool (pyarrow releases
the GIL while it decodes, sorts and encodes) and returns their messages in plan order.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import CommitConflictError, InvalidArgumentError
from lake_assets.formats.data_file import (
    FILE_SOURCE_COMPACT,
    SEQUENCE_NUMBER,
    VALUE_KIND,
    DataFileWriter,
    DataFileWriterConfig,
)
from lake_assets.lsm.changelog import diff_states
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
from lake_assets.lsm.key_compare import key_view
from lake_assets.lsm.levels import Levels
from lake_assets.lsm.merge import is_retract, sort_and_merge
from lake_assets.lsm.merge_engine.first_row import drop_known_keys, lookup_files
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.lsm.merge_reader import merge_sorted
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.spec.types import to_arrow_field
from lake_assets.table_rules import check_engine_producer
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.options import CoreOptions
    from lake_assets.table import Table


@dataclass(frozen=True)
class CompactionTask:
    """One independent unit of compaction work: some files of one (partition, bucket)."""

    partition: bytes
    partition_values: tuple
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

    @property
    def input_files(self) -> list[DataFileMeta]:
        files = [f for s in self.sections if s.kind != "keep" for f in s.files]
        return files + [f for g in self.append_groups for f in g]

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


@dataclass
class CompactResult:
    """What a compaction did (a per-run summary for jobs and Dagster metadata)."""

    snapshot_id: int | None
    tasks: int
    files_in: int
    files_out: int
    bytes_in: int
    bytes_out: int
    rows_in: int
    rows_out: int
    upgraded: int
    duration_s: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def commits_since_last_compaction(table: Table, latest: Snapshot | None, cap: int = 1000) -> int:
    """APPEND/OVERWRITE snapshots since the newest COMPACT one (for full-compaction.delta-commits)."""
    if latest is None:
        return 0
    n = 0
    sm = table.snapshot_manager
    for sid in range(latest.id, max(latest.id - cap, 0), -1):
        snap = sm.try_snapshot(sid)
        if snap is None or snap.commit_kind == CommitKind.COMPACT:
            break
        n += 1
    return n


def needs_level0_compaction(opts: CoreOptions) -> bool:
    """Whether every compaction takes all of level 0, as Paimon's ForceUpLevel0Compaction does.

    Paimon uses it when the table "needs lookup" - ``changelog-producer=lookup`` (changelog comes
    from compacting level-0 data) and ``merge-engine=first-row`` (level 0 is invisible to batch
    reads, so a writer compacts it on every commit to make rows visible at once) - and when
    ``compaction.force-up-level-0`` is set.
    """
    return (opts.changelog_producer == "lookup" or engine_of(opts).needs_lookup
            or opts.compaction_force_up_level0)


def plan_bucket(
    table: Table, split: Split, *, full: bool, commits_since_full: int | None = None
) -> CompactionTask | None:
    """Choose what to compact in one (partition, bucket) (pure: file metadata only)."""
    schema = table.schema
    opts = schema.core_options
    if not schema.primary_keys:
        target = opts.target_file_size
        if full:
            files = pick_append_full(split.files, target)
            groups = [files] if files else []
        else:
            groups = pick_append_small_files(split.files, target, opts.compaction_min_file_num,
                                             small_file_ratio=opts.small_file_ratio)
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
    if unit is None or not unit.files:
        return None
    drop = should_drop_delete(unit.output_level, levels)
    sections = plan_rewrite(unit, key_types, opts.target_file_size, opts.small_file_ratio, drop_delete=drop)
    lookup: tuple[DataFileMeta, ...] = ()
    if engine_of(opts).drops_known_keys:
        lookup = lookup_files(unit.files, split.files, key_types)
        if lookup:
            # a level-0 file may repeat keys of the lookup files: rewrite it through the filter
            sections = [RewriteSection("rewrite", s.output_level, s.intervals, s.drop_delete)
                        if s.kind == "upgrade" and s.files[0].level == 0 else s for s in sections]
    if all(s.kind == "keep" for s in sections):
        return None
    changelog: str | None = None
    before: tuple[DataFileMeta, ...] = ()
    if producer == "lookup" and any(f.level == 0 for f in unit.files):
        changelog = "lookup"
        before = tuple(f for f in split.files if f.level > 0)
    elif producer == "full-compaction" and unit.full:
        changelog = "full-compaction"
        before = tuple(f for f in split.files if f.level == levels.max_level)
    return CompactionTask(split.partition, split.partition_values, split.bucket, split.total_buckets,
                          sections=tuple(sections), full=unit.full, changelog_producer=changelog,
                          before_files=before, lookup_files=lookup)


def plan_compaction(
    table: Table,
    *,
    full: bool = False,
    partitions: Iterable[dict[str, Any]] | None = None,
    max_units: int | None = None,
    snapshot: Snapshot | None = None,
) -> CompactionPlan:
    """Plan compaction units for every (partition, bucket) that needs one, from manifests only."""
    check_engine_producer(f"Cannot compact {table.name}", table.schema.core_options)
    table.require(Op.COMPACT)
    snap = snapshot if snapshot is not None else table.latest_snapshot()
    if snap is None:
        return CompactionPlan(None)
    filters = None
    if partitions is not None:
        specs = [dict(p) for p in partitions]
        keys = set(table.schema.partition_keys)
        for spec in specs:
            # A filter on another column would prune files inside a bucket by their stats and
            # compact some of its files only (breaking the level invariants): refuse it.
            unknown = sorted(set(spec) - keys)
            if unknown:
                raise InvalidArgumentError(
                    f"Cannot compact {table.name}: {unknown} are not partition keys "
                    f"(partition keys: {sorted(keys)})"
                )
        filters = [[(k, "=", v) for k, v in spec.items()] for spec in specs] or None
    splits = table.plan(snapshot=snap, filter=filters, op=Op.COMPACT)
    commits = commits_since_last_compaction(table, snap) if not full else None
    tasks = []
    for split in splits:
        task = plan_bucket(table, split, full=full, commits_since_full=commits)
        if task is not None:
            tasks.append(task)
    # biggest units first: with a cap, they buy the most
    tasks.sort(key=lambda t: -t.input_bytes)
    if max_units is not None:
        tasks = tasks[:max_units]
    return CompactionPlan(snap.id, tasks)


def _writer(table: Table, task: CompactionTask) -> DataFileWriter:
    opts = table.schema.core_options
    cfg = DataFileWriterConfig(
        compression=opts.file_compression,
        zstd_level=opts.zstd_level,
        target_file_size=opts.target_file_size,
        page_size=opts.page_size,
        prefix=opts.data_file_prefix,
    )
    bucket_dir = table.paths.bucket_dir(table.partition_path_of(task.partition), task.bucket)
    return DataFileWriter(table.file_io, bucket_dir, table.schema, cfg)


def run_compaction_task(
    table: Table, task: CompactionTask, *, chunk_rows: int = 256 * 1024, whole_read_rows: int | None = None
) -> CommitMessage:
    """Run one unit: merge and rewrite its sections, relabel upgrades; returns its commit message.

    Memory is bounded by ``chunk_rows`` plus one row group per input file, not by the bucket size.
    An interval of at most ``whole_read_rows`` input rows (default ``chunk_rows``, so the bound
    holds either way) is read file by file whole and merged once (`_merge_whole`); larger ones go
    through the streaming k-way merge. Both give the same rows in the same write calls.
    """
    whole_rows = chunk_rows if whole_read_rows is None else whole_read_rows
    split = Split(task.partition, task.partition_values, task.bucket, task.total_buckets, list(task.input_files))
    reader = SplitReader(table, table.schema)
    writer = _writer(table, task)
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    rollings = []
    try:
        if task.append_groups:
            for group in task.append_groups:
                data = pa.concat_tables(
                    [reader._read_file(split, f, with_system=False)
                     for f in sorted(group, key=lambda f: f.min_sequence_number)]
                )
                seq_range = (min(f.min_sequence_number for f in group), max(f.max_sequence_number for f in group))
                after += writer.write(data, level=0, file_source=FILE_SOURCE_COMPACT, sequence_range=seq_range)
                before += group
            return CommitMessage(task.partition, task.bucket, task.total_buckets,
                                 compact_before=tuple(before), compact_after=tuple(after))
        key_names = list(table.schema.trimmed_primary_keys)
        opts = table.schema.core_options
        merge_fn = table.merge_function()
        known = None
        if task.lookup_files:
            known = pa.concat_tables([reader._read_file(split, f, with_system=False, columns=key_names)
                                      for f in task.lookup_files])
        for section in task.sections:
            if section.kind == "keep":
                continue
            if section.kind == "upgrade":
                f = section.files[0]
                before.append(f)
                after.append(f.upgrade(section.output_level))
                continue

            def merge(chunk: pa.Table, drop: bool = section.drop_delete) -> pa.Table:
                merged = sort_and_merge(chunk, key_names, merge_fn, opts.sequence_fields, opts.sequence_descending)
                if known is not None:
                    merged = drop_known_keys(merged, known, key_names)
                if drop:
                    keep = ~is_retract(merged.column("_VALUE_KIND").to_numpy())
                    if not keep.all():
                        merged = merged.filter(pa.array(keep))
                return merged

            # Intervals are key-disjoint and in key order, so their merged rows concatenate into
            # sorted output: one rolling writer fills target-sized files across all of them.
            rolling = writer.rolling(level=section.output_level, file_source=FILE_SOURCE_COMPACT)
            rollings.append(rolling)
            for interval in section.intervals:
                if sum(f.row_count for f in interval) <= whole_rows:
                    # The streaming merge would gather all of these rows into one `merge` call
                    # anyway; reading whole files skips its per-row-group frontier bookkeeping.
                    rolling.write(_merge_whole(reader, split, interval, merge))
                else:
                    inputs: list[Iterator[pa.Table]] = [reader.iter_file(split, f) for f in interval]
                    for merged in merge_sorted(inputs, key_names, merge, min_rows=chunk_rows):
                        rolling.write(merged)
                before += interval
            after += rolling.close()
        changelog = _produce_changelog(table, task, split, reader) if task.changelog_producer else []
    except BaseException:
        for rolling in rollings:
            rolling.abort()
        table.file_io.delete_many(writer.bucket_dir + "/" + f.file_name for f in after
                                  if f.file_name not in {b.file_name for b in before})
        raise
    return CommitMessage(task.partition, task.bucket, task.total_buckets,
                         compact_before=tuple(before), compact_after=tuple(after),
                         compact_changelog=tuple(changelog))


def _merge_whole(
    reader: SplitReader,
    split: Split,
    interval: Sequence[DataFileMeta],
    merge: Callable[[pa.Table], pa.Table],
) -> pa.Table:
    """Merge one interval read whole: its merged rows, key-sorted, as the streaming path gives them.

    The files are concatenated in interval order - the order the streaming merge concatenates a
    key's rows in - and go through the same ``merge`` (sort, collapse, drop deletes at the max
    level). `winner_masks` was measured here too: it finds deduplicate winners without a sort,
    but the output of a compaction must be key-sorted, and masks + filter + a sort of the
    survivors cost about 1.5x the single `sort_and_merge` on TPC-H lineitem units.
    """
    return merge(pa.concat_tables([reader._read_file(split, f, with_system=True) for f in interval]))


def compaction_parallelism(table: Table, requested: int | None = None) -> int:
    """How many units run at once: ``requested``, else ``compaction.parallelism``, else as many as
    the table reads with (at least 2, at most the CPU count)."""
    if requested is not None:
        if requested < 1:
            raise ValueError(f"parallelism must be at least 1, got {requested}")
        return requested
    configured = table.schema.core_options.compaction_parallelism
    return configured if configured is not None else max(2, os.cpu_count() or 2)


def run_compaction_tasks(
    table: Table, tasks: Sequence[CompactionTask], *, parallelism: int | None = None
) -> list[CommitMessage]:
    """Run ``tasks`` with at most ``parallelism`` in flight; their messages, in the order of ``tasks``.

    Memory is that of one unit (see `run_compaction_task`) times the number in flight. If any unit
    fails, no new unit starts, the running ones finish, and the files of every unit that completed
    are deleted before the first failure (in task order) is raised: nothing is left for a commit
    that will never happen. A failing unit removes its own partial files itself.
    """
    workers = min(len(tasks), compaction_parallelism(table, parallelism))
    if workers <= 1:
        done: list[CommitMessage] = []
        try:
            for task in tasks:
                done.append(run_compaction_task(table, task))
        except BaseException:
            _discard(table, done)
            raise
        return done
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="compact")
    futures: list[Future[CommitMessage]] = []
    try:
        futures = [pool.submit(run_compaction_task, table, t) for t in tasks]
        wait(futures, return_when=FIRST_EXCEPTION)
    except BaseException:  # interrupted while waiting: treat like a failed unit
        _stop_and_discard(table, futures)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if any(f.done() and f.exception() is not None for f in futures):
        errors = _stop_and_discard(table, futures)
        raise errors[0]
    # plan order, whatever order the units finished in: the commit and its summary are deterministic
    return [f.result() for f in futures]


def _stop_and_discard(table: Table, futures: Sequence[Future[CommitMessage]]) -> list[BaseException]:
    """Cancel units not started, wait for running ones, delete what the finished ones wrote;
    the failures, in task order."""
    for f in futures:
        f.cancel()
    wait(futures)
    ok = [f for f in futures if not f.cancelled() and f.exception() is None]
    _discard(table, [f.result() for f in ok])
    return [e for f in futures if not f.cancelled() and (e := f.exception()) is not None]


def _discard(table: Table, messages: Sequence[CommitMessage]) -> None:
    """Delete the files units wrote for a commit that will not happen (upgrades are not new files)."""
    table.file_io.delete_many(
        table.data_file_path(m.partition, m.bucket, f) for m in messages for f in m.all_written_files()
    )


def _merged_state(table: Table, data: pa.Table) -> pa.Table:
    """One live row per key (retract results removed)."""
    opts = table.schema.core_options
    keys = list(table.schema.trimmed_primary_keys)
    merged = sort_and_merge(data, keys, table.merge_function(), opts.sequence_fields, opts.sequence_descending)
    keep = ~is_retract(merged.column(VALUE_KIND).to_numpy())
    return merged if keep.all() else merged.filter(pa.array(keep))


def _produce_changelog(table: Table, task: CompactionTask, split: Split, reader: SplitReader) -> list[DataFileMeta]:
    """Changelog files of a lookup or full-compaction unit (the diff of the bucket's states)."""
    keys = list(table.schema.trimmed_primary_keys)
    values = [n for n in table.schema.field_names if n not in keys]

    def read_all(files: Sequence[DataFileMeta]) -> pa.Table:
        parts = [reader._read_file(split, f, with_system=True) for f in files]
        return pa.concat_tables(parts) if parts else _state_schema(reader).empty_table()

    before_rows = read_all(task.before_files)
    if task.changelog_producer == "lookup":
        fresh = read_all([f for f in task.input_files if f.level == 0])
        if fresh.num_rows == 0:
            return []
        # Keys are matched in key_view form: float keys equal as Paimon compares them.
        old_keys = key_view(before_rows.select(keys), keys)
        new_keys = key_view(fresh.select(keys), keys)
        if len(keys) == 1:
            touched = pc.unique(new_keys.column(keys[0]))
            before_rows = before_rows.filter(pc.is_in(old_keys.column(keys[0]), value_set=touched))
        else:
            # composite keys: a semi join keeps the old rows of keys the new data touches
            touched_keys = new_keys.group_by(keys, use_threads=False).aggregate([])
            rows = old_keys.append_column("__row", pa.array(np.arange(before_rows.num_rows, dtype=np.int64)))
            joined = rows.join(touched_keys, keys=keys, join_type="left semi", use_threads=False)
            before_rows = before_rows.take(np.sort(joined.column("__row").to_numpy()))
        after_rows = pa.concat_tables([before_rows, fresh])
    else:
        before_names = {f.file_name for f in task.before_files}
        fresh = read_all([f for f in split.files if f.file_name not in before_names])
        after_rows = pa.concat_tables([before_rows, fresh])
    before_state = _merged_state(table, before_rows)
    after_state = _merged_state(table, after_rows)
    opts = table.schema.core_options
    dedupe = opts.changelog_row_deduplicate
    # Keys with new records get a -U/+U pair even when the old record wins (Java's lookup and
    # full-compaction wrappers); first-row's wrapper emits only the +I of a new key.
    touched = fresh.select(keys) if engine_of(opts).changelog_for_unchanged_keys else None
    changes = diff_states(before_state, after_state, keys, values, row_deduplicate=dedupe, touched_keys=touched)
    if changes.num_rows == 0:
        return []
    cfg = DataFileWriterConfig(
        compression=opts.file_compression, zstd_level=opts.zstd_level, target_file_size=opts.target_file_size,
        page_size=opts.page_size, prefix=opts.changelog_file_prefix,
    )
    writer = DataFileWriter(table.file_io, table.paths.bucket_dir(table.partition_path_of(task.partition), task.bucket),
                            table.schema, cfg)
    # Java writes a compaction's changelog with the unit's output level (createRollingChangelogFileWriter
    # (outputLevel)); Java 0.9's batch reads of first-row tables skip level-0 files, changelog too.
    return writer.write(changes, level=task.output_level, file_source=FILE_SOURCE_COMPACT)


def _state_schema(reader: SplitReader) -> pa.Schema:
    fields = [to_arrow_field(reader.schema.field(c)) for c in reader.read_columns]
    return pa.schema([*fields, pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False),
                      pa.field(VALUE_KIND, pa.int8(), nullable=False)])


def summarize(messages: Sequence[CommitMessage], snapshot_id: int | None, tasks: int, started: float) -> CompactResult:
    rewritten_in = [f for m in messages for f in m.compact_before]
    out_names = {(m.partition, m.bucket, f.file_name) for m in messages for f in m.compact_before}
    new_out = [f for m in messages for f in m.compact_after if (m.partition, m.bucket, f.file_name) not in out_names]
    upgraded = sum(1 for m in messages for f in m.compact_after
                   if (m.partition, m.bucket, f.file_name) in out_names)
    return CompactResult(
        snapshot_id=snapshot_id,
        tasks=tasks,
        files_in=len(rewritten_in),
        files_out=len(new_out) + upgraded,
        bytes_in=sum(f.file_size for f in rewritten_in),
        bytes_out=sum(f.file_size for m in messages for f in m.compact_after),
        rows_in=sum(f.row_count for f in rewritten_in),
        rows_out=sum(f.row_count for m in messages for f in m.compact_after),
        upgraded=upgraded,
        duration_s=round(time.perf_counter() - started, 3),
    )


def compact(
    table: Table,
    *,
    full: bool = False,
    partitions: Iterable[dict[str, Any]] | None = None,
    max_units: int | None = None,
    commit_user: str | None = None,
    parallelism: int | None = None,
) -> CompactResult:
    """Plan, run and commit compaction in this process; a COMPACT snapshot (or none if nothing to do).

    Up to ``parallelism`` units run at once (default: the table's ``compaction.parallelism``); see
    `run_compaction_tasks`.
    """
    started = time.perf_counter()
    plan = plan_compaction(table, full=full, partitions=partitions, max_units=max_units)
    messages = run_compaction_tasks(table, plan.tasks, parallelism=parallelism)
    messages = [m for m in messages if not m.is_empty()]
    user = commit_user or f"compact-{uuid.uuid4()}"
    ids: list[int] = []
    if messages:
        table.fault_point("compact.before_commit")
        ids = table.new_committer(user).commit(messages, check_committed=False)
    return summarize(messages, ids[-1] if ids else None, len(plan.tasks), started)


def group_by_bucket(entries: Iterable[Any]) -> dict[tuple[bytes, int], list[DataFileMeta]]:
    out: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for e in entries:
        out[(e.partition, e.bucket)].append(e.file)
    return out


__all__ = [
    "CommitConflictError",
    "CompactResult",
    "CompactionPlan",
    "CompactionTask",
    "compact",
    "compaction_parallelism",
    "plan_bucket",
    "plan_compaction",
    "run_compaction_task",
    "run_compaction_tasks",
]
