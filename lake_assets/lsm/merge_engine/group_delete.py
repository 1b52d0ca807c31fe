"""Where ``partial-update.remove-record-on-sequence-group`` removes a key's record (Paimon 1.0+).

Paimon's ``PartialUpdateMergeFunction`` walks a key's records in arrival order. A -D record
(not -U) whose group sequence, in any sequence group the option names, is set and not older than
the group's current sequence *resets* the row: the row becomes the -D record's own image and the
result is -D unless later records follow. Later records merge on top of that image as on any row
(so an insert older than the delete, in the deleted group, changes nothing).

Whether a -D resets depends on the state the earlier resets left, so this is a scan; it runs in
rounds over the whole merge input with numpy, never a Python loop over rows or keys. Between
resets a group's current sequence is the running maximum of its set sequences (a record wins a
group when its sequence is not older, and nulls are smallest). A reset sets each named group's
sequence to the -D's own, which keeps every running maximum unless the -D is older (or null) in
some other named group: only such *lowering* resets end a round, so a table with one named group
takes one round.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lake_assets.lsm.merge_engine.grouping import Grouping, last_true


def segmented_prior_max(values: np.ndarray, gid: np.ndarray) -> np.ndarray:
    """Per row, the largest of ``values`` (all >= -1) at earlier rows of its key group, else -1."""
    n = len(values)
    if n == 0:
        return values.copy()
    # offsetting each key group above every earlier one makes one cumulative max a segmented one
    offset = gid * (n + 2)
    inclusive = np.maximum.accumulate(values + 1 + offset) - offset - 1
    prior = np.full(n, -1, dtype=np.int64)
    same = gid[1:] == gid[:-1]
    prior[1:] = np.where(same, inclusive[:-1], -1)
    return prior


def last_resets(
    is_delete: np.ndarray, group_ranks: Sequence[np.ndarray], grouping: Grouping, every: np.ndarray | None = None
) -> np.ndarray:
    """Per key group, the row of its last reset (see the module docstring), else -1.

    ``group_ranks``: for each named sequence group, each row's sequence rank (order as the
    group's comparator orders them) or -1 where the row leaves the group's sequence unset.
    ``every`` (a bool per row), when given, gets every reset row set, not only the last ones."""
    n, count = len(is_delete), grouping.count
    gid, starts, ends = grouping.gid, grouping.starts, grouping.ends
    pos = np.arange(n, dtype=np.int64)
    base = starts.copy()  # rows before it are gone; the row at it is the state's origin
    eligible = starts.copy()  # the first row that may reset
    last = np.full(count, -1, dtype=np.int64)
    pending = is_delete.copy()
    while pending.any():
        seg_base, seg_eligible = base[gid], eligible[gid]
        in_segment = pos >= seg_base
        qualifies = np.zeros(n, dtype=bool)
        lowers = np.zeros(n, dtype=bool)
        for ranks in group_ranks:
            prior = segmented_prior_max(np.where(in_segment, ranks, -1), gid)
            qualifies |= (ranks >= 0) & (ranks >= prior)
            lowers |= ranks < prior
        resets = pending & (pos >= seg_eligible) & qualifies
        lowering = resets & lowers
        big = np.int64(n)
        first_lowering = np.minimum.reduceat(np.where(lowering, pos, big), starts) if count else starts
        valid = resets & (pos <= first_lowering[gid])
        if every is not None:
            every |= valid
        found = last_true(valid, ends, starts)
        last = np.where(found >= 0, found, last)
        again = first_lowering < big
        if not again.any():
            break
        base = np.where(again, first_lowering, base)
        eligible = np.where(again, first_lowering + 1, eligible)
        pending &= again[gid]
    return last
