"""Float keys follow Paimon's comparator (Java's Double.compare): NaN equals NaN and sorts above
+inf, -0.0 is its own key below 0.0. Reads agree before and after compaction."""

from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.lsm.key_compare import compare_keys, float_order_codes
from lake_assets.lsm.merge_engine.first_row import drop_known_keys

KEYS = [math.nan, math.nan, 0.0, -0.0, math.inf, -math.inf]


def java_double_compare(a: float, b: float) -> int:
    """Java's Double.compare, from its definition (doubleToLongBits on ties)."""
    if a < b:
        return -1
    if a > b:
        return 1
    bits = [struct.unpack("<q", struct.pack("<d", math.nan if math.isnan(x) else x))[0] for x in (a, b)]
    return (bits[0] > bits[1]) - (bits[0] < bits[1])


@given(st.lists(st.floats(allow_nan=True) | st.sampled_from(KEYS), min_size=2, max_size=30))
def test_codes_order_as_java(values):
    codes = float_order_codes(pa.array(values)).to_pylist()
    for i in range(len(values) - 1):
        a, b = values[i], values[i + 1]
        expected = java_double_compare(a, b)
        assert (codes[i] > codes[i + 1]) - (codes[i] < codes[i + 1]) == expected
        assert compare_keys([a], [b]) == expected


def _state(t) -> list:
    return sorted((math.isnan(r["k"]), r["k"] if not math.isnan(r["k"]) else 0.0,
                   math.copysign(1.0, r["k"]), r["n"], r["v"]) for r in t.to_arrow().to_pylist())


@pytest.mark.parametrize("typ", [pa.float64(), pa.float32()])
@pytest.mark.parametrize(("engine", "options"), [
    ("deduplicate", {}),
    ("partial-update", {}),
    ("deduplicate", {"write-buffer-size": "1 kb", "write-buffer-spillable": "true"}),
    ("deduplicate", {"changelog-producer": "lookup"}),
])
def test_reads_agree_before_and_after_compaction(catalog: Catalog, typ, engine, options):
    schema = pa.schema([("k", typ), ("n", pa.int32()), ("v", pa.int64())])
    t = catalog.create_table("db.f", schema, primary_keys=["k", "n"],
                             options={"bucket": "1", "merge-engine": engine, **options})
    for i, k in enumerate(KEYS):  # one level-0 file per key: the merge reader sees them all
        t.write_arrow(pa.table({"k": pa.array([k], typ), "n": pa.array([1], pa.int32()), "v": [i]}))
    t.write_arrow(pa.table({"k": pa.array(KEYS * 2, typ), "n": pa.array([1] * 6 + [2] * 6, pa.int32()),
                            "v": list(range(10, 22))}))
    before = _state(t)
    # five distinct keys under n=1 (the NaNs are one key) and five under n=2; the last write wins
    assert len(before) == 10
    assert sorted(r[4] for r in before if r[3] == 1) == [11, 12, 13, 14, 15]
    t.compact(full=True)
    assert _state(t) == before
    t.write_arrow(pa.table({"k": pa.array([-0.0, math.nan], typ), "n": pa.array([1, 1], pa.int32()), "v": [30, 31]}))
    after_update = _state(t)
    t.compact(full=True)
    assert _state(t) == after_update
    # (is NaN, value, sign, n) -> v: -0.0 and NaN were updated, 0.0 was not
    values = {r[:4]: r[4] for r in after_update}
    assert values[(False, 0.0, -1.0, 1)] == 30 and values[(False, 0.0, 1.0, 1)] == 12
    assert values[(True, 0.0, 1.0, 1)] == 31


@pytest.mark.parametrize("typ", [pa.float64(), pa.float32()])
def test_first_row_keeps_the_first_of_each_float_key(catalog: Catalog, typ):
    t = catalog.create_table("db.fr", pa.schema([("k", typ), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "first-row"})
    for i, k in enumerate(KEYS):  # each write compacts level 0 against the older levels
        t.write_arrow(pa.table({"k": pa.array([k], typ), "v": [i]}))
    t.write_arrow(pa.table({"k": pa.array(KEYS, typ), "v": list(range(10, 16))}))
    t.compact(full=True)
    got = sorted((math.isnan(r["k"]), repr(r["k"]), r["v"]) for r in t.to_arrow().to_pylist())
    assert got == sorted([(True, "nan", 0), (False, "0.0", 2), (False, "-0.0", 3), (False, "inf", 4),
                          (False, "-inf", 5)])


def test_nan_payloads_are_one_key(catalog: Catalog):
    # Double.compare sees every NaN as one value whatever its bits; Arrow's hashing does not.
    neg_nan = float(np.array([0xFFF8000000000001], dtype=np.uint64).view(np.float64)[0])
    for engine in ("first-row", "deduplicate"):
        t = catalog.create_table(f"db.n{engine[0]}", pa.schema([("k", pa.float64()), ("v", pa.int64())]),
                                 primary_keys=["k"], options={"bucket": "1", "merge-engine": engine})
        t.write_arrow(pa.table({"k": [neg_nan], "v": [1]}))
        t.write_arrow(pa.table({"k": [math.nan], "v": [2]}))
        t.compact(full=True)
        assert t.to_arrow().column("v").to_pylist() == ([1] if engine == "first-row" else [2])
    # first-row's lookup of older levels matches keys the same way
    merged = pa.table({"k": [math.nan, -0.0, 1.0], "i": [0, 1, 2]})
    known = pa.table({"k": [neg_nan, 0.0]})
    for keys in (["k"], ["k", "i"]):
        kn = known if keys == ["k"] else known.append_column("i", pa.array([0, 1], pa.int64()))
        assert drop_known_keys(merged, kn, keys).column("i").to_pylist() == [1, 2]
