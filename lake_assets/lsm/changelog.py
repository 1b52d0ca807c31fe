"""Changelog from two states of the same keys: +I, -U/+U, -D rows, vectorized.

Used by the ``lookup`` producer (the state before a compaction's level-0 data vs after it) and the
``full-compaction`` producer (the previous top level vs the new one).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.key_compare import key_view
from lake_assets.lsm.merge import group_bounds
from lake_assets.lsm.merge_engine.collection_values import value_ids
from lake_assets.spec.row_kind import RowKind

_SIDE = "__side"


def _row_equal(a: pa.Table, b: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Per row: every column equal, nulls equal to nulls."""
    eq = np.ones(a.num_rows, dtype=bool)
    for c in columns:
        x, y = a.column(c), b.column(c)
        if pa.types.is_nested(x.type):
            # Arrow's equal has no kernel for ARRAY/MAP/ROW: compare value ids (nulls equal nulls)
            ids = value_ids(pa.concat_arrays([x.combine_chunks(), y.combine_chunks()]))
            eq &= ids[: a.num_rows] == ids[a.num_rows :]
            continue
        both_null = pc.and_(pc.is_null(x), pc.is_null(y))
        same = pc.fill_null(pc.equal(x, y), False)
        eq &= pc.or_(same, both_null).to_numpy(zero_copy_only=False)
    return eq


def _key_in(keys: pa.Table, candidates: pa.Table, key_names: Sequence[str]) -> np.ndarray:
    """Per row of ``keys``: whether its key occurs in ``candidates``."""
    names = list(key_names)
    if len(names) == 1:
        found: np.ndarray = pc.is_in(keys.column(names[0]), value_set=pc.unique(candidates.column(names[0])))\
            .to_numpy(zero_copy_only=False)
        return found
    pos = "__pos"
    indexed = keys.append_column(pos, pa.array(np.arange(keys.num_rows, dtype=np.int64)))
    distinct = candidates.select(names).group_by(names, use_threads=False).aggregate([])
    hit = indexed.join(distinct, keys=names, join_type="left semi", use_threads=False).column(pos).to_numpy()
    out = np.zeros(keys.num_rows, dtype=bool)
    out[hit] = True
    return out


def diff_states(
    before: pa.Table,
    after: pa.Table,
    key_names: Sequence[str],
    value_names: Sequence[str],
    *,
    row_deduplicate: bool = False,
    touched_keys: pa.Table | None = None,
) -> pa.Table:
    """Changelog turning ``before`` into ``after`` (each: one live row per key, same columns).

    Returns rows sorted by key with ``_VALUE_KIND`` set: +I for new keys, -D (with the old values)
    for removed keys, -U then +U for keys that got new records - also when the values came out
    equal, unless ``row_deduplicate`` (Paimon's ``changelog-producer.row-deduplicate``, default
    false). A key whose row is the same record on both sides (same sequence number) was not
    written to and produces nothing - unless it is in ``touched_keys`` (the keys that got new
    records): then its new records lost to the old one (e.g. an older ``sequence.field``) and,
    as Paimon's lookup and full-compaction changelog wrappers do, it gets an unchanged -U/+U pair.
    """
    cols = list(before.column_names)
    both = pa.concat_tables([
        before.append_column(_SIDE, pa.array(np.zeros(before.num_rows, np.int8))),
        after.select(cols).append_column(_SIDE, pa.array(np.ones(after.num_rows, np.int8))),
    ])
    if both.num_rows == 0:
        return before.slice(0, 0)
    order = pc.sort_indices(key_view(both.select([*key_names, _SIDE]), key_names),
                            sort_keys=[*[(k, "ascending") for k in key_names], (_SIDE, "ascending")])
    both = both.take(order)
    starts, ends = group_bounds(both, key_names)
    side = both.column(_SIDE).to_numpy()
    single = starts == ends
    only_before = starts[single & (side[starts] == 0)]
    only_after = starts[single & (side[starts] == 1)]
    pair_b = starts[~single]
    pair_a = ends[~single]
    # the very same record on both sides (same sequence number): the key was not touched
    seq_all = both.column(SEQUENCE_NUMBER).to_numpy()
    touched = seq_all[pair_b] != seq_all[pair_a]
    if touched_keys is not None and not touched.all():
        touched |= _key_in(both.take(pa.array(pair_b)).select(list(key_names)), touched_keys, key_names)
    pair_b, pair_a = pair_b[touched], pair_a[touched]
    if len(pair_b) and row_deduplicate:
        same = _row_equal(both.take(pa.array(pair_b)), both.take(pa.array(pair_a)), value_names)
        pair_b, pair_a = pair_b[~same], pair_a[~same]
    idx = np.concatenate([only_before, only_after, pair_b, pair_a])
    kinds = np.concatenate([
        np.full(len(only_before), RowKind.DELETE, np.int8),
        np.full(len(only_after), RowKind.INSERT, np.int8),
        np.full(len(pair_b), RowKind.UPDATE_BEFORE, np.int8),
        np.full(len(pair_a), RowKind.UPDATE_AFTER, np.int8),
    ])
    # -U before +U of the same key: order by position (before sorts before after), then kind
    out_order = np.lexsort((kinds == RowKind.UPDATE_AFTER, idx))
    idx, kinds = idx[out_order], kinds[out_order]
    out = both.take(pa.array(idx)).drop_columns([_SIDE])
    kind_pos = out.column_names.index(VALUE_KIND)
    out = out.set_column(kind_pos, pa.field(VALUE_KIND, pa.int8(), nullable=False), pa.array(kinds, pa.int8()))
    # +U must sort after its -U by sequence (streaming readers order a file's rows by sequence)
    seq = out.column(SEQUENCE_NUMBER).to_numpy().copy()
    bumped = np.flatnonzero(kinds == RowKind.UPDATE_AFTER)
    if len(bumped):
        seq[bumped] = np.maximum(seq[bumped], seq[bumped - 1] + 1)
    seq_pos = out.column_names.index(SEQUENCE_NUMBER)
    return out.set_column(seq_pos, pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False), pa.array(seq))
