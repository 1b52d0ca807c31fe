"""Choosing what to compact: universal compaction for PK tables, small-file merging for append tables.

Everything here is a pure function of file metadata (§7.4, §10.4); running the plan is elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Literal

from lake_assets.lsm.key_compare import compare_keys
from lake_assets.lsm.levels import Levels, LevelSortedRun
from lake_assets.lsm.sorted_run import key_range
from lake_assets.options import CoreOptions
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import DataFileMeta

__all__ = [
    "CompactUnit",
    "RewriteSection",
    "UniversalCompaction",
    "interval_partition",
    "pick_append_full",
    "pick_append_small_files",
    "pick_full",
    "plan_rewrite",
    "should_drop_delete",
    "should_stop_writes",
    "small_file_threshold",
]


@dataclass(frozen=True, slots=True)
class CompactUnit:
    """Files to compact together into ``output_level``.

    ``full`` marks a full compaction: the output is the max level and no older data stays outside
    the unit, so retracts may be dropped and files carrying delete rows must not be relabelled.
    """

    output_level: int
    files: tuple[DataFileMeta, ...]
    full: bool = False

    @classmethod
    def from_level_runs(cls, output_level: int, runs: Iterable[LevelSortedRun], *, full: bool) -> CompactUnit:
        return cls(output_level, tuple(f for lsr in runs for f in lsr.run.files), full)


# --------------------------------------------------------------------------------------- universal


class UniversalCompaction:
    """RocksDB-style universal compaction as Paimon runs it (§10.4).

    Runs are ordered newest first, so every unit is a prefix of the runs: compaction only ever
    merges the newest data down into older levels.
    """

    __slots__ = ("full_compaction_delta_commits", "max_size_amp_percent", "num_run_compaction_trigger", "size_ratio")

    def __init__(
        self,
        max_size_amp_percent: int,
        size_ratio: int,
        num_run_compaction_trigger: int,
        *,
        full_compaction_delta_commits: int | None = None,
    ) -> None:
        self.max_size_amp_percent = max_size_amp_percent
        self.size_ratio = size_ratio
        self.num_run_compaction_trigger = num_run_compaction_trigger
        self.full_compaction_delta_commits = full_compaction_delta_commits

    @classmethod
    def from_options(cls, options: CoreOptions) -> UniversalCompaction:
        return cls(
            options.max_size_amplification_percent,
            options.size_ratio,
            options.num_sorted_run_compaction_trigger,
            full_compaction_delta_commits=options.full_compaction_delta_commits,
        )

    def pick(
        self, num_levels: int, runs: Sequence[LevelSortedRun], *, commits_since_full: int | None = None
    ) -> CompactUnit | None:
        """The unit to compact next, or None; ``commits_since_full`` counts commits since the last full one."""
        max_level = num_levels - 1
        # 1. Early full compaction every `full-compaction.delta-commits` commits. Like Paimon's
        # writer-side full compaction it uses pick_full, so a settled bucket is left alone.
        if (
            self.full_compaction_delta_commits is not None
            and commits_since_full is not None
            and commits_since_full >= self.full_compaction_delta_commits
        ):
            unit = pick_full(num_levels, runs)
            if unit is not None:
                return unit
        # 2. Size amplification, 3. size ratio.
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is None:
            unit = self.pick_for_size_ratio(max_level, runs)
        if unit is not None:
            return unit
        # 4. Too many runs: force a size-ratio pick that starts with enough runs to get under the trigger.
        if len(runs) > self.num_run_compaction_trigger:
            return self.pick_for_size_ratio(
                max_level, runs, candidate_count=len(runs) - self.num_run_compaction_trigger + 1
            )
        return None

    def pick_for_size_amp(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Everything to the max level when the newer runs outweigh the oldest by more than the allowed percent."""
        if not runs or len(runs) < self.num_run_compaction_trigger:
            return None
        newer = sum(r.run.total_size for r in runs[:-1])
        oldest = runs[-1].run.total_size
        if newer * 100 > self.max_size_amp_percent * oldest:
            return CompactUnit.from_level_runs(max_level, runs, full=True)
        return None

    def pick_for_size_ratio(
        self,
        max_level: int,
        runs: Sequence[LevelSortedRun],
        candidate_count: int | None = None,
        *,
        force: bool = False,
    ) -> CompactUnit | None:
        """Grow the newest runs while the next run is not much larger than all collected so far.

        Without ``candidate_count`` this is the size-ratio rule and needs at least trigger runs.
        """
        if candidate_count is None:
            if len(runs) < self.num_run_compaction_trigger:
                return None
            candidate_count = 1
        candidate_size = sum(r.run.total_size for r in runs[:candidate_count])
        triggered = force or candidate_count > 1
        for nxt in runs[candidate_count:]:
            size = nxt.run.total_size
            # "candidate × (100 + ratio)% < next" in integers, avoiding float rounding. Once compaction
            # is under way, runs at level ≤ 1 ride along even when they fail the test.
            if candidate_size * (100 + self.size_ratio) < size * 100 and (not triggered or nxt.level > 1):
                break
            candidate_size += size
            candidate_count += 1
            triggered = True
        return self.create_unit(runs, max_level, candidate_count) if triggered else None

    @staticmethod
    def create_unit(runs: Sequence[LevelSortedRun], max_level: int, run_count: int) -> CompactUnit:
        """The unit of the newest ``run_count`` runs, with Paimon's output-level rule."""
        # All runs go to the max level; otherwise just above the first run left out, so levels
        # stay ordered from new to old.
        output_level = max_level if run_count == len(runs) else max(0, runs[run_count].level - 1)
        if output_level == 0:
            # Compaction never writes level 0: take runs up to and including the next non-zero level.
            for nxt in runs[run_count:]:
                run_count += 1
                if nxt.level != 0:
                    output_level = nxt.level
                    break
        full = run_count == len(runs)
        if full:
            output_level = max_level
        return CompactUnit.from_level_runs(output_level, runs[:run_count], full=full)


def pick_full(num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
    """Everything into the max level; None when there is nothing to gain.

    Nothing to gain: no runs, or a single run already at the max level. Paimon stops there; we
    additionally pick that run's files with delete rows (> 0), whose retracts a full compaction purges.
    """
    max_level = num_levels - 1
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        with_deletes = tuple(f for f in runs[0].run.files if (f.delete_row_count or 0) > 0)
        return CompactUnit(max_level, with_deletes, True) if with_deletes else None
    return CompactUnit.from_level_runs(max_level, runs, full=True)


def should_stop_writes(runs: Sequence[LevelSortedRun] | int, stop_trigger: int) -> bool:
    """Writers pause for compaction once the bucket has more sorted runs than the stop trigger."""
    count = runs if isinstance(runs, int) else len(runs)
    return count > stop_trigger


def should_drop_delete(output_level: int, levels: Levels) -> bool:
    """Retracts can go when nothing older lies beneath the output (never on level 0)."""
    return output_level != 0 and output_level >= levels.non_empty_highest_level()


# --------------------------------------------------------------------------------------- rewrite plan


@dataclass(frozen=True, slots=True)
class RewriteSection:
    """One step of executing a compaction unit.

    * ``rewrite``: merge the files and write the result to ``output_level``; each interval is
      key-disjoint from the others, so intervals can be merged one at a time and concatenated.
    * ``upgrade``: relabel the single file with ``output_level``; its rows are untouched.
    * ``keep``: the single file already sits at ``output_level``; commit nothing for it.
    """

    kind: Literal["rewrite", "upgrade", "keep"]
    output_level: int
    intervals: tuple[tuple[DataFileMeta, ...], ...]
    drop_delete: bool = False

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        return tuple(f for interval in self.intervals for f in interval)


def small_file_threshold(target_file_size: int, small_file_ratio: float) -> int:
    """Files below this many bytes count as small (``target-file-size × compaction.small-file-ratio``)."""
    return int(target_file_size * small_file_ratio)


def interval_partition(files: Iterable[DataFileMeta], key_types: Sequence[DataType]) -> list[tuple[DataFileMeta, ...]]:
    """Split files into sections of transitively overlapping key ranges, in key order.

    Files are sorted by (min key, max key); a new section starts when a file's min key is above
    every max key seen in the current section. Touching ranges (max == next min) overlap.
    """
    decoded: list[tuple[tuple[object, ...], tuple[object, ...], DataFileMeta]] = [
        (*key_range(f, key_types), f) for f in files
    ]

    def order(a: tuple[tuple[object, ...], tuple[object, ...], DataFileMeta],
              b: tuple[tuple[object, ...], tuple[object, ...], DataFileMeta]) -> int:
        return compare_keys(a[0], b[0], key_types) or compare_keys(a[1], b[1], key_types)

    decoded.sort(key=cmp_to_key(order))
    sections: list[tuple[DataFileMeta, ...]] = []
    current: list[DataFileMeta] = []
    bound: tuple[object, ...] | None = None
    for lo, hi, f in decoded:
        if bound is not None and compare_keys(lo, bound, key_types) > 0:
            sections.append(tuple(current))
            current = []
            bound = None
        current.append(f)
        if bound is None or compare_keys(hi, bound, key_types) > 0:
            bound = hi
    if current:
        sections.append(tuple(current))
    return sections


def plan_rewrite(
    unit: CompactUnit,
    key_types: Sequence[DataType],
    target_file_size: int,
    small_file_ratio: float,
    *,
    drop_delete: bool,
) -> list[RewriteSection]:
    """Decide, section by section in key order, which files of ``unit`` are merged and which are relabelled.

    Overlapping sections are merged. A non-overlapping file of at least the small-file threshold is
    upgraded instead (rewritten alone if the unit is full and the file may hold delete rows). Small
    non-overlapping files are collected with their neighbours into one merge, as Paimon does, so a
    compaction does not leave small files behind; only a stretch never crosses a large file, or the
    output would overlap it. A small file with nothing to merge with is relabelled like a large one,
    since rewriting it alone would not make it bigger.
    """
    threshold = small_file_threshold(target_file_size, small_file_ratio)
    out_level = unit.output_level
    plan: list[RewriteSection] = []
    pending: list[tuple[DataFileMeta, ...]] = []

    def rewrite(intervals: Sequence[tuple[DataFileMeta, ...]]) -> None:
        plan.append(RewriteSection("rewrite", out_level, tuple(intervals), drop_delete))

    def place(f: DataFileMeta) -> None:
        deletes = f.delete_row_count
        if f.level == out_level:
            if unit.full and drop_delete and (deletes or 0) > 0:
                rewrite([(f,)])  # pick_full chose it to purge its retracts
            else:
                plan.append(RewriteSection("keep", out_level, ((f,),)))
        elif not unit.full or deletes == 0:
            plan.append(RewriteSection("upgrade", out_level, ((f,),)))
        else:
            # Retracts must not reach the max level unmerged; an unknown count may hide some.
            rewrite([(f,)])

    def flush() -> None:
        if len(pending) == 1 and len(pending[0]) == 1:
            place(pending[0][0])
        elif pending:
            rewrite(pending)
        pending.clear()

    for section in interval_partition(unit.files, key_types):
        if len(section) > 1 or section[0].file_size < threshold:
            pending.append(section)
        else:
            flush()
            place(section[0])
    flush()
    return plan


# --------------------------------------------------------------------------------------- append tables


def _sequence_order(f: DataFileMeta) -> tuple[int, int, str]:
    return f.min_sequence_number, f.max_sequence_number, f.file_name


def pick_append_small_files(
    files: Iterable[DataFileMeta],
    target_file_size: int,
    min_file_num: int,
    *,
    small_file_ratio: float = 1.0,
    max_file_num: int | None = None,
) -> list[list[DataFileMeta]]:
    """Groups of small append-table files to merge, each group written as target-sized files.

    Rule (after Paimon's append compaction; ``compaction.min.file-num`` = ``min_file_num``,
    ``compaction.max.file-num`` = ``max_file_num``):

    1. A file is small when below ``target_file_size × small_file_ratio`` (ratio 1.0 = below target,
       as bucketed append tables use; unaware-bucket tables pass ``compaction.small-file-ratio``).
    2. Files are taken in sequence order; a large file ends a stretch of consecutive small files and
       is never merged across, so merged outputs keep the order bucketed readers rely on.
    3. A stretch with fewer than ``min_file_num`` files (and fewer than ``max_file_num``) waits for more.
    4. Otherwise it is cut greedily in order: a group closes once it reaches ``target_file_size``,
       or once it holds ``max_file_num`` files whatever their size (Paimon 0.9-1.0's
       ``FileBin.binReady``; never fewer than 2: one file rewritten alone gains nothing). A
       trailing group with fewer than ``min_file_num`` files joins the group before it when the
       two stay within ``max_file_num``, else it waits (as Java's bin that is not ready).
    """
    threshold = small_file_threshold(target_file_size, small_file_ratio)
    cap = max(max_file_num, 2) if max_file_num is not None else None
    stretches: list[list[DataFileMeta]] = [[]]
    for f in sorted(files, key=_sequence_order):
        if f.file_size < threshold:
            stretches[-1].append(f)
        elif stretches[-1]:
            stretches.append([])
    groups: list[list[DataFileMeta]] = []
    for stretch in stretches:
        if len(stretch) < max(min_file_num, 2) and (cap is None or len(stretch) < cap):
            continue
        cut: list[list[DataFileMeta]] = [[]]
        size = 0
        for f in stretch:
            cut[-1].append(f)
            size += f.file_size
            if size >= target_file_size or len(cut[-1]) == cap:
                cut.append([])
                size = 0
        if not cut[-1]:
            cut.pop()
        if len(cut) > 1 and len(cut[-1]) < min_file_num and len(cut[-1]) != cap:
            last = cut.pop()
            if cap is None or len(cut[-1]) + len(last) <= cap:
                cut[-1].extend(last)
        groups.extend(cut)
    return groups


def pick_append_full(files: Iterable[DataFileMeta], target_file_size: int) -> list[DataFileMeta]:
    """Files a full append compaction rewrites into target-sized files; empty when not worth it.

    As Paimon: in sequence order, leading files already at target size stay; the rest is rewritten
    only if at least 3 files remain and small ones outnumber the large ones.
    """
    ordered = sorted(files, key=_sequence_order)
    start = 0
    while start < len(ordered) and ordered[start].file_size >= target_file_size:
        start += 1
    rest = ordered[start:]
    small = sum(1 for f in rest if f.file_size < target_file_size)
    if len(rest) >= 3 and small > len(rest) - small:
        return rest
    return []
