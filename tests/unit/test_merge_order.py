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
