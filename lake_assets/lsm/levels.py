"""Levels: the LSM tree of one bucket, level 0 plus one sorted run per higher level (§7.4)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lake_assets.errors import CorruptMetadataError
from lake_assets.lsm.sorted_run import SortedRun
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import DataFileMeta

__all__ = ["LevelSortedRun", "Levels"]


@dataclass(frozen=True, slots=True)
class LevelSortedRun:
    """A sorted run together with the level it lives on."""

    level: int
    run: SortedRun

    @property
    def total_size(self) -> int:
        return self.run.total_size


def _newest_first(file: DataFileMeta) -> tuple[int, str]:
    # Two writers can produce equal max sequence numbers; the name keeps the order deterministic.
    return -file.max_sequence_number, file.file_name


class Levels:
    """The live files of ONE bucket arranged as an LSM tree.

    Level-0 files overlap each other, so each is its own sorted run, newest (highest max sequence
    number) first. Levels 1..max_level are one sorted run each. With ``key_types`` those runs are
    sorted by min key; without, files keep a deterministic name order, which is enough for anything
    that only needs run sizes (compaction picking, health).
    """

    __slots__ = ("_level0", "_levels")

    def __init__(
        self,
        files: Iterable[DataFileMeta],
        num_levels: int,
        key_types: Sequence[DataType] | None = None,
    ) -> None:
        by_level: dict[int, list[DataFileMeta]] = {}
        for f in files:
            if f.level < 0:  # manifests are checked on decoding; this guards files built in memory
                raise CorruptMetadataError(f"Data file {f.file_name} has negative level {f.level}")
            by_level.setdefault(f.level, []).append(f)
        # Files written under a larger num-levels stay where they are rather than being rejected.
        restored = max(num_levels, max(by_level, default=-1) + 1)
        if restored < 2:
            raise ValueError(f"Number of levels must be at least 2, got {num_levels}")
        self._level0: tuple[DataFileMeta, ...] = tuple(sorted(by_level.get(0, ()), key=_newest_first))
        runs: list[SortedRun] = []
        for level in range(1, restored):
            level_files = by_level.get(level, [])
            if key_types is not None:
                runs.append(SortedRun.from_files(level_files, key_types))
            else:
                runs.append(SortedRun(sorted(level_files, key=lambda f: f.file_name)))
        self._levels: tuple[SortedRun, ...] = tuple(runs)

    @property
    def level0(self) -> tuple[DataFileMeta, ...]:
        """Level-0 files, newest first."""
        return self._level0

    @property
    def number_of_levels(self) -> int:
        return len(self._levels) + 1

    @property
    def max_level(self) -> int:
        return len(self._levels)

    def run_of_level(self, level: int) -> SortedRun:
        """The single sorted run of a level ≥ 1."""
        if not 1 <= level <= self.max_level:
            raise ValueError(f"Level {level} has no single sorted run (levels 1..{self.max_level} do)")
        return self._levels[level - 1]

    def level_sorted_runs(self) -> list[LevelSortedRun]:
        """Each level-0 file as its own run (newest first), then each non-empty level ascending."""
        runs = [LevelSortedRun(0, SortedRun.from_single(f)) for f in self._level0]
        runs.extend(LevelSortedRun(i + 1, run) for i, run in enumerate(self._levels) if len(run))
        return runs

    def non_empty_highest_level(self) -> int:
        """Highest level holding a file; -1 when the bucket is empty."""
        for i in range(len(self._levels) - 1, -1, -1):
            if len(self._levels[i]):
                return i + 1
        return 0 if self._level0 else -1

    def number_of_sorted_runs(self) -> int:
        return len(self._level0) + sum(1 for run in self._levels if len(run))

    def total_size(self) -> int:
        """Sum of all file sizes in bytes."""
        return sum(f.file_size for f in self._level0) + sum(run.total_size for run in self._levels)

    def all_files(self) -> list[DataFileMeta]:
        """Every file, in sorted-run order."""
        return [f for lsr in self.level_sorted_runs() for f in lsr.run.files]
