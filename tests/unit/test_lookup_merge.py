"""Which records a lookup table's merge takes (lsm/lookup_merge.py): a key's level-0 records plus its
one newest record above level 0, as Paimon's LookupMergeFunction; which tables merge so."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.lsm.lookup_merge import LEVEL, lookup_keep, merges_by_lookup, needs_lookup, with_level
from lake_assets.lsm.merge import sort_and_merge
from lake_assets.lsm.merge_engine.registry import engine_of
from lake_assets.options import CoreOptions


def _keep(levels: list[int], starts: list[int]) -> list[int] | None:
    keep = lookup_keep(np.array(levels, dtype=np.int32), np.array(starts, dtype=np.int64))
    return None if keep is None else np.flatnonzero(keep).tolist()


def test_each_key_keeps_level0_and_its_lowest_level_above() -> None:
    # key 0: levels 3, 1, 0, 0 -> level 1 and both level-0 records
    # key 1: levels 2, 5 -> level 2; key 2: level 4 alone; key 3: levels 0, -1 (a writer's buffer)
    assert _keep([3, 1, 0, 0, 2, 5, 4, 0, -1], [0, 4, 6, 7]) == [1, 2, 3, 4, 6, 7, 8]


def test_ties_of_one_level_keep_the_first_in_merge_order() -> None:
    # pickHighLevel replaces its pick only on a strictly lower level
    assert _keep([2, 2, 3, 0], [0]) == [0, 3]


def test_nothing_dropped_returns_none() -> None:
    assert _keep([0, 0, 1, 0, 2], [0, 2, 4]) is None
    assert _keep([], []) is None


def test_many_keys_vectorized_against_a_per_key_pick() -> None:
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 6, 2_000)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    levels = rng.integers(-1, 6, int(sizes.sum())).astype(np.int32)
    keep = lookup_keep(levels, starts)
    expected = levels <= 0
    for s, n in zip(starts, sizes, strict=True):
        high = [i for i in range(s, s + n) if levels[i] > 0]
        if high:
            expected[min(high, key=lambda i: (levels[i], i))] = True
    assert keep is not None and np.array_equal(keep, expected)


@pytest.mark.parametrize(("options", "need", "merges"), [
    ({"changelog-producer": "lookup"}, True, True),
    ({"deletion-vectors.enabled": "true"}, True, True),
    ({"force-lookup": "true"}, True, True),
    ({"merge-engine": "first-row"}, True, False),  # Java does not wrap first-row
    ({"changelog-producer": "input"}, False, False),
    ({}, False, False),
])
def test_which_tables_need_lookup(options: dict[str, str], need: bool, merges: bool) -> None:
    opts = CoreOptions(options)
    assert needs_lookup(opts) is need
    assert merges_by_lookup(opts) is merges


def test_aggregation_merge_skips_deeper_rows() -> None:
    """[1,2], [1,2], [2] compacted by lookup: level 2 holds 1 (the first commit), level 1 holds
    the full merge 2, level 0 the new 2 -> 4, not 5."""
    opts = CoreOptions({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"})
    fn = engine_of(opts).create([("k", pa.int64()), ("a", pa.int64())], ["k"], opts)
    schema = pa.schema([("k", pa.int64()), ("a", pa.int64()), ("_SEQUENCE_NUMBER", pa.int64()),
                        ("_VALUE_KIND", pa.int8())])
    parts = [with_level(pa.table({"k": [2], "a": [1], "_SEQUENCE_NUMBER": [0], "_VALUE_KIND": [0]},
                                 schema=schema), 2),
             with_level(pa.table({"k": [2], "a": [2], "_SEQUENCE_NUMBER": [1], "_VALUE_KIND": [0]},
                                 schema=schema), 1),
             with_level(pa.table({"k": [2], "a": [2], "_SEQUENCE_NUMBER": [2], "_VALUE_KIND": [0]},
                                 schema=schema), 0)]
    merged = sort_and_merge(pa.concat_tables(parts), ["k"], fn)
    assert LEVEL not in merged.column_names
    assert merged.column("a").to_pylist() == [4]
    plain = sort_and_merge(pa.concat_tables(parts).drop_columns([LEVEL]), ["k"], fn)
    assert plain.column("a").to_pylist() == [5]
