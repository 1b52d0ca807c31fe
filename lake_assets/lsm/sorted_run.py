"""SortedRun: a list of data files sorted by key whose key intervals do not overlap (§7.4)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cmp_to_key

from lake_assets.lsm.key_compare import compare_keys
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import DataFileMeta

__all__ = ["SortedRun", "key_range"]


def key_range(file: DataFileMeta, key_types: Sequence[DataType]) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """Decoded (min key, max key) of a data file."""
    return tuple(deserialize_row(file.min_key, key_types)), tuple(deserialize_row(file.max_key, key_types))


class SortedRun:
    """An immutable list of files sorted by key whose key intervals do not overlap.

    The constructor trusts the given order; use :meth:`from_files` to sort and :meth:`is_valid` to check.
    """

    __slots__ = ("_files", "_row_count", "_total_size")

    def __init__(self, files: Iterable[DataFileMeta] = ()) -> None:
        self._files = tuple(files)
        self._total_size = sum(f.file_size for f in self._files)
        self._row_count = sum(f.row_count for f in self._files)

    @classmethod
    def from_single(cls, file: DataFileMeta) -> SortedRun:
        """A run of one file (every level-0 file is one)."""
        return cls((file,))

    @classmethod
    def from_files(cls, files: Iterable[DataFileMeta], key_types: Sequence[DataType]) -> SortedRun:
        """A run of ``files`` sorted by decoded min key."""
        decoded = [(tuple(deserialize_row(f.min_key, key_types)), f) for f in files]

        def order(a: tuple[tuple[object, ...], DataFileMeta], b: tuple[tuple[object, ...], DataFileMeta]) -> int:
            return compare_keys(a[0], b[0], key_types)

        decoded.sort(key=cmp_to_key(order))
        return cls(f for _, f in decoded)

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        return self._files

    @property
    def total_size(self) -> int:
        """Sum of file sizes in bytes."""
        return self._total_size

    @property
    def row_count(self) -> int:
        return self._row_count

    def is_valid(self, key_types: Sequence[DataType]) -> bool:
        """Every file has min ≤ max and each file's max key is below the next file's min key."""
        prev_max: tuple[object, ...] | None = None
        for f in self._files:
            lo, hi = key_range(f, key_types)
            if compare_keys(lo, hi, key_types) > 0:
                return False
            if prev_max is not None and compare_keys(prev_max, lo, key_types) >= 0:
                return False
            prev_max = hi
        return True

    def __len__(self) -> int:
        return len(self._files)

    def __iter__(self) -> Iterator[DataFileMeta]:
        return iter(self._files)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SortedRun) and self._files == other._files

    def __hash__(self) -> int:
        return hash(self._files)

    def __repr__(self) -> str:
        names = ", ".join(f.file_name for f in self._files)
        return f"SortedRun([{names}], total_size={self._total_size})"
