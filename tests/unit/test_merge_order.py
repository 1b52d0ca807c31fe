"""The single-integer-key sort fast path orders exactly like the general stable sort, ties included."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.data_file import SEQUENCE_NUMBER
from lake_assets.lsm.merge import sort_order


def test_int_key_fast_path_breaks_sequence_ties_by_input_order():
    rng = np.random.default_rng(11)
    n = 5000
    # few keys and few sequence numbers: many rows share both (two writers, one bucket)
    table = pa.table({"k": rng.integers(0, 50, n), SEQUENCE_NUMBER: rng.integers(0, 4, n), "row": np.arange(n)})
    general = pc.sort_indices(table, sort_keys=[("k", "ascending"), (SEQUENCE_NUMBER, "ascending")]).to_numpy()
    assert np.array_equal(sort_order(table, ["k"]), general)


def test_a_null_user_sequence_is_the_oldest_in_either_sort_order():
    """Paimon's generated comparator (``GenerateUtils.generateRowCompare``, null-is-last false) answers
    "smaller" for a null before it applies the descending sign, so under ``sequence.field.sort-order =
    descending`` a null sequence still loses to any value; pypaimon 2.1 merges the same way
    (tests/interop/test_peer_kinds_interop.py)."""
    from lake_assets.lsm.merge import sort_for_merge

    table = pa.table({"k": [1, 1, 2, 2, 3, 3], "seq": [None, 5, 7, None, 1, 9],
                      SEQUENCE_NUMBER: [0, 1, 2, 3, 4, 5], "v": ["n1", "v1", "v2", "n2", "small", "large"]})
    for descending, winners in ((False, ["v1", "v2", "large"]), (True, ["v1", "v2", "small"])):
        order = sort_order(table, ["k"], ["seq"], descending)
        rows = table.take(order).to_pylist()
        last = {r["k"]: r["v"] for r in rows}  # the newest of each key sorts last
        assert list(last.values()) == winners, descending
        assert sort_for_merge(table, ["k"], ["seq"], descending).column("v").to_pylist() == [r["v"] for r in rows]
