"""The deduplicate merge engine (``merge-engine = deduplicate``, the default): the last record of
a key wins, and a -U/-D as last record deletes the key (``ignore-delete`` drops retractions first,
so an older record wins). docs/format.md §10.1."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lake_assets.lsm.merge import group_bounds, is_retract, kinds_of
from lake_assets.lsm.merge_engine.function import RowSelectingMerge


class Deduplicate(RowSelectingMerge):
    """The last record of a key wins (a retract deletes the key)."""

    keeps_first = False

    def select_rows(self, table: pa.Table, key_names: Sequence[str]) -> np.ndarray | None:
        """Positions of the winning rows of a key-sorted table (None: all rows win)."""
        keep = None
        if self.ignore_delete:
            retract = is_retract(kinds_of(table))
            if retract.any():
                keep = np.flatnonzero(~retract)
                table = table.take(pa.array(keep))
        _, ends = group_bounds(table, key_names)
        if keep is None:
            return None if len(ends) == table.num_rows else ends
        picked: np.ndarray = keep[ends]
        return picked

    def check_retracts(self, retract: np.ndarray) -> None:
        """Deduplicate takes every retraction: it deletes its key (or is dropped)."""
