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

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.key_compare import compare_keys, key_view
from lake_assets.lsm.merge import group_bounds, is_retract, kinds_of
from lake_assets.lsm.merge_engine.function import RowSelectingMerge
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
    n = merged.num_rows
    if n == 0 or known.num_rows == 0:
        return merged
    # keys match as Paimon compares them (float keys: NaN = NaN, -0.0 != 0.0), not IEEE-style
    mine = key_view(merged.select(list(key_names)), key_names)
    theirs = key_view(known.select(list(key_names)), key_names)
    if len(key_names) == 1:
        name = key_names[0]
        hit = pc.is_in(mine.column(name), value_set=theirs.column(name).combine_chunks())
        keep = pc.invert(hit.fill_null(False))
    else:
        rows = mine.append_column("__row", pa.array(np.arange(n, dtype=np.int64)))
        found = rows.join(theirs, keys=list(key_names), join_type="left semi",
                          use_threads=False).column("__row").to_numpy()
        mask = np.ones(n, dtype=bool)
        mask[found] = False
        keep = pa.array(mask)
    return merged.filter(keep)
