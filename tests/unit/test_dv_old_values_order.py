"""The merge order a lookup compaction gives its old rows and new records without a sort
(`ops.dv_old_values`): seeded random cases against the merge's own stable sort (`sort_order`),
and the cases where it must leave the order to that sort."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.lsm.merge import sort_order
from lake_assets.ops import dv_old_values
from lake_assets.ops.dv_old_values import OldValues


class _IntKeyUpdate:
    """What `OldValues` asks of its `VectorUpdate` for the order: whether the key is one integer."""

    int_key = True
    ranked_key = False


def _rows(keys: np.ndarray, seq: np.ndarray, tag: int) -> pa.Table:
    return pa.table({"id": pa.array(keys, pa.int64()), "v": pa.array(np.full(keys.size, tag), pa.int32()),
                     "_SEQUENCE_NUMBER": pa.array(seq, pa.int64())})


def _order(old: pa.Table, chunk: pa.Table, sequence_fields: tuple[str, ...] = ()) -> np.ndarray | None:
    """What `OldValues.merge_in` would take ``old`` and ``chunk`` concatenated by (None: sorted)."""
    values = OldValues(_IntKeyUpdate(), lambda meta, positions: pa.table({}), ["id"], sequence_fields)  # type: ignore[arg-type]
    keys = values._ordered_int_keys(chunk)
    if keys is None:
        return None
    at = dv_old_values._first_records(keys, old.column("id").to_numpy())
    old_seq = old.column("_SEQUENCE_NUMBER").to_numpy()
    return None if at is None else dv_old_values._interleaved(at, old_seq, chunk, np.arange(old.num_rows),
                                                              old.num_rows)


@pytest.mark.parametrize("seed", range(12))
def test_interleaved_order_is_the_merge_sort_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    distinct = np.sort(rng.choice(10_000, int(rng.integers(1, 400)), replace=False))
    repeats = rng.integers(1, 4 if seed % 2 else 2, distinct.size)  # odd seeds: several records a key
    keys = np.repeat(distinct, repeats)
    seq = np.arange(1_000, 1_000 + keys.size)  # a key's records in ascending sequence order
    chunk = _rows(keys, seq, 1)
    looked_up = rng.choice(distinct, int(rng.integers(0, distinct.size + 1)), replace=False)
    # old rows come file by file (each ascending), older than the records; ties allowed
    split = int(rng.integers(0, looked_up.size + 1))
    old_keys = np.concatenate([np.sort(looked_up[:split]), np.sort(looked_up[split:])])
    first_seq = seq[np.searchsorted(keys, old_keys)]
    old_seq = first_seq - rng.integers(0, 2, old_keys.size) * rng.integers(1, 900, old_keys.size)
    old = _rows(old_keys, old_seq, 0)
    order = _order(old, chunk)
    assert order is not None
    both = pa.concat_tables([old, chunk])
    np.testing.assert_array_equal(order, sort_order(both, ["id"]))


def test_an_old_row_newer_than_its_key_records_is_left_to_the_sort() -> None:
    chunk = _rows(np.array([1, 2, 3]), np.array([10, 11, 12]), 1)
    old = _rows(np.array([2]), np.array([20]), 0)
    assert _order(old, chunk) is None
    assert _order(_rows(np.array([2]), np.array([11]), 0), chunk) is not None  # a tie: old first, as the sort


def test_records_out_of_merge_order_are_left_to_the_sort() -> None:
    old = _rows(np.array([2]), np.array([1]), 0)
    assert _order(old, _rows(np.array([1, 3, 2]), np.array([10, 11, 12]), 1)) is None  # keys out of order
    assert _order(old, _rows(np.array([1, 2, 2]), np.array([10, 12, 11]), 1)) is None  # a key's sequence
    assert _order(old, _rows(np.array([1, 2, 2]), np.array([10, 11, 12]), 1)) is not None


def test_keys_twice_among_old_rows_or_sequence_fields_are_left_to_the_sort() -> None:
    chunk = _rows(np.array([1, 2, 3]), np.array([10, 11, 12]), 1)
    assert _order(_rows(np.array([2, 2]), np.array([1, 2]), 0), chunk) is None
    assert _order(_rows(np.array([4]), np.array([1]), 0), chunk) is None  # not among the records
    assert _order(_rows(np.array([2]), np.array([1]), 0), chunk, ("v",)) is None
