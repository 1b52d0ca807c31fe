"""Shared test data for differential tests: a schema with every type lake_assets supports and rows
with nulls at every level and edge values."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa

UTC = datetime.UTC

ALL_TYPES = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("b", pa.bool_()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(38, 9)),
        ("dec_small", pa.decimal128(5, 2)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("d", pa.date32()),
        ("t", pa.time32("ms")),
        ("ts3", pa.timestamp("ms")),
        ("ts6", pa.timestamp("us")),
        ("ltz", pa.timestamp("us", tz="UTC")),
        ("arr", pa.list_(pa.field("element", pa.int32()))),
        ("arr_s", pa.list_(pa.field("element", pa.string()))),
        ("m", pa.map_(pa.string(), pa.list_(pa.string()))),
        ("m_int", pa.map_(pa.int32(), pa.float64())),
        ("r", pa.struct([("x", pa.int32()), ("y", pa.list_(pa.struct([("z", pa.string()), ("w", pa.int64())])))])),
    ]
)


def all_types_rows(all_null_rows: bool = True) -> list[dict]:
    """Rows for ALL_TYPES: extremes, specials, empty and null containers, nulls inside containers.

    ``all_null_rows`` adds ROW values whose fields are all NULL (distinct from a NULL row); Paimon
    Java 0.9's Parquet reader cannot tell them apart (see test_oracle.py), so comparisons against
    Java reads of Parquet files leave them out.
    """
    rows = [
        dict(
            id=1, b=True, i8=-128, i16=32767, i32=-(2**31), f32=float("nan"), f64=-0.0,
            dec=decimal.Decimal("12345678901234567890123456789.123456789"), dec_small=decimal.Decimal("-999.99"),
            s="héllo 😀 \x00 ünïcode", bin=b"\x00\xff\x10", d=datetime.date(1, 1, 1),
            t=datetime.time(23, 59, 59, 999000), ts3=datetime.datetime(1900, 1, 1, 0, 0, 0, 1000),
            ts6=datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
            ltz=datetime.datetime(2024, 2, 29, 12, 0, 0, 123456, tzinfo=UTC),
            arr=[1, None, 3], arr_s=["", None, "x"], m=[("a", ["x", None]), ("b", None), ("", [])],
            m_int=[(-1, float("inf")), (0, None)],
            r={"x": None, "y": [None, {"z": "q", "w": None}]},
        ),
        dict(id=2, f32=float("inf"), f64=5e-324, arr=[], arr_s=[], m=[], m_int=[], r=None),
        dict(
            id=3, b=False, i8=127, i16=-32768, i32=2**31 - 1, f32=-3.4028234663852886e38, f64=1.7976931348623157e308,
            dec=decimal.Decimal("-0.000000001"), dec_small=decimal.Decimal("0.01"), s="", bin=b"",
            d=datetime.date(9999, 12, 31), t=datetime.time(0, 0),
            ts3=datetime.datetime(2262, 4, 11, 23, 47, 16, 854000),
            ts6=datetime.datetime(1, 1, 1), ltz=datetime.datetime(1970, 1, 1, tzinfo=UTC),
            arr=None, arr_s=None, m=None, m_int=None, r={"x": 7, "y": None},
        ),
        dict(id=4),
        dict(id=-(2**63), f64=float("-inf"), r={"x": 1, "y": []}),
        dict(id=2**63 - 1, f64=float("nan"), f32=-0.0, s="a" * 300),
    ]
    if all_null_rows:
        rows.append(dict(id=5, r={"x": None, "y": None}))
        rows.append(dict(id=6, r={"x": 1, "y": [{"z": None, "w": None}]}))
    return rows


def all_types_table(all_null_rows: bool = True) -> pa.Table:
    """ALL_TYPES rows as an Arrow table."""
    return pa.Table.from_pylist(all_types_rows(all_null_rows), schema=ALL_TYPES)
