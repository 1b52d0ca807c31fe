"""`lsm.key_membership.sorted_positions`: positions of a key-sorted file's rows whose key is in a
key-sorted step of keys, matched only inside the step's key range, against a plain model."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.lsm.key_membership import sorted_positions


def model(rows: list[tuple[object, ...]], keys: list[tuple[object, ...]]) -> list[int]:
    def same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
        # Paimon's equality: NaN equals NaN, -0.0 is not 0.0
        return all((x == y and (not isinstance(x, float) or math.copysign(1, x) == math.copysign(1, y)))
                   or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
                   for x, y in zip(a, b, strict=True))
    return [i for i, r in enumerate(rows) if any(same(r, k) for k in keys)]


def table(names: list[str], types: list[pa.DataType], rows: list[tuple[object, ...]]) -> pa.Table:
    return pa.table({n: pa.array([r[i] for r in rows], t) for i, (n, t) in enumerate(zip(names, types, strict=True))})


CASES = {
    "string": (["k"], [pa.string()], [("a",), ("b",), ("bb",), ("c",), ("z",)], [("b",), ("bc",), ("z",)]),
    "two columns": (["k", "j"], [pa.int64(), pa.string()], [(1, "a"), (1, "b"), (2, "a"), (3, "c")],
                    [(1, "b"), (2, "b"), (3, "c")]),
    # Paimon's double order: -0.0 before 0.0, NaN last
    "double": (["k"], [pa.float64()], [(-1.5,), (-0.0,), (0.0,), (2.0,), (math.nan,)],
               [(-0.0,), (2.0,), (math.nan,)]),
    "keys at the file's edges and outside": (["k"], [pa.string()], [("b",), ("c",), ("d",)],
                                              [("a",), ("b",), ("d",), ("e",)]),
    "no key in range": (["k"], [pa.string()], [("m",), ("n",)], [("a",), ("b",)]),
    "empty file": (["k"], [pa.string()], [], [("a",)]),
    "every row": (["k"], [pa.string()], [("a",), ("b",)], [("a",), ("b",)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_positions_match_the_model(case: str) -> None:
    names, types, rows, keys = CASES[case]
    got = sorted_positions(table(names, types, rows), table(names, types, keys), names)
    assert got.dtype.kind == "i"
    assert got.tolist() == model(rows, keys)
    assert np.all(np.diff(got) > 0)
