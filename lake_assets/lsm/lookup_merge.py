"""Which records of a key a merge of a "lookup" table takes, as Paimon's ``LookupMergeFunction``.

A table "needs lookup" (Java's ``CoreOptions.needLookup``, the same in 0.9 and 1.x/2.x):
``changelog-producer = lookup``, deletion vectors, ``merge-engine = first-row`` or
``force-lookup``. Its writers compact with lookup (``LookupChangelogMergeFunctionWrapper``): a
key's level-0 records are merged WITH the key's row looked up in the levels above the unit's
output, so every row above level 0 already holds everything older than it, while the older rows
stay in their deeper levels. Reads and compactions of such a table therefore take, per key, all
of its level-0 records plus only ONE record above level 0 - the lowest level's, the first in merge
order among equal levels (``LookupMergeFunction.pickHighLevel`` since Paimon 1.2, #5632; Java 0.9
took the last in merge order above level 0, the same record wherever a level's rows are newer
than the deeper levels', which lookup compaction always leaves). Merging every record of a key
instead counts an aggregation's older input twice and lets a partial-update's old value come back.
First-row is not wrapped (Java: "it is already OK").

Merge inputs carry the level of the file each record came from in a `LEVEL` column
(`ops.read.SplitReader` adds it for these tables); `lookup_keep` picks the records group-wise
with numpy over a merge-sorted table, no Python per row. A record without the column (a writer's
buffer: Java's level -1) counts as level 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lake_assets.lsm.merge_engine.names import FIRST_ROW
from lake_assets.options import CoreOptions

LEVEL = "_LEVEL"
"""The level of the file a merge input record was read from (int32; not stored anywhere)."""

LEVEL_FIELD = pa.field(LEVEL, pa.int32(), nullable=False)


def _flag(options: CoreOptions, key: str) -> bool:
    return str(options.raw.get(key, "false")).strip().lower() == "true"


def needs_lookup(options: CoreOptions) -> bool:
    """Java's ``CoreOptions.needLookup()``: lookup changelog, deletion vectors, first-row, force-lookup."""
    return (options.changelog_producer == "lookup" or _flag(options, "deletion-vectors.enabled")
            or _flag(options, "force-lookup") or options.merge_engine == FIRST_ROW)


def merges_by_lookup(options: CoreOptions) -> bool:
    """Whether merges of the table take a key's level-0 records plus its one newest record above
    level 0 (Java wraps the merge function in ``LookupMergeFunction``; first-row it leaves as is)."""
    return options.merge_engine != FIRST_ROW and needs_lookup(options)


def with_level(data: pa.Table, level: int) -> pa.Table:
    """``data`` (rows of one file of ``level``) with the `LEVEL` column."""
    return data.append_column(LEVEL_FIELD, pa.repeat(pa.scalar(level, pa.int32()), data.num_rows))


def lookup_keep(levels: np.ndarray, starts: np.ndarray) -> np.ndarray | None:
    """Which records of a merge-sorted input a lookup merge takes: every level-0 (or -1) record and
    each key's first record of its lowest level above 0. ``levels`` per record in merge order,
    ``starts`` the first record index of each key group. None when every record is taken."""
    high = np.flatnonzero(levels > 0)
    if high.size <= 1:
        return None
    group = np.repeat(np.arange(starts.size), np.diff(np.append(starts, levels.size)))[high]
    if bool(np.all(group[1:] != group[:-1])):  # at most one record above level 0 per key
        return None
    # (group, level, position) order: the first of each group is its pick
    order = np.lexsort((high, levels[high], group))
    first = np.ones(order.size, dtype=bool)
    first[1:] = group[order[1:]] != group[order[:-1]]
    keep = levels <= 0
    keep[high[order[first]]] = True
    return keep


def select_lookup_records(sorted_table: pa.Table, starts: np.ndarray) -> pa.Table:
    """``sorted_table`` (merge-sorted, with `LEVEL`) without the records a lookup merge skips, and
    without the `LEVEL` column."""
    levels = sorted_table.column(LEVEL).to_numpy()
    keep = lookup_keep(levels, starts)
    out = sorted_table.drop_columns([LEVEL])
    return out if keep is None else out.filter(pa.array(keep))


def drop_level(table: pa.Table) -> pa.Table:
    """``table`` without its `LEVEL` column, if it has one."""
    return table.drop_columns([LEVEL]) if LEVEL in table.column_names else table


def has_level(table: pa.Table, names: Sequence[str] | None = None) -> bool:
    """Whether ``table`` (or the column ``names``) carries `LEVEL`."""
    return LEVEL in (table.column_names if names is None else names)


__all__ = ["LEVEL", "LEVEL_FIELD", "drop_level", "has_level", "lookup_keep", "merges_by_lookup", "needs_lookup",
           "select_lookup_records", "with_level"]
