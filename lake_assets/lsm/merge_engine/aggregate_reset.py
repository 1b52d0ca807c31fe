"""The aggregation engine's reset by a -D (``aggregation.remove-record-on-delete``), as Paimon 1.4.1+.

Paimon's ``AggregateMergeFunction.add`` answers a -D, when ``aggregation.remove-record-on-delete``
is set, by making the key's row the -D's whole image (``initRow``; since PR #7645, in 1.4.1 and
2.0, every column; 1.1-1.4.0 kept only the NOT NULL ones and left the others null). The records
after it aggregate onto that image; with none after, the result is -D carrying the image.

`Aggregation.merge` folds the group's last -D as an insert of its image followed by the records
after it. That is Java's result for every function whose ``agg(null, v)`` is ``v`` and which keeps
no state of its own. ``first_value`` and ``first_non_null_value`` do keep state: their
``initialized`` flag survives the reset (``initRow`` does not call ``FieldAggregator.reset``), so
what they give depends on what came before the -D *in this merge*, and merging in parts can differ
from merging at once, in Java as here:

- a qualifying record (+I/+U; non-null for ``first_non_null_value``) before the -D: the image;
- else the first qualifying record after the -D;
- else the image.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.lsm.merge import is_retract
from lake_assets.lsm.merge_engine.aggregate_functions import FieldFunction, fold
from lake_assets.lsm.merge_engine.aggregate_reset_collections import RESET_SENSITIVE, java_after_image
from lake_assets.lsm.merge_engine.grouping import valid_mask
from lake_assets.lsm.merge_engine.segment_reduce import runs_of

_FIRST_FUNCTIONS = ("first_value", "first_non_null_value")


@dataclass(frozen=True)
class ResetImages:
    """Where each key group's last -D is (``last_delete``; -1 for none), to give Java's results
    for the groups a -D reset: the image itself when it ends the group (``deleted``), and the
    stateful first-value functions' choice when records follow it."""

    kinds: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    last_delete: np.ndarray
    has_delete: np.ndarray
    deleted: np.ndarray

    def apply(self, fn: FieldFunction, col: pa.Array, folded: pa.Array, gid: np.ndarray) -> pa.Array:
        """``folded`` (each reset group's image folded as a leading insert, then the records after
        it; the other groups' ordinary fold) with the reset groups' results made Java's."""
        image_rows = np.where(self.has_delete, self.last_delete, self.ends)
        image = col.take(pa.array(image_rows, type=pa.int64()))
        if fn.function in _FIRST_FUNCTIONS:
            choice = self._first_after(fn, col, gid, image_rows)
            reset = col.take(pa.array(np.maximum(choice, 0))) if len(col) else image
            reset = pc.if_else(pa.array(choice >= 0), reset, image)
            return pc.if_else(pa.array(self.has_delete), reset, folded)
        if fn.function in RESET_SENSITIVE:
            folded = self._onto_image(fn, col, folded, gid)
        if fn.function == "listagg":  # a blank image stays until a non-blank value comes (agg(" ", v) = v)
            folded = pc.if_else(pc.and_(pa.array(self.has_delete), folded.is_null()), image, folded)
        # a -D that ends its group is the result as it is: initRow takes the image raw (a
        # distinct collect's duplicates stay, a sketch's bytes are not re-encoded)
        return pc.if_else(pa.array(self.deleted), image, folded) if self.deleted.any() else folded

    def _onto_image(self, fn: FieldFunction, col: pa.Array, folded: pa.Array, gid: np.ndarray) -> pa.Array:
        """``folded`` with Java's value where records follow a reset whose image the leading-insert
        fold changes (`aggregate_reset_collections`)."""
        groups = np.flatnonzero(self.has_delete & ~self.deleted)
        if not groups.size:
            return folded
        image_rows = self.last_delete[groups]
        alone = fold(fn, col, image_rows, np.zeros(groups.size, dtype=bool), np.arange(groups.size), groups.size)
        images = col.take(pa.array(image_rows, type=pa.int64()))
        # (Arrow compares no lists: the reset groups with records after them, few, in Python)
        changed = [i for i, (a, b) in enumerate(zip(alone.to_pylist(), images.to_pylist(), strict=True)) if a != b]
        if not changed:
            return folded
        retract = is_retract(self.kinds)
        out = folded.to_pylist()
        for i in changed:
            g, lo = int(groups[i]), int(image_rows[i])
            records = [(col[r].as_py(), bool(retract[r])) for r in range(lo + 1, int(self.ends[g]) + 1)
                       if not (fn.ignore_retract and retract[r])]
            out[g] = java_after_image(fn.function, fn.collection, fn.column, col.type, images[i].as_py(), records)
        return pa.array(out, type=col.type)

    def _first_after(self, fn: FieldFunction, col: pa.Array, gid: np.ndarray, image_rows: np.ndarray) -> np.ndarray:
        """Per reset group, the row a first-value function takes over the image, else -1."""
        n_groups = len(self.starts)
        qualifying = ~is_retract(self.kinds)
        if fn.function == "first_non_null_value":
            qualifying &= valid_mask(col)
        row = np.arange(len(self.kinds))
        cut = image_rows[gid]
        # Java's `initialized`, set by an agg call before the reset in this merge
        before = np.bincount(gid[qualifying & (row < cut)], minlength=n_groups) > 0
        after = np.flatnonzero(qualifying & (row > cut))
        choice = np.full(n_groups, -1, dtype=np.int64)
        first, _ = runs_of(gid[after])  # gid is non-decreasing: each group's first such row
        choice[gid[after[first]]] = after[first]
        choice[before | ~self.has_delete] = -1
        return choice


__all__ = ["ResetImages"]
