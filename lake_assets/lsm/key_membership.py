"""Which rows of a table have a key that another table holds: the key lookups that compaction
makes against older files (first-row's dropping of repeated keys, lookup changelog's "was this key
there before", deletion vectors' "which rows of this file did the unit supersede").

Keys match as Paimon's key comparator matches them (through `lake_assets.lsm.key_compare`), not as
Arrow's IEEE-style equality would.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.lsm.key_compare import key_view
from lake_assets.lsm.merge_reader import count_at_most
from lake_assets.lsm.run_partition import count_below, key_at


def known_mask(rows: pa.Table, known: pa.Table, key_names: Sequence[str]) -> np.ndarray:
    """Which of ``rows`` have a key that is in ``known`` (a bool per row)."""
    n = rows.num_rows
    if n == 0 or known.num_rows == 0:
        return np.zeros(n, dtype=bool)
    # keys match as Paimon compares them (float keys: NaN = NaN, -0.0 != 0.0), not IEEE-style
    mine = key_view(rows.select(list(key_names)), key_names)
    theirs = key_view(known.select(list(key_names)), key_names)
    if len(key_names) == 1:
        name = key_names[0]
        hit = pc.is_in(mine.column(name), value_set=theirs.column(name).combine_chunks())
        return np.asarray(hit.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    numbered = mine.append_column("__row", pa.array(np.arange(n, dtype=np.int64)))
    found = numbered.join(theirs, keys=list(key_names), join_type="left semi",
                          use_threads=False).column("__row").to_numpy()
    mask = np.zeros(n, dtype=bool)
    mask[found] = True
    return mask


def sorted_key_mask(rows: pa.Table, known: pa.Table, key_names: Sequence[str]) -> np.ndarray:
    """`known_mask` of key-sorted ``rows`` against key-sorted ``known``, matching only the slice
    of ``known`` inside the key range of ``rows`` (two binary searches): O(rows + that slice)."""
    n = rows.num_rows
    if n == 0 or known.num_rows == 0:
        return np.zeros(n, dtype=bool)
    a = count_below(known, key_names, key_at(rows, key_names, 0))
    b = count_at_most(known, key_names, key_at(rows, key_names, n - 1))
    return known_mask(rows, known.slice(a, b - a), key_names) if b > a else np.zeros(n, dtype=bool)


def sorted_positions(rows: pa.Table, keys: pa.Table, key_names: Sequence[str]) -> np.ndarray:
    """Ascending positions of the key-sorted ``rows`` (one data file's, one row per key) whose key
    is in the key-sorted ``keys`` (one merge step's output): only the rows inside the key range
    of ``keys`` (two binary searches) are matched, so a unit noting its output step by step
    costs O(step + that slice) per file and step, not O(file) per step."""
    n = keys.num_rows
    if n == 0 or rows.num_rows == 0:
        return np.empty(0, dtype=np.intp)
    a = count_below(rows, key_names, key_at(keys, key_names, 0))
    b = count_at_most(rows, key_names, key_at(keys, key_names, n - 1))
    if b <= a:
        return np.empty(0, dtype=np.intp)
    found: np.ndarray = np.flatnonzero(known_mask(rows.slice(a, b - a), keys, key_names)) + a
    return found
