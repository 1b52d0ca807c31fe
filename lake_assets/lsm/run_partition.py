"""Paimon's ``IntervalPartition``: a bucket's files grouped into sections of overlapping key
ranges (`sections`), and a section split into the fewest sorted runs (`split_into_runs`), so a
streaming merge reads one input per run instead of one per file.

Sections are independent: a key is in one section only, so each is merged on its own. Inside a
section, files of one LSM
level (or of any chain of key-disjoint files) can be read one after the other as a single sorted
input. Fewer inputs mean fewer open files and fewer buffered chunks: the merge holds one chunk per
run, and the number of runs is bounded by how deeply files overlap, not by how many files there
are. `RunCursor` reads one such run forward by ascending key ranges (lookups of older levels).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from functools import cmp_to_key
from typing import TypeVar

import pyarrow as pa

from lake_assets.lsm.key_compare import compare_keys
from lake_assets.lsm.merge_reader import Key, count_at_most, count_below
from lake_assets.lsm.sorted_run import key_range
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import DataFileMeta

__all__ = ["RunCursor", "chained", "count_below", "key_at", "run_inputs", "sections", "split_into_runs"]

T = TypeVar("T")
_Key = tuple[object, ...]
_Bounded = tuple[_Key, _Key, DataFileMeta]  # (min key, max key, file)


class _RunEnd:
    """A run under construction, ordered in the heap by the max key of its last file."""

    __slots__ = ("files", "index", "max_key", "types")

    def __init__(self, index: int, file: DataFileMeta, max_key: _Key, types: Sequence[DataType]) -> None:
        self.index = index
        self.files = [file]
        self.max_key = max_key
        self.types = types

    def __lt__(self, other: _RunEnd) -> bool:
        c = compare_keys(self.max_key, other.max_key, self.types)
        return c < 0 or (c == 0 and self.index < other.index)


def _by_key_range(files: Sequence[DataFileMeta], key_types: Sequence[DataType]) -> list[_Bounded]:
    """(min key, max key, file) of each of ``files``, ordered by min key, then max key."""
    decoded = [(*key_range(f, key_types), f) for f in files]

    def order(a: _Bounded, b: _Bounded) -> int:
        return compare_keys(a[0], b[0], key_types) or compare_keys(a[1], b[1], key_types)

    decoded.sort(key=cmp_to_key(order))
    return decoded


def sections(files: Sequence[DataFileMeta], key_types: Sequence[DataType]) -> list[list[DataFileMeta]]:
    """Group files into sections: lists of files whose key intervals overlap one another's in a
    chain, in key order (Paimon's interval partition)."""
    decoded = _by_key_range(files, key_types)
    out: list[list[DataFileMeta]] = []
    bound: _Key | None = None
    for lo, hi, f in decoded:
        if bound is None or compare_keys(lo, bound, key_types) > 0:
            out.append([f])
            bound = hi
        else:
            out[-1].append(f)
            if compare_keys(hi, bound, key_types) > 0:
                bound = hi
    return out


def split_into_runs(files: Sequence[DataFileMeta], key_types: Sequence[DataType]) -> list[list[DataFileMeta]]:
    """``files`` as the fewest lists of key-disjoint files, each in key order.

    Files are taken by (min key, max key); each goes to the run whose last file ends lowest, if
    that file ends below this one's min key, else it starts a new run (greedy interval colouring:
    optimal, as in Paimon). Runs are returned in the order they were started.
    """
    decoded = _by_key_range(files, key_types)
    heap: list[_RunEnd] = []
    runs: list[_RunEnd] = []
    for lo, hi, f in decoded:
        if heap and compare_keys(heap[0].max_key, lo, key_types) < 0:
            run = heapq.heappop(heap)
            run.files.append(f)
            run.max_key = hi
        else:
            run = _RunEnd(len(runs), f, hi, key_types)
            runs.append(run)
        heapq.heappush(heap, run)
    return [run.files for run in runs]


def chained(items: Sequence[T], open_item: Callable[[T], Iterator[pa.Table]]) -> Iterator[pa.Table]:
    """The chunks of every item in turn; an item is opened only when the previous one is done,
    so a run holds one open file and one chunk at a time."""
    for item in items:
        yield from open_item(item)


def run_inputs(
    files: Sequence[DataFileMeta],
    key_types: Sequence[DataType],
    open_file: Callable[[DataFileMeta], Iterator[pa.Table]],
) -> list[Iterator[pa.Table]]:
    """One input of key-sorted chunks per sorted run of ``files``, for `merge_reader.merge_sorted`."""
    return [chained(run, open_file) for run in split_into_runs(files, key_types)]


def key_at(table: pa.Table, key_names: Sequence[str], row: int) -> Key:
    """The key of one row, as Python values (`key_compare.compare_keys` orders them)."""
    return tuple(table.column(k)[row].as_py() for k in key_names)


class RunCursor:
    """The chunks of one sorted run of files, read forward once by ascending key ranges; one
    chunk held at a time (`first_row.KnownKeys`, changelog production's older versions)."""

    def __init__(self, files: Sequence[DataFileMeta], open_file: Callable[[DataFileMeta], Iterator[pa.Table]]) -> None:
        self._chunks = chained(files, open_file)
        self._pending: pa.Table | None = None

    def visit(self, lo: Key, hi: Key, key_names: Sequence[str], each: Callable[[pa.Table], None]) -> None:
        """Hand ``each`` the run's rows with keys up to ``hi`` not handed out yet, chunk by chunk;
        rows below ``lo`` are skipped (no later, ascending, call can need them)."""
        while True:
            if self._pending is None:
                self._pending = next((c for c in self._chunks if c.num_rows), None)
                if self._pending is None:
                    return
            chunk = self._pending
            start = count_below(chunk, key_names, lo)
            upto = count_at_most(chunk, key_names, hi)
            if upto > start:
                each(chunk.slice(start, upto - start))
            if upto < chunk.num_rows:
                self._pending = chunk.slice(upto)
                return
            self._pending = None
