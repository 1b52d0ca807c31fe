"""The first-row merge engine (``merge-engine = first-row``) and its compaction lookup.

The first inserted record of a key wins; later records of the key are ignored. Retractions raise
`InvalidDataError` unless ``ignore-delete`` (or a fallback key, e.g. ``first-row.ignore-delete``)
drops them.

Paimon keeps every key of a first-row table at most once across levels 1..max: compacting level 0
(its FirstRowMergeFunctionWrapper) looks each merged key up in the levels above the output level
and drops the record when the key is there, since the older record is the first row. Paimon's
readers rely on it: a batch read of a first-row table reads levels 1..max without merging them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.key_compare import compare_keys
from lake_assets.lsm.key_membership import known_mask
from lake_assets.lsm.merge import group_bounds, is_retract, kinds_of
from lake_assets.lsm.merge_engine.function import RowSelectingMerge
from lake_assets.lsm.merge_reader import Key, count_at_most
from lake_assets.lsm.run_partition import RunCursor, count_below, key_at, split_into_runs
from lake_assets.lsm.sorted_run import key_range
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import DataFileMeta


class FirstRow(RowSelectingMerge):
    """The first inserted record of a key wins; later records of the key are ignored."""

    keeps_first = True

    def select_rows(self, table: pa.Table, key_names: Sequence[str]) -> np.ndarray | None:
        """Positions of the first row of each key in a key-sorted table (None: all rows win)."""
        retract = is_retract(kinds_of(table))
        keep = None
        if retract.any():
            self.check_retracts(retract)
            keep = np.flatnonzero(~retract)
            table = table.take(pa.array(keep))
        starts, _ = group_bounds(table, key_names)
        if keep is None:
            return None if len(starts) == table.num_rows else starts
        picked: np.ndarray = keep[starts]
        return picked

    def check_retracts(self, retract: np.ndarray) -> None:
        """Retractions are refused unless ``ignore-delete`` drops them."""
        if retract.any() and not self.ignore_delete:
            raise InvalidDataError(
                "The first-row merge engine does not accept -U/-D records; "
                "set 'ignore-delete' = 'true' to drop them"
            )


def lookup_files(
    unit_files: Sequence[DataFileMeta], bucket_files: Sequence[DataFileMeta], key_types: Sequence[DataType]
) -> tuple[DataFileMeta, ...]:
    """The files outside a compaction unit that may hold keys of its level-0 files.

    Only level-0 records can repeat a key of an older level (levels 1..max never repeat a key), and
    every file outside the unit is older than it (units take the newest runs), so these are the
    files whose keys the unit's output must not repeat: key ranges pick them from manifests.
    """
    in_unit = {f.file_name for f in unit_files}
    fresh = [key_range(f, key_types) for f in unit_files if f.level == 0]
    if not fresh:
        return ()
    out = []
    for f in bucket_files:
        if f.file_name in in_unit or f.level == 0:
            continue
        lo, hi = key_range(f, key_types)
        if any(compare_keys(lo, fhi, key_types) <= 0 and compare_keys(flo, hi, key_types) <= 0
               for flo, fhi in fresh):
            out.append(f)
    return tuple(out)


def drop_known_keys(merged: pa.Table, known: pa.Table, key_names: Sequence[str]) -> pa.Table:
    """``merged`` without the rows whose key is in ``known`` (row order kept: output stays sorted)."""
    if merged.num_rows == 0 or known.num_rows == 0:
        return merged
    return merged.filter(pa.array(~known_mask(merged, known, key_names)))


class KnownKeys:
    """The keys of a first-row compaction's lookup files, streamed against its key-sorted output.

    Instead of holding every key of the lookup files (the bucket's keys, for a unit of level 0
    below a large bucket), each sorted run of them is read forward in key chunks alongside the
    merged output, which the compaction produces in ascending key order: memory is one key chunk
    per run (``open_keys`` sets its size) whatever the bucket holds, and every file is read once.
    A call that goes back in key order (not made by compaction, handled for safety) starts the
    runs over.
    """

    def __init__(
        self,
        files: Sequence[DataFileMeta],
        key_names: Sequence[str],
        key_types: Sequence[DataType],
        open_keys: Callable[[DataFileMeta], Iterator[pa.Table]],
    ) -> None:
        self._runs = split_into_runs(files, key_types)
        self._key_names = list(key_names)
        self._open_keys = open_keys
        self._cursors = self._start()
        self._last: Key | None = None

    def _start(self) -> list[RunCursor]:
        return [RunCursor(run, self._open_keys) for run in self._runs]

    def drop(self, merged: pa.Table) -> pa.Table:
        """``merged`` (key-sorted) without the rows whose key a lookup file holds."""
        n = merged.num_rows
        if n == 0 or not self._runs:
            return merged
        names = self._key_names
        lo, hi = key_at(merged, names, 0), key_at(merged, names, n - 1)
        if self._last is not None and compare_keys(lo, self._last) <= 0:
            self._cursors = self._start()
        self._last = hi
        hit = np.zeros(n, dtype=bool)

        def mark(keys: pa.Table) -> None:
            # only the output rows inside this chunk's key range can match it
            a = count_below(merged, names, key_at(keys, names, 0))
            b = count_at_most(merged, names, key_at(keys, names, keys.num_rows - 1))
            if b > a:
                hit[a:b] |= known_mask(merged.slice(a, b - a), keys, names)

        for cursor in self._cursors:
            cursor.visit(lo, hi, names, mark)
        return merged.filter(pa.array(~hit)) if hit.any() else merged
