"""The vectorized ``mod`` and ``hive`` bucket functions equal a straightforward reference, over
random keys of every type they take.

The reference below is written from Paimon HEAD's Java, one value at a time, independently of
`lake_assets.lsm.bucket_function`: ``Math.floorMod`` from the Java remainder; ``HiveHasher``'s
``31 * h + b`` over signed bytes with int overflow; ``Long.hashCode``; ``Float.floatToIntBits`` /
``Double.doubleToLongBits`` from the IEEE bytes; ``BigDecimal.stripTrailingZeros`` and
``BigDecimal.hashCode`` (``31 * BigInteger.hashCode() + scale``, the BigInteger's hash folding its
big-endian int words) with Python's exact integers.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Context, Decimal
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.lsm.bucket import assign_buckets
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import (
    BigIntType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    SmallIntType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

MASK = 0xFFFFFFFF
EPOCH = dt.date(1970, 1, 1)
EXACT = Context(prec=80)  # the default 28 digits would round DECIMAL(38) values


def java_int(v: int) -> int:
    v &= MASK
    return v - (1 << 32) if v >= 1 << 31 else v


def floor_mod(x: int, n: int) -> int:
    r = abs(x) - (abs(x) // n) * n  # Java's x % n: the sign of x
    r = -r if x < 0 else r
    return r + n if r < 0 else r


def hash_bytes(data: bytes) -> int:
    h = 0
    for b in data:
        h = java_int(31 * h + (b - 256 if b > 127 else b))
    return h


def long_hash(v: int) -> int:
    u = v & 0xFFFFFFFFFFFFFFFF
    return java_int(u ^ (u >> 32))


def decimal_hash(value: Decimal, scale: int) -> int:
    unscaled = int(value.scaleb(scale, context=EXACT))
    if unscaled == 0:
        return 0  # BigDecimal.ZERO
    while scale > 0 and unscaled % 10 == 0:
        unscaled //= 10
        scale -= 1
    magnitude = abs(unscaled)
    words = [(magnitude >> (32 * i)) & MASK for i in reversed(range((magnitude.bit_length() + 31) // 32))]
    h = 0
    for w in words:
        h = java_int(31 * h + w)
    if unscaled < 0:
        h = java_int(-h)
    return java_int(31 * h + scale)


def field_hash(value: Any, t: DataType) -> int:
    if value is None:
        return 0
    if isinstance(t, BooleanType):
        return 1 if value else 0
    if isinstance(t, TinyIntType | SmallIntType | IntType):
        return int(value)
    if isinstance(t, DateType):
        return (value - EPOCH).days
    if isinstance(t, TimeType):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if isinstance(t, BigIntType):
        return long_hash(value)
    if isinstance(t, FloatType):
        if value == 0:
            return 0
        return 0x7FC00000 if math.isnan(value) else java_int(struct.unpack(">I", struct.pack(">f", value))[0])
    if isinstance(t, DoubleType):
        if value == 0:
            return 0
        bits = 0x7FF8000000000000 if math.isnan(value) else struct.unpack(">Q", struct.pack(">d", value))[0]
        return long_hash(bits)
    if isinstance(t, VarCharType):
        return hash_bytes(value.encode("utf-8"))
    if isinstance(t, VarBinaryType):
        return hash_bytes(value)
    if isinstance(t, DecimalType):
        return decimal_hash(value, t.scale)
    raise AssertionError(t)


def hive_bucket(row: tuple[Any, ...], types: list[DataType], n: int) -> int:
    h = 0
    for v, t in zip(row, types, strict=True):
        h = java_int(31 * h + field_hash(v, t))
    return (h & 0x7FFFFFFF) % n


def _decimals(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    small = st.integers(-999, 999).map(lambda u: u * 10 ** min(scale, 3))  # trailing zeros to strip
    return st.one_of(st.integers(-bound, bound), small.filter(lambda u: abs(u) <= bound)).map(
        lambda u: Decimal(u).scaleb(-scale, context=EXACT))


TYPES: list[tuple[DataType, st.SearchStrategy[Any]]] = [
    (BooleanType(), st.booleans()),
    (TinyIntType(), st.integers(-(2**7), 2**7 - 1)),
    (SmallIntType(), st.integers(-(2**15), 2**15 - 1)),
    (IntType(), st.integers(-(2**31), 2**31 - 1)),
    (BigIntType(), st.integers(-(2**63), 2**63 - 1)),
    (FloatType(), st.floats(width=32, allow_nan=True, allow_infinity=True)),
    (DoubleType(), st.floats(allow_nan=True, allow_infinity=True)),
    (DateType(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    (TimeType(3), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (VarCharType(2**31 - 1), st.text(max_size=40)),
    (VarBinaryType(2**31 - 1), st.binary(max_size=40)),
    (DecimalType(9, 2), _decimals(9, 2)),
    (DecimalType(18, 6), _decimals(18, 6)),
    (DecimalType(38, 10), _decimals(38, 10)),
    (DecimalType(38, 0), _decimals(38, 0)),
]


@st.composite
def keyed_rows(draw: st.DrawFn) -> tuple[list[DataType], list[list[Any]]]:
    picks = draw(st.lists(st.integers(0, len(TYPES) - 1), min_size=1, max_size=3))
    rows = draw(st.integers(0, 40))
    types = [TYPES[i][0] for i in picks]
    columns = [draw(st.lists(st.one_of(st.none(), TYPES[i][1]), min_size=rows, max_size=rows)) for i in picks]
    return types, columns


@settings(max_examples=300, deadline=None)
@given(keyed_rows(), st.integers(1, 5000))
def test_hive_equals_the_reference(keys: tuple[list[DataType], list[list[Any]]], n: int) -> None:
    types, columns = keys
    arrays = [pa.array(c, to_arrow(t)) for c, t in zip(columns, types, strict=True)]
    got = assign_buckets(arrays, types, n, "hive").tolist()
    want = [hive_bucket(row, types, n) for row in zip(*columns, strict=True)] if columns else []
    assert got == want


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([IntType(), BigIntType()]), st.data(), st.integers(1, 2**31 - 1))
def test_mod_equals_the_reference(t: DataType, data: st.DataObject, n: int) -> None:
    bound = 2**31 if isinstance(t, IntType) else 2**63
    values = data.draw(st.lists(st.one_of(st.none(), st.integers(-bound, bound - 1)), max_size=50))
    got = assign_buckets([pa.array(values, to_arrow(t))], [t], n, "mod").tolist()
    assert got == [0 if v is None else floor_mod(v, n) for v in values]
