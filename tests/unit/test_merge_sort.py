"""The fast integer-key sort order equals the general multi-column sort (key, then sequence); the
fast integer-key change mask equals the general one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.lsm.merge import is_retract, key_change_mask, sort_and_merge, sort_order
from lake_assets.lsm.merge_engine.deduplicate import Deduplicate


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.integers(-(2**62), 2**62) | st.integers(-5, 5) | st.sampled_from([-(2**63), 2**63 - 1]),
                  min_size=0, max_size=60),
    groups=st.booleans(),
)
def test_fast_order_equals_general_order(keys, groups):
    n = len(keys)
    seq = np.random.default_rng(n).permutation(n).astype(np.int64)
    t = pa.table({"k": pa.array(keys, pa.int64()), "_SEQUENCE_NUMBER": seq,
                  "g": pa.array(np.arange(n) % 2, pa.int64())})
    prefix = ("g",) if groups else ()
    got = sort_order(t, ["k"], prefix=prefix)
    sort_keys = [*[(p, "ascending") for p in prefix], ("k", "ascending"), ("_SEQUENCE_NUMBER", "ascending")]
    want = pc.sort_indices(t, sort_keys=sort_keys).to_numpy()
    assert t.take(got).equals(t.take(want))


def test_sort_and_merge_keeps_latest_version():
    t = pa.table({"k": [3, 1, 3, 2, 1], "_SEQUENCE_NUMBER": [0, 1, 5, 3, 4],
                  "_VALUE_KIND": pa.array([0] * 5, pa.int8()), "v": ["a", "b", "c", "d", "e"]})
    out = sort_and_merge(t, ["k"], Deduplicate())
    assert out.column("v").to_pylist() == ["e", "d", "c"]


class _StructuralLastRow:
    """A row-selecting function that only matches the protocol (no `RowSelectingMerge` base)."""

    ignore_delete = False
    keeps_first = False

    def __init__(self) -> None:
        self.selected = 0

    def merge(self, table: pa.Table, key_names) -> pa.Table:
        raise AssertionError("a row-selecting function is asked for its rows, not to merge")

    def select_rows(self, table: pa.Table, key_names):
        self.selected += 1
        return Deduplicate().select_rows(table, key_names)

    def check_retracts(self, retract: np.ndarray) -> None:
        return None


def test_a_protocol_only_row_selecting_function_still_selects_rows():
    t = pa.table({"k": [3, 1, 3, 2, 1], "_SEQUENCE_NUMBER": [0, 1, 5, 3, 4],
                  "_VALUE_KIND": pa.array([0] * 5, pa.int8()), "v": ["a", "b", "c", "d", "e"]})
    fn = _StructuralLastRow()
    assert sort_and_merge(t, ["k"], fn).column("v").to_pylist() == ["e", "d", "c"]
    assert fn.selected == 1


def test_is_retract_marks_update_before_and_delete():
    kinds = np.array([0, 1, 2, 3, 1, 0], dtype=np.int8)
    assert is_retract(kinds).tolist() == [False, True, False, True, True, False]


@settings(max_examples=150, deadline=None)
@given(
    keys=st.lists(st.integers(-3, 3) | st.sampled_from([-(2**63), 2**63 - 1]), min_size=0, max_size=40),
    split=st.integers(0, 40),
)
def test_integer_key_change_mask_is_the_general_one(keys, split):
    """One null-free integer key is compared by numpy (one chunk), else by the kernels: same mask."""
    col = pa.array(keys, pa.int64())
    want = np.array([i == 0 or keys[i] != keys[i - 1] for i in range(len(keys))], dtype=bool)
    one_chunk = pa.table({"k": col})
    two_chunks = pa.table({"k": pa.chunked_array([col.slice(0, split), col.slice(split)], pa.int64())})
    as_string = pa.table({"k": col.cast(pa.string())})  # the general path
    for t in (one_chunk, two_chunks, as_string):
        assert key_change_mask(t, ["k"]).tolist() == want.tolist()


def test_integer_key_change_mask_of_each_integer_width_and_a_null():
    keys = [0, 0, 5, 5, 5, 9, 0]
    want = [True, False, True, False, False, True, True]
    for typ in (pa.int8(), pa.int16(), pa.int32(), pa.uint32(), pa.uint64()):
        assert key_change_mask(pa.table({"k": pa.array(keys, typ)}), ["k"]).tolist() == want
    big = [2**64 - 1, 2**64 - 1, 2**63]  # uint64 beyond int64: compared as what they are
    assert key_change_mask(pa.table({"k": pa.array(big, pa.uint64())}), ["k"]).tolist() == [True, False, True]
    # a null (never in a key, but a null compare is a change) takes the general path
    nulls = pa.table({"k": pa.array([1, None, None, 1], pa.int64())})
    assert key_change_mask(nulls, ["k"]).tolist() == [True, True, True, True]
