"""Merge functions: how the records of one key collapse into one, vectorized over Arrow tables.

Every function takes a table sorted by key and then by sequence (oldest first) that holds the
value columns plus ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, and returns one row per key, still
sorted by key. Retract rows (-U/-D) survive the merge so that, written to a file, they can
cancel rows in older files; readers drop them at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError
from lake_assets.formats.data_file import DELETE, SEQUENCE_NUMBER, UPDATE_BEFORE, VALUE_KIND


class MergeFunction(Protocol):
    """Collapses the records of each key into one record."""

    def merge(self, table: pa.Table, key_names: Sequence[str]) -> pa.Table: ...


def key_change_mask(table: pa.Table, key_names: Sequence[str]) -> np.ndarray:
    """Boolean array, True at row i when row i starts a new key (row 0 always does)."""
    n = table.num_rows
    starts = np.zeros(n, dtype=bool)
    if n == 0:
        return starts
    starts[0] = True
    if n == 1:
        return starts
    diff = np.zeros(n - 1, dtype=bool)
    for name in key_names:
        col = table.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        ne = pc.not_equal(col.slice(1), col.slice(0, n - 1))
        # Keys are never null, but a null compare result would be unknown: treat as a change.
        diff |= ne.fill_null(True).to_numpy(zero_copy_only=False)
    starts[1:] = diff
    return starts


def group_bounds(table: pa.Table, key_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(first row index, last row index) of each key group in a key-sorted table."""
    starts = np.flatnonzero(key_change_mask(table, key_names))
    ends = np.empty_like(starts)
    if len(starts):
        ends[:-1] = starts[1:] - 1
        ends[-1] = table.num_rows - 1
    return starts, ends


def sort_for_merge(
    table: pa.Table,
    key_names: Sequence[str],
    sequence_fields: Sequence[str] = (),
    sequence_descending: bool = False,
) -> pa.Table:
    """Sort by key, then user sequence fields, then ``_SEQUENCE_NUMBER`` (oldest first)."""
    seq_order = "descending" if sequence_descending else "ascending"
    # User sequence fields may be null: nulls are the oldest (Paimon compares null as smallest).
    sort_keys = [(k, "ascending", "at_start") for k in key_names]
    sort_keys += [(f, seq_order, "at_start" if seq_order == "ascending" else "at_end") for f in sequence_fields]
    sort_keys.append((SEQUENCE_NUMBER, "ascending", "at_start"))
    idx = pc.sort_indices(table, sort_keys=sort_keys)
    return table.take(idx)


def is_retract(kinds: np.ndarray) -> np.ndarray:
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def kinds_of(table: pa.Table) -> np.ndarray:
    return table.column(VALUE_KIND).to_numpy()


class Deduplicate:
    """The last record of a key wins (a retract deletes the key)."""

    def __init__(self, ignore_delete: bool = False) -> None:
        self.ignore_delete = ignore_delete

    def merge(self, table: pa.Table, key_names: Sequence[str]) -> pa.Table:
        if self.ignore_delete:
            table = table.filter(pa.array(~is_retract(kinds_of(table))))
        _, ends = group_bounds(table, key_names)
        return table.take(pa.array(ends))


class FirstRow:
    """The first inserted record of a key wins; later records of the key are ignored."""

    def __init__(self, ignore_delete: bool = False) -> None:
        self.ignore_delete = ignore_delete

    def merge(self, table: pa.Table, key_names: Sequence[str]) -> pa.Table:
        retract = is_retract(kinds_of(table))
        if retract.any():
            if not self.ignore_delete:
                raise InvalidDataError(
                    "The first-row merge engine does not accept -U/-D records; "
                    "set 'ignore-delete' = 'true' to drop them"
                )
            table = table.filter(pa.array(~retract))
        starts, _ = group_bounds(table, key_names)
        return table.take(pa.array(starts))
