"""The range-bitmap file index (Paimon 1.x): our writer's bytes read back by our reader, and the
rows each term gets checked against lake_assets' own row filter over the same values; the layout
itself is checked against pypaimon-rust (tests/interop/test_range_bitmap_interop.py) and, without
it, against its stored payloads here (tests/data/range_bitmap_rust_vectors.json)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyroaring import BitMap

from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.range_bitmap_index import RangeBitmapIndex, literal_keys
from lake_assets.formats.range_bitmap_index_write import RangeBitmapIndexBuilder
from lake_assets.formats.range_bitmap_keys import unsupported_reason
from lake_assets.predicate import Predicate
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.types import from_arrow

VECTORS = Path(__file__).parents[1] / "data" / "range_bitmap_rust_vectors.json"
OPS = ("=", "!=", "<", "<=", ">", ">=")


def _values(kind: str, n: int, seed: int) -> pa.Array:
    """``n`` values of a column type with nulls, repeats and the edges of its order."""
    rng = random.Random(seed)
    pick: list[Any]
    if kind == "int8":
        pick = [-128, 127, 0, -1, 1, 5, 17]
        typ: pa.DataType = pa.int8()
    elif kind == "int16":
        pick, typ = [-(2**15), 2**15 - 1, 0, -300, 300], pa.int16()
    elif kind == "int32":
        pick, typ = [-(2**31), 2**31 - 1, 0, *range(-50, 50, 7)], pa.int32()
    elif kind == "int64":
        pick, typ = [-(2**63), 2**63 - 1, 0, *range(-10**12, 10**12, 10**11)], pa.int64()
    elif kind == "float32":
        pick, typ = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.5, -2.25, 3e38], pa.float32()
    elif kind == "float64":
        pick, typ = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e-300, -7.5, 2.0], pa.float64()
    elif kind == "bool":
        pick, typ = [True, False], pa.bool_()
    elif kind == "string":
        pick = ["", "a", "ab", "b", "\u00e9", "\U0001f600", "zz" * 40, "A", "a\x00"]
        typ = pa.string()
    elif kind == "date":
        pick, typ = [dt.date(1970, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(2000, 2, 29)], pa.date32()
    elif kind == "time":
        pick, typ = [dt.time(0), dt.time(23, 59, 59, 999000), dt.time(12, 0, 0, 1000)], pa.time32("ms")
    elif kind == "decimal":
        pick, typ = [Decimal("-99999999.99"), Decimal("0.00"), Decimal("12.34"), Decimal("99999999.99")], \
            pa.decimal128(10, 2)
    elif kind == "ts3":
        pick = [dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(2000, 1, 1),
                dt.datetime(2000, 1, 1, 0, 0, 0, 1000)]
        typ = pa.timestamp("ms")
    else:  # ts6 (with a time zone: TIMESTAMP_LTZ)
        pick = [dt.datetime(1969, 12, 31, 23, 59, 59, 999999, dt.UTC), dt.datetime(2000, 1, 1, tzinfo=dt.UTC),
                dt.datetime(2000, 1, 1, 0, 0, 0, 1, dt.UTC)]
        typ = pa.timestamp("us", tz="UTC")
    out = [None if rng.random() < 0.15 else rng.choice(pick) for _ in range(n)]
    return pa.array(out, typ)


KINDS = ("int8", "int16", "int32", "int64", "float32", "float64", "bool", "string", "date", "time", "decimal",
         "ts3", "ts6")


def _build(values: pa.Array, batch: int, chunk_size: int | None = None) -> bytes:
    b = RangeBitmapIndexBuilder(from_arrow(values.type), "c", chunk_size)
    for start in range(0, len(values), batch):
        b.add(values.slice(start, batch))
    return b.finish()


def _expected(values: pa.Array, op: str, literal: Any) -> list[int]:
    """The rows lake_assets' row filter keeps for ``c op literal``."""
    pred = Predicate.of([("c", op, literal)] if op not in ("is null", "is not null") else [("c", op)])
    assert pred is not None
    table = pa.table({"c": values, "row": pa.array(range(len(values)), pa.int32())})
    return pred.filter_table(table).column("row").to_pylist()


def _check_every_term(payload: bytes, values: pa.Array) -> None:
    dtype = from_arrow(values.type)
    index = RangeBitmapIndex(payload, dtype)
    assert index.rows == len(values)
    present = [v for v in values.to_pylist() if v is not None]
    literals = list(dict.fromkeys(present))[:12]
    for op in ("is null", "is not null"):
        assert sorted(index.rows_matching(op, [])) == _expected(values, op, None), op
    for literal in literals:
        keys = literal_keys(pa.array([literal], values.type), dtype)
        for op in OPS:
            assert sorted(index.rows_matching(op, keys)) == _expected(values, op, literal), (op, literal)
    for op in ("in", "not in"):
        chosen = literals[::3]
        keys = literal_keys(pa.array(chosen, values.type), dtype)
        assert sorted(index.rows_matching(op, keys)) == _expected(values, op, chosen), (op, chosen)


@pytest.mark.parametrize("kind", KINDS)
def test_every_term_gets_the_rows_our_filter_keeps(kind: str) -> None:
    values = _values(kind, 700, KINDS.index(kind))
    payload = _build(values, 700)
    _check_every_term(payload, values)
    # batches of any size give the same bytes (Java indexes row by row)
    assert _build(values, 1) == payload
    assert _build(values, 64) == payload


@pytest.mark.parametrize("chunk_size", [0, 1, 9, 40, 100])
@pytest.mark.parametrize("kind", ["int32", "string", "float64"])
def test_small_chunks_are_found_across_chunk_boundaries(kind: str, chunk_size: int) -> None:
    # many distinct values, so that the dictionary has many chunks: lookups hit chunk heads, keys
    # inside chunks and gaps between them
    rng = random.Random(chunk_size)
    if kind == "int32":
        values = pa.array([None if i % 13 == 0 else rng.randrange(-500, 500) * 2 for i in range(900)], pa.int32())
    elif kind == "float64":
        values = pa.array([None if i % 13 == 0 else rng.randrange(-500, 500) / 4 for i in range(900)])
    else:
        values = pa.array([None if i % 13 == 0 else "k" * rng.randrange(0, 30) + str(rng.randrange(300))
                           for i in range(900)])
    payload = _build(values, 128, chunk_size)
    _check_every_term(payload, values)
    dtype = from_arrow(values.type)
    index = RangeBitmapIndex(payload, dtype)
    # and values between the present ones, below the least and above the greatest
    present = sorted({v for v in values.to_pylist() if v is not None})
    if kind == "string":
        probes = ["", "k", "kz", "~", present[0] + "\x00"]
    else:
        probes = [present[0] - 1, present[-1] + 1, present[len(present) // 2] + 1]
    for literal in probes:
        keys = literal_keys(pa.array([literal], values.type), dtype)
        for op in OPS:
            assert sorted(index.rows_matching(op, keys)) == _expected(values, op, literal), (op, literal)


def test_files_without_values_and_of_one_value() -> None:
    nulls = pa.array([None] * 5, pa.int32())
    payload = _build(nulls, 2)
    index = RangeBitmapIndex(payload, from_arrow(nulls.type))
    assert (index.rows, index.cardinality) == (5, 0)
    assert sorted(index.rows_matching("is null", [])) == [0, 1, 2, 3, 4]
    for op in (*OPS, "is not null"):
        assert not index.rows_matching(op, [0]), op
    # Java sizes the slices of a file without values by max = -1: 64 empty slices
    bsi_at = 4 + struct.unpack_from(">i", payload)[0] + struct.unpack_from(">i", payload, 4 + 9)[0]
    assert payload[bsi_at + 4 + 1] == 64
    one = pa.array([7, None, 7], pa.int32())
    index = RangeBitmapIndex(_build(one, 3), from_arrow(one.type))
    assert sorted(index.rows_matching("=", [7])) == [0, 2]
    assert sorted(index.rows_matching("!=", [7])) == []
    assert sorted(index.rows_matching("<", [8])) == [0, 2]
    assert not index.rows_matching(">", [7])


def test_the_builder_holds_distinct_values_not_rows() -> None:
    # a clustered column of a few values: runs in bitmaps, a few hundred bytes for 2M rows
    b = RangeBitmapIndexBuilder(from_arrow(pa.string()), "c")
    for k in range(32):
        b.add(pa.array([f"value-{k // 8}"] * 65536))
    assert b.held_bytes() < 16_000
    payload = b.finish()
    index = RangeBitmapIndex(payload, from_arrow(pa.string()))
    assert index.rows_matching("=", [b"value-1"]) == BitMap(range(8 * 65536, 16 * 65536))
    # values that never repeat: the distinct values (as Java's TreeMap holds them) with their order, and
    # 8 bytes of ids a row
    b = RangeBitmapIndexBuilder(from_arrow(pa.int64()), "c")
    for k in range(8):
        b.add(pa.array(range(k * 65536, (k + 1) * 65536), pa.int64()))
    assert b.held_bytes() <= (8 + 8 + 8) * 8 * 65536


@pytest.mark.parametrize("typ", [pa.binary(), pa.timestamp("ns"), pa.decimal128(20, 2), pa.list_(pa.int32())])
def test_types_java_refuses_are_refused_by_name(typ: pa.DataType) -> None:
    dtype = from_arrow(typ)
    assert unsupported_reason(dtype) is not None
    with pytest.raises(UnsupportedFeatureError, match="range-bitmap"):
        RangeBitmapIndexBuilder(dtype, "c")
    with pytest.raises(UnsupportedFeatureError, match="range-bitmap"):
        RangeBitmapIndex(b"\x00" * 16, dtype)


def test_bad_payloads_raise_invalid_data() -> None:
    values = pa.array([1, 2, None, 3, 2], pa.int32())
    payload = _build(values, 5)
    dtype = from_arrow(values.type)
    newer = payload[:4] + b"\x02" + payload[5:]
    for bad in (payload[:3], payload[:20], newer, b"\x7f\xff\xff\xff" + payload[4:]):
        with pytest.raises(InvalidDataError):
            RangeBitmapIndex(bad, dtype).rows_matching("=", [2])
    # a truncated dictionary or bit-sliced index fails when a term needs it, not before
    cut = RangeBitmapIndex(payload[:-6], dtype)
    with pytest.raises(InvalidDataError):
        cut.rows_matching("=", [2])


def test_stored_rust_vectors() -> None:
    """pypaimon-rust 0.4's payloads (written by tests/interop/test_range_bitmap_interop.py's
    `test_stored_vectors_are_rusts`): ours are the same bytes, and read back to their values."""
    stored = json.loads(VECTORS.read_text())
    assert len(stored["indexes"]) >= 10
    for case in stored["indexes"]:
        typ = to_arrow(_paimon_type(case["type"]))
        values = _decode(case["values"], typ)
        payload = base64.b64decode(case["payload"])
        assert _build(values, 17, case["chunk_size"]) == payload, case["column"]
        _check_every_term(payload, values)


def _paimon_type(sql: str) -> Any:
    from lake_assets.spec.type_parser import parse_type

    return parse_type(sql)


def _decode(values: list[Any], typ: pa.DataType) -> pa.Array:
    """JSON values of the stored vectors back to Arrow: floats as their repr, times as ISO text."""
    if pa.types.is_floating(typ):
        return pa.array([None if v is None else float(v) for v in values], typ)
    if pa.types.is_decimal(typ):
        return pa.array([None if v is None else Decimal(v) for v in values], typ)
    if pa.types.is_date(typ):
        return pa.array([None if v is None else dt.date.fromisoformat(v) for v in values], typ)
    if pa.types.is_timestamp(typ):
        return pa.array([None if v is None else dt.datetime.fromisoformat(v) for v in values], typ)
    return pa.array(values, typ)
