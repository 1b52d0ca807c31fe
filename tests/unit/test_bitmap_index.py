"""Bitmap file indexes (``formats/bitmap_index.py``, ``formats/java_hash_map.py``, docs/format.md §7.6)
without a JVM: payloads Paimon Java 0.9 wrote (tests/data/bitmap_index_java_vectors.json, checked
against Java by tests/differential/test_bitmap_index_java.py) equal ours for the same values; any
values, nulls and types round-trip through our writer and reader; the order of values is the one
a model of Java's HashMap gives; the hashes behind that order are Java's."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.bitmap_index import BitmapIndex, BitmapIndexBuilder, index_keys, write_bitmap_index
from lake_assets.formats.fast_hash import bytes_of
from lake_assets.formats.java_hash_map import binary_string_hash_codes, hash_map_order, string_hash_code
from lake_assets.spec.types import parse_type, to_arrow
from tests.java.oracle_values import decode_values

VECTORS = json.loads((Path(__file__).parents[1] / "data" / "bitmap_index_java_vectors.json").read_text())["bitmaps"]


@pytest.mark.parametrize("case", VECTORS, ids=lambda c: c["arrow_type"])
def test_javas_payloads_are_ours_and_read_back(case: dict[str, Any]) -> None:
    dt = parse_type(case["paimon_type"])
    values = decode_values(case["values"], to_arrow(dt))
    theirs = base64.b64decode(case["payload"])
    builder = BitmapIndexBuilder(dt)
    builder.add(values.slice(0, len(values) // 2))  # chunk by chunk, as a file is written
    builder.add(values.slice(len(values) // 2))
    assert builder.finish() == theirs
    _assert_rows(BitmapIndex.parse(theirs, dt), values, dt)


def _assert_rows(index: BitmapIndex, values: pa.Array, dt: Any) -> None:
    """Every distinct value (and null) maps to exactly the rows holding it; absent values to none."""
    keys = index_keys(values, dt).to_pylist()
    assert index.row_count == len(values)
    for v in set(keys):
        literal = values.take([keys.index(v)])
        assert list(index.rows_in(literal)) == [i for i, k in enumerate(keys) if k == v]
    if None not in keys:
        assert not index.rows_in(pa.nulls(1, values.type))


_POOLS = {
    "INT": st.integers(-(2**31), 2**31 - 1),
    "BIGINT": st.integers(-(2**63), 2**63 - 1),
    "TINYINT": st.integers(-128, 127),
    "SMALLINT": st.integers(-(2**15), 2**15 - 1),
    "DOUBLE": st.floats(allow_nan=True, allow_infinity=True),
    "FLOAT": st.floats(width=32, allow_nan=True, allow_infinity=True),
    "STRING": st.text(max_size=12),
    "DATE": st.integers(-50_000, 50_000),
    "TIMESTAMP(6)": st.integers(-(2**55), 2**55),
    "TIMESTAMP(3)": st.integers(-(2**45), 2**45),
}


@settings(max_examples=60, deadline=None)
@given(data=st.data(), type_name=st.sampled_from(sorted(_POOLS)))
def test_any_values_and_nulls_round_trip(data: st.DataObject, type_name: str) -> None:
    dt = parse_type(type_name)
    pool = data.draw(st.lists(_POOLS[type_name], min_size=1, max_size=30))
    picks = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(pool)), max_size=300))
    arrow_type = to_arrow(dt)
    if type_name.startswith("TIMESTAMP") or type_name == "DATE":
        values = pa.array(picks, pa.int64() if type_name != "DATE" else pa.int32()).cast(arrow_type)
    else:
        values = pa.array(picks, arrow_type)
    builder = BitmapIndexBuilder(dt)
    builder.add(values)
    payload = builder.finish()
    index = BitmapIndex.parse(payload, dt)
    _assert_rows(index, values, dt)
    # the header: version 1, rows, distinct non-null values, whether a null exists
    _, rows, distinct, has_null = struct.unpack_from(">BiiB", payload)
    keys = index_keys(values, dt)
    assert (rows, distinct, has_null) == (len(values), len(pc_unique(keys.drop_null())), keys.null_count > 0)


def pc_unique(arr: pa.Array) -> pa.Array:
    return arr.unique()


class JavaHashMapModel:
    """java.util.HashMap's bins as Python lists, with put / computeIfAbsent as JDK 17 has them
    (no trees: `treeified` records that a bin would have become one)."""

    def __init__(self) -> None:
        self.bins: list[list[tuple[int, int]]] | None = None
        self.size = 0
        self.treeified = False

    def _resize(self) -> None:
        capacity = 16 if self.bins is None else 2 * len(self.bins)
        old = self.bins or []
        self.bins = [[] for _ in range(capacity)]
        for b in old:  # a split keeps each bin's relative order
            for key, spread in b:
                self.bins[spread & (capacity - 1)].append((key, spread))

    def _spread(self, h: int) -> int:
        h &= 0xFFFFFFFF
        return h ^ (h >> 16)

    def _treeify_bin(self) -> None:
        assert self.bins is not None
        if len(self.bins) < 64:
            self._resize()
        else:
            self.treeified = True

    def compute_if_absent(self, key: int, h: int) -> None:
        if self.bins is None or self.size > 0.75 * len(self.bins):
            self._resize()
        assert self.bins is not None
        spread = self._spread(h)
        b = self.bins[spread & (len(self.bins) - 1)]
        if any(k == key for k, _ in b):
            return
        existing = len(b)
        b.insert(0, (key, spread))
        if existing >= 7:
            self._treeify_bin()
        self.size += 1

    def put(self, key: int, h: int) -> None:
        if self.bins is None:
            self._resize()
        assert self.bins is not None
        spread = self._spread(h)
        b = self.bins[spread & (len(self.bins) - 1)]
        if any(k == key for k, _ in b):
            return
        existing = len(b)
        b.append((key, spread))
        if existing >= 8:
            self._treeify_bin()
        self.size += 1
        if self.size > 0.75 * len(self.bins):
            self._resize()

    def order(self) -> list[int]:
        return [k for b in self.bins or [] for k, _ in b]


# hash codes that collide: small multiples of powers of two share low bits
_HASHES = st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(0, 40).map(lambda i: i * 16),
                    st.integers(0, 40).map(lambda i: i * 64), st.integers(0, 300))


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(_HASHES, max_size=400), compute=st.booleans())
def test_hash_map_order_is_javas(calls: list[int], compute: bool) -> None:
    model = JavaHashMapModel()
    for h in calls:  # the key is its own hash code (Integer)
        (model.compute_if_absent if compute else model.put)(h, h)
    distinct = list(dict.fromkeys(calls))
    last_new = max((calls.index(k) for k in distinct), default=-1)
    order, exact = hash_map_order(np.array(distinct, np.int64).astype(np.int32), compute_if_absent=compute,
                                  called_after_last=last_new < len(calls) - 1)
    if model.treeified:
        assert not exact
    else:
        assert exact
        assert [distinct[i] for i in order.tolist()] == model.order()


@settings(max_examples=100, deadline=None)
@given(pool=st.lists(st.integers(-(2**31), 2**31 - 1) | st.integers(0, 50).map(lambda i: i * 32), min_size=1,
                     max_size=80),
       picks=st.lists(st.integers(0, 79), max_size=300))
def test_values_are_laid_out_in_javas_hash_map_order(pool: list[int], picks: list[int]) -> None:
    rows = [pool[i % len(pool)] for i in picks]
    model = JavaHashMapModel()
    for v in rows:
        model.compute_if_absent(v, v)
    payload, exact = write_bitmap_index(index_keys(pa.array(rows, pa.int32()), parse_type("INT")), parse_type("INT"))
    assert exact == (not model.treeified)
    if exact:
        assert BitmapIndex.parse(payload, parse_type("INT")).keys.to_pylist() == model.order()


def _murmur_reference(data: bytes) -> int:
    """MurmurHashUtils.hashBytes (seed 42) written out byte by byte, as a signed int32."""
    def mix(h: int, k: int) -> int:
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * 0x1B873593) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        return (h * 5 + 0xE6546B64) & 0xFFFFFFFF

    h = 42
    aligned = len(data) - len(data) % 4
    for i in range(0, aligned, 4):
        h = mix(h, int.from_bytes(data[i: i + 4], "little"))
    for b in data[aligned:]:
        h = mix(h, (b - 256 if b >= 128 else b) & 0xFFFFFFFF)
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.binary(max_size=40), max_size=30))
def test_binary_string_hash_codes_are_murmur_of_the_bytes(values: list[bytes]) -> None:
    data, starts, lengths = bytes_of(pa.array(values, pa.binary()))
    assert binary_string_hash_codes(data, starts, lengths).tolist() == [_murmur_reference(v) for v in values]


def test_string_hash_code_is_javas() -> None:
    # values of java.lang.String.hashCode
    assert string_hash_code("") == 0
    assert string_hash_code("hello") == 99162322
    assert string_hash_code("bloom-filter") == int(np.int32(np.uint32(sum(
        ord(c) * 31 ** (len("bloom-filter") - 1 - i) for i, c in enumerate("bloom-filter")) & 0xFFFFFFFF)))
    assert string_hash_code("😀") == 0xD83D * 31 + 0xDE00


@pytest.mark.parametrize(("type_name", "why"), [("BOOLEAN", r"no BOOLEAN layout.*1\.1\+"),
                                                ("BYTES", "no Paimon version"), ("DECIMAL(10, 2)", "does not support"),
                                                ("ARRAY<INT>", "does not support")])
def test_types_java_09_cannot_key_are_refused(type_name: str, why: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=why):
        BitmapIndexBuilder(parse_type(type_name))
    with pytest.raises(UnsupportedFeatureError, match=why):
        BitmapIndex.parse(b"\x01" + bytes(9), parse_type(type_name))


def test_other_versions_and_truncated_payloads_are_not_read() -> None:
    dt = parse_type("INT")
    builder = BitmapIndexBuilder(dt)
    builder.add(pa.array([1, 2, 1, None, None], pa.int32()))
    payload = builder.finish()
    with pytest.raises(UnsupportedFeatureError, match="version 3"):
        BitmapIndex.parse(b"\x03" + payload[1:], dt)
    with pytest.raises(InvalidDataError, match="truncated"):
        BitmapIndex.parse(payload[:12], dt)
    with pytest.raises(InvalidDataError, match="empty"):
        BitmapIndex.parse(b"", dt)


@settings(max_examples=80, deadline=None)
@given(groups=st.lists(st.lists(st.integers(0, 300_000), min_size=2, max_size=60, unique=True)
                       | st.integers(0, 200_000).flatmap(lambda a: st.integers(2, 5000).map(
                           lambda n: list(range(a, a + n)))), min_size=1, max_size=12))
def test_bitmaps_laid_out_at_once_are_roarings_serialization(groups: list[list[int]]) -> None:
    """The vectorized layout of array containers equals pyroaring's run-optimized serialization
    (which the differential tests check against Java) for rows in one or many 65536-row blocks,
    sparse or in runs (those take pyroaring's path)."""
    from pyroaring import BitMap

    from lake_assets.formats.bitmap_index_layout import bitmaps

    grouped = np.concatenate([np.sort(np.array(g, np.int64)) for g in groups])
    counts = np.array([len(g) for g in groups], np.int64)
    starts = np.cumsum(counts) - counts
    order = np.arange(len(groups))[::-1]  # groups are written in any order
    body, sizes = bitmaps(grouped, starts[order], counts[order])
    expected = []
    for i in order.tolist():
        bm = BitMap(sorted(groups[i]))
        bm.run_optimize()
        expected.append(bytes(bm.serialize()))
    assert sizes.tolist() == [len(e) for e in expected]
    assert body == b"".join(expected)
