"""Universal compaction picking, rewrite planning and append small-file picking, against hand-computed cases."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.lsm.compact_strategy import (
    CompactUnit,
    RewriteSection,
    UniversalCompaction,
    interval_partition,
    pick_append_full,
    pick_append_small_files,
    pick_full,
    plan_rewrite,
    should_drop_delete,
    should_stop_writes,
)
from lake_assets.lsm.levels import Levels, LevelSortedRun
from lake_assets.lsm.sorted_run import SortedRun
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import DataFileMeta, SimpleStats
from lake_assets.spec.types import BigIntType

KEY_TYPES = [BigIntType(nullable=False)]
_names = itertools.count()


def meta(
    size: int,
    *,
    level: int = 0,
    lo: int = 0,
    hi: int = 10,
    seq: tuple[int, int] = (0, 0),
    deletes: int | None = 0,
    name: str | None = None,
) -> DataFileMeta:
    return DataFileMeta(
        file_name=name or f"data-{next(_names)}.parquet",
        file_size=size,
        row_count=max(size // 10, 1),
        min_key=serialize_row([lo], KEY_TYPES),
        max_key=serialize_row([hi], KEY_TYPES),
        key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY,
        min_sequence_number=seq[0],
        max_sequence_number=seq[1],
        schema_id=0,
        level=level,
        delete_row_count=deletes,
    )


def runs_of(*spec: tuple[int, int]) -> list[LevelSortedRun]:
    """Runs from (level, size) pairs, newest first, one file each."""
    return [LevelSortedRun(level, SortedRun.from_single(meta(size, level=level))) for level, size in spec]


def files_of(runs: list[LevelSortedRun]) -> tuple[DataFileMeta, ...]:
    return tuple(f for r in runs for f in r.run.files)


def universal(trigger: int = 5, *, amp: int = 200, ratio: int = 1, delta: int | None = None) -> UniversalCompaction:
    return UniversalCompaction(amp, ratio, trigger, full_compaction_delta_commits=delta)


# ------------------------------------------------------------------------------------------ size amplification


def test_size_amp_fires_only_past_the_boundary() -> None:
    # Sizes grow tenfold so size ratio never starts; newer runs total 1110.
    at_boundary = runs_of((0, 1), (1, 10), (2, 100), (3, 999), (5, 555))  # 111000 == 200 × 555
    assert universal().pick(6, at_boundary) is None
    past = runs_of((0, 1), (1, 10), (2, 100), (3, 999), (5, 554))  # 111000 > 200 × 554
    unit = universal().pick(6, past)
    assert unit == CompactUnit(5, files_of(past), True)


def test_size_amp_needs_trigger_runs() -> None:
    runs = runs_of((0, 1000), (0, 1000), (0, 1000), (5, 1))
    assert universal(5).pick(6, runs) is None


# ------------------------------------------------------------------------------------------ size ratio


def test_size_ratio_accumulates_until_next_run_is_too_big() -> None:
    # 10 → 20 → 30 → 55; the level-4 run of 56 fails 55 × 1.01 = 55.55 < 56 and level 4 > 1 stops it.
    runs = runs_of((0, 10), (0, 10), (0, 10), (0, 25), (4, 56), (5, 1000))
    unit = universal().pick(6, runs)
    assert unit is not None
    assert unit.files == files_of(runs[:4])
    assert unit.output_level == 3  # level of the first excluded run minus one
    assert not unit.full


def test_size_ratio_boundary_is_inclusive() -> None:
    # 55 × 1.01 = 55.55 ≥ 55 keeps going; 110 × 1.01 < 1000 stops before the max level.
    runs = runs_of((0, 10), (0, 10), (0, 10), (0, 25), (4, 55), (5, 1000))
    unit = universal().pick(6, runs)
    assert unit is not None
    assert unit.files == files_of(runs[:5])
    assert unit.output_level == 4


def test_size_ratio_takes_low_levels_once_started() -> None:
    # The level-1 run of 500 fails the ratio test but rides along; the level-5 run stops it.
    runs = runs_of((0, 10), (0, 10), (1, 500), (5, 10_000))
    unit = universal(3).pick(6, runs)
    assert unit is not None
    assert unit.files == files_of(runs[:3])
    assert unit.output_level == 4


def test_no_pick_below_trigger() -> None:
    runs = runs_of((0, 10), (0, 10), (0, 10), (5, 1000))
    assert universal(5).pick(6, runs) is None


def test_single_run_candidate_does_not_trigger() -> None:
    runs = runs_of((0, 1), (2, 100), (3, 10_000), (4, 1_000_000), (5, 100_000_000))
    assert universal(5).pick(6, runs) is None


# ------------------------------------------------------------------------------------------ file count


def test_file_count_forces_a_pick() -> None:
    # 5 runs > trigger 3: start with 5 - 3 + 1 = 3 runs (10101); the level-4 run is far too big.
    runs = runs_of((0, 1), (2, 100), (3, 10_000), (4, 1_000_000), (5, 100_000_000))
    unit = universal(3).pick(6, runs)
    assert unit is not None
    assert unit.files == files_of(runs[:3])
    assert unit.output_level == 3


def test_file_count_not_forced_at_trigger() -> None:
    runs = runs_of((0, 1), (2, 100), (3, 10_000), (5, 100_000_000))
    assert universal(4).pick(6, runs) is None


# ------------------------------------------------------------------------------------------ output level


def test_output_level_never_zero_extends_to_next_non_zero_level() -> None:
    runs = runs_of((0, 1), (0, 1), (0, 1), (1, 1), (3, 1))
    unit = UniversalCompaction.create_unit(runs, 5, 1)
    assert unit.output_level == 1
    assert unit.files == files_of(runs[:4])
    # First excluded run at level 1 also gives 0 and is taken in.
    unit = UniversalCompaction.create_unit(runs, 5, 3)
    assert (unit.output_level, unit.files) == (1, files_of(runs[:4]))


def test_output_level_extension_reaching_the_end_is_full() -> None:
    runs = runs_of((0, 1), (0, 1), (0, 1))
    unit = UniversalCompaction.create_unit(runs, 5, 1)
    assert unit == CompactUnit(5, files_of(runs), True)


def test_all_runs_go_to_max_level() -> None:
    runs = runs_of((0, 1), (2, 1))
    assert UniversalCompaction.create_unit(runs, 5, 2) == CompactUnit(5, files_of(runs), True)


# ------------------------------------------------------------------------------------------ full compaction


def test_early_full_compaction_by_delta_commits() -> None:
    runs = runs_of((0, 10), (3, 1000))
    strategy = universal(5, delta=3)
    assert strategy.pick(6, runs, commits_since_full=2) is None
    assert strategy.pick(6, runs, commits_since_full=None) is None
    assert strategy.pick(6, runs, commits_since_full=3) == CompactUnit(5, files_of(runs), True)
    assert universal(5).pick(6, runs, commits_since_full=100) is None  # option unset


def test_early_full_compaction_skips_a_settled_bucket() -> None:
    settled = runs_of((5, 1000))
    assert universal(5, delta=1).pick(6, settled, commits_since_full=5) is None


def test_pick_full() -> None:
    assert pick_full(6, []) is None
    assert pick_full(6, runs_of((5, 100))) is None
    level3 = runs_of((3, 100))
    assert pick_full(6, level3) == CompactUnit(5, files_of(level3), True)
    dirty = meta(100, level=5, deletes=4)
    clean = meta(100, level=5, lo=20, hi=30)
    assert pick_full(6, [LevelSortedRun(5, SortedRun([dirty, clean]))]) == CompactUnit(5, (dirty,), True)
    many = runs_of((0, 1), (0, 2), (5, 100))
    assert pick_full(6, many) == CompactUnit(5, files_of(many), True)


# ------------------------------------------------------------------------------------------ stop / drop delete


def test_should_stop_writes_beyond_stop_trigger() -> None:
    assert not should_stop_writes(runs_of(*[(0, 1)] * 8), 8)
    assert should_stop_writes(runs_of(*[(0, 1)] * 9), 8)
    assert should_stop_writes(9, 8)


def test_should_drop_delete() -> None:
    levels = Levels([meta(1), meta(1, level=3)], num_levels=6)
    assert should_drop_delete(3, levels)
    assert should_drop_delete(5, levels)
    assert not should_drop_delete(2, levels)
    assert not should_drop_delete(0, Levels([meta(1)], num_levels=6))


# ------------------------------------------------------------------------------------------ rewrite plan

TARGET = 100  # with ratio 0.7: files below 70 bytes are small


def test_interval_partition() -> None:
    a, b = meta(1, lo=1, hi=5), meta(1, lo=5, hi=9)  # touching keys overlap
    c, d, e = meta(1, lo=20, hi=30), meta(1, lo=21, hi=22), meta(1, lo=31, hi=40)
    assert interval_partition([e, d, b, c, a], KEY_TYPES) == [(a, b), (c, d), (e,)]


def test_plan_rewrite_upgrade_keep_and_small_file_grouping() -> None:
    a, b = meta(100, lo=0, hi=10), meta(100, lo=5, hi=15)  # overlap → merge
    c = meta(80, level=2, lo=20, hi=30)  # large, alone → relabel
    d = meta(90, level=3, lo=40, hi=50)  # already at the output level → keep
    e, f = meta(10, lo=60, hi=70), meta(10, lo=80, hi=90)  # consecutive small → merged together
    h = meta(95, level=1, lo=95, hi=99)  # large → flushes e, f, then relabel
    g = meta(10, lo=100, hi=110)  # a lone small file: nothing to merge with → relabel
    unit = CompactUnit(3, (g, h, f, e, d, c, b, a), False)
    plan = plan_rewrite(unit, KEY_TYPES, TARGET, 0.7, drop_delete=False)
    assert plan == [
        RewriteSection("rewrite", 3, ((a, b),), False),
        RewriteSection("upgrade", 3, ((c,),)),
        RewriteSection("keep", 3, ((d,),)),
        RewriteSection("rewrite", 3, ((e,), (f,)), False),
        RewriteSection("upgrade", 3, ((h,),)),
        RewriteSection("upgrade", 3, ((g,),)),
    ]
    assert plan[3].files == (e, f)


def test_small_file_joins_preceding_overlap_merge() -> None:
    a, b = meta(100, lo=0, hi=10), meta(100, lo=5, hi=15)
    small = meta(69, level=1, lo=20, hi=30)  # 69 < 70: small
    plan = plan_rewrite(CompactUnit(4, (a, b, small), False), KEY_TYPES, TARGET, 0.7, drop_delete=True)
    assert plan == [RewriteSection("rewrite", 4, ((a, b), (small,)), True)]


def test_threshold_file_is_large() -> None:
    x = meta(70, level=1, lo=0, hi=1)
    y = meta(70, level=1, lo=5, hi=6)
    plan = plan_rewrite(CompactUnit(4, (x, y), False), KEY_TYPES, TARGET, 0.7, drop_delete=False)
    assert [s.kind for s in plan] == ["upgrade", "upgrade"]


def test_max_level_with_deletes_forces_rewrite() -> None:
    dirty = meta(100, level=2, lo=0, hi=10, deletes=3)
    unknown = meta(100, level=2, lo=20, hi=30, deletes=None)
    clean = meta(100, level=2, lo=40, hi=50, deletes=0)
    full = CompactUnit(5, (dirty, unknown, clean), True)
    plan = plan_rewrite(full, KEY_TYPES, TARGET, 0.7, drop_delete=True)
    assert plan == [
        RewriteSection("rewrite", 5, ((dirty,),), True),
        RewriteSection("rewrite", 5, ((unknown,),), True),
        RewriteSection("upgrade", 5, ((clean,),)),
    ]
    # Below the max level deletes must be kept, so relabelling is fine.
    partial = CompactUnit(3, (dirty,), False)
    assert plan_rewrite(partial, KEY_TYPES, TARGET, 0.7, drop_delete=False) == [
        RewriteSection("upgrade", 3, ((dirty,),))
    ]


def test_max_level_file_with_deletes_is_rewritten_by_full_compaction() -> None:
    dirty = meta(100, level=5, deletes=2)
    unit = pick_full(6, [LevelSortedRun(5, SortedRun([dirty]))])
    assert unit is not None
    assert plan_rewrite(unit, KEY_TYPES, TARGET, 0.7, drop_delete=True) == [
        RewriteSection("rewrite", 5, ((dirty,),), True)
    ]
    assert plan_rewrite(unit, KEY_TYPES, TARGET, 0.7, drop_delete=False) == [RewriteSection("keep", 5, ((dirty,),))]


# ------------------------------------------------------------------------------------------ append tables


def test_append_small_file_groups() -> None:
    sizes = [30, 30, 30, 30, 200, 10, 10, 50, 60, 20, 5, 300, 10, 10]
    files = [meta(s, seq=(i * 10, i * 10 + 9)) for i, s in enumerate(sizes)]
    groups = pick_append_small_files(list(reversed(files)), TARGET, 3)
    # 30+30+30+30 reaches 100 at the 4th file; 10+10+50+60 closes one group and the 2-file
    # remainder (20, 5) joins it; the last stretch has only 2 files and waits.
    assert groups == [files[0:4], files[5:11]]


def test_append_small_file_ratio_and_min_num() -> None:
    files = [meta(s, seq=(i, i)) for i, s in enumerate([80, 80, 80, 10])]
    # 80+80 closes a group; the remainder (80, 10) has 2 files: kept with min 2, folded in with min 3.
    assert pick_append_small_files(files, TARGET, 2) == [files[0:2], files[2:4]]
    assert pick_append_small_files(files, TARGET, 3) == [files]
    assert pick_append_small_files(files, TARGET, 5) == []
    # With ratio 0.7 the 80-byte files are not small and break the stretch.
    assert pick_append_small_files(files, TARGET, 1, small_file_ratio=0.7) == []


def test_append_small_files_max_file_num() -> None:
    """compaction.max.file-num closes a group at that many files whatever their size, and that
    many files are compacted even below compaction.min.file-num (Paimon 0.9's FileBin.binReady)."""
    tiny = [meta(1, seq=(i, i)) for i in range(8)]
    # without it: one group of every tiny file (no cap)
    assert pick_append_small_files(tiny, TARGET, 5) == [tiny]
    # 3: groups of 3 in sequence order; the last 2 files (below min 5) would make 5 with the group
    # before: they wait, as Java's bin that is not ready
    assert pick_append_small_files(tiny, TARGET, 5, max_file_num=3) == [tiny[0:3], tiny[3:6]]
    # 4 files, fewer than min 5: the cap alone makes them a group, the fourth waits
    assert pick_append_small_files(tiny[:4], TARGET, 5, max_file_num=3) == [tiny[0:3]]
    assert pick_append_small_files(tiny[:2], TARGET, 5, max_file_num=3) == []
    # a cap of exactly the files' count, and one below min: groups of max files, nothing left
    assert pick_append_small_files(tiny[:6], TARGET, 5, max_file_num=2) == [tiny[0:2], tiny[2:4], tiny[4:6]]
    # a remainder below min joins the group before (closed by the size) when the two stay within the cap
    joined = [meta(s, seq=(i, i)) for i, s in enumerate([60, 60, 1])]
    assert pick_append_small_files(joined, TARGET, 2, max_file_num=3) == [joined]
    assert pick_append_small_files(joined, TARGET, 2, max_file_num=2) == [joined[0:2]]
    assert pick_append_small_files(tiny, TARGET, 3, max_file_num=6) == [tiny[0:6]]
    # max 1: a group is at least two files (one file rewritten alone gains nothing)
    assert pick_append_small_files(tiny[:4], TARGET, 5, max_file_num=1) == [tiny[0:2], tiny[2:4]]
    # the size still closes a group first: 60+60 reaches TARGET (100) at 2 files, below the cap
    sized = [meta(s, seq=(i, i)) for i, s in enumerate([60, 60, 1, 1, 1, 1])]
    assert pick_append_small_files(sized, TARGET, 2, max_file_num=3) == [sized[0:2], sized[2:5]]


def test_append_full_compaction() -> None:
    big0, s1, s2, big3, s4 = (meta(s, seq=(i, i)) for i, s in enumerate([200, 10, 10, 300, 10]))
    assert pick_append_full([s4, big3, s2, s1, big0], TARGET) == [s1, s2, big3, s4]
    assert pick_append_full([big0, big3], TARGET) == []
    assert pick_append_full([s1, s2], TARGET) == []
    assert pick_append_full([s1, big0, big3], TARGET) == []


# ------------------------------------------------------------------------------------------ properties


@st.composite
def run_lists(draw: st.DrawFn) -> tuple[int, list[LevelSortedRun]]:
    num_levels = draw(st.integers(2, 7))
    n0 = draw(st.integers(0, 8))
    higher = draw(st.sets(st.integers(1, num_levels - 1)))
    sizes = st.integers(1, 2000)
    spec = [(0, draw(sizes)) for _ in range(n0)] + [(lvl, draw(sizes)) for lvl in sorted(higher)]
    return num_levels, runs_of(*spec)


@settings(max_examples=400, deadline=None)
@given(
    data=run_lists(),
    trigger=st.integers(1, 7),
    amp=st.integers(0, 400),
    ratio=st.integers(0, 20),
    delta=st.none() | st.integers(1, 5),
    since=st.none() | st.integers(0, 6),
)
def test_picked_unit_is_prefix_of_runs(
    data: tuple[int, list[LevelSortedRun]], trigger: int, amp: int, ratio: int, delta: int | None, since: int | None
) -> None:
    num_levels, runs = data
    unit = universal(trigger, amp=amp, ratio=ratio, delta=delta).pick(num_levels, runs, commits_since_full=since)
    if unit is None:
        return
    prefixes = [files_of(runs[:k]) for k in range(1, len(runs) + 1)]
    assert unit.files in prefixes  # only ever the newest runs
    taken = prefixes.index(unit.files) + 1
    assert unit.output_level != 0
    if unit.full:
        assert taken == len(runs)
        assert unit.output_level == num_levels - 1
    else:
        assert taken < len(runs)
        assert all(unit.output_level >= r.level for r in runs[:taken])
        assert unit.output_level < runs[taken].level
