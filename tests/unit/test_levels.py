"""Levels and SortedRun: run order, level bookkeeping, key-order validation."""

from __future__ import annotations

import pytest

from lake_assets.lsm.levels import Levels, LevelSortedRun
from lake_assets.lsm.sorted_run import SortedRun
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import DataFileMeta, SimpleStats
from lake_assets.spec.types import BigIntType

KEY_TYPES = [BigIntType(nullable=False)]


def meta(name: str, size: int = 100, *, level: int = 0, lo: int = 0, hi: int = 10, max_seq: int = 0) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=size,
        row_count=size // 10,
        min_key=serialize_row([lo], KEY_TYPES),
        max_key=serialize_row([hi], KEY_TYPES),
        key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY,
        min_sequence_number=0,
        max_sequence_number=max_seq,
        schema_id=0,
        level=level,
    )


def test_sorted_run_from_files_sorts_by_min_key_and_sums() -> None:
    a, b, c = meta("a", 10, lo=20, hi=29), meta("b", 20, lo=0, hi=9), meta("c", 30, lo=10, hi=19)
    run = SortedRun.from_files([a, b, c], KEY_TYPES)
    assert run.files == (b, c, a)
    assert run.total_size == 60
    assert run.row_count == 6
    assert run.is_valid(KEY_TYPES)


def test_sorted_run_validity() -> None:
    assert SortedRun().is_valid(KEY_TYPES)
    touching = SortedRun([meta("a", lo=0, hi=5), meta("b", lo=5, hi=9)])
    assert not touching.is_valid(KEY_TYPES)
    unsorted = SortedRun([meta("a", lo=10, hi=15), meta("b", lo=0, hi=5)])
    assert not unsorted.is_valid(KEY_TYPES)
    inverted = SortedRun([meta("a", lo=9, hi=1)])
    assert not inverted.is_valid(KEY_TYPES)


def test_level0_newest_first_with_name_tiebreak() -> None:
    old, new, tie_b, tie_a = meta("old", max_seq=1), meta("new", max_seq=9), meta("b", max_seq=5), meta("a", max_seq=5)
    levels = Levels([old, tie_b, new, tie_a], num_levels=6)
    assert levels.level0 == (new, tie_a, tie_b, old)


def test_level_sorted_runs_order_and_counts() -> None:
    l0_old, l0_new = meta("l0o", 5, max_seq=1), meta("l0n", 7, max_seq=2)
    l2a, l2b = meta("l2a", 50, level=2, lo=20, hi=29), meta("l2b", 60, level=2, lo=0, hi=9)
    l5 = meta("l5", 1000, level=5)
    levels = Levels([l5, l2a, l0_old, l2b, l0_new], num_levels=6, key_types=KEY_TYPES)
    runs = levels.level_sorted_runs()
    assert [r.level for r in runs] == [0, 0, 2, 5]
    assert runs[0] == LevelSortedRun(0, SortedRun.from_single(l0_new))
    assert runs[2].run.files == (l2b, l2a)  # key order
    assert [r.total_size for r in runs] == [7, 5, 110, 1000]
    assert levels.number_of_sorted_runs() == 4
    assert levels.total_size() == 1122
    assert levels.max_level == 5
    assert levels.non_empty_highest_level() == 5
    assert levels.run_of_level(3).files == ()
    assert levels.all_files() == [l0_new, l0_old, l2b, l2a, l5]


def test_non_empty_highest_level() -> None:
    assert Levels([], num_levels=6).non_empty_highest_level() == -1
    assert Levels([meta("a")], num_levels=6).non_empty_highest_level() == 0
    assert Levels([meta("a"), meta("b", level=3)], num_levels=6).non_empty_highest_level() == 3


def test_files_beyond_num_levels_are_kept() -> None:
    levels = Levels([meta("deep", level=7)], num_levels=6)
    assert levels.max_level == 7
    assert levels.number_of_levels == 8
    assert [r.level for r in levels.level_sorted_runs()] == [7]


def test_invalid_levels() -> None:
    with pytest.raises(ValueError):
        Levels([], num_levels=1)
    with pytest.raises(ValueError):
        Levels([meta("a")], num_levels=6).run_of_level(0)
