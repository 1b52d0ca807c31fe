"""The precompiled BinaryRow encoders write the bytes (and raise the errors) of the former
type-dispatching encoder (`binary_row_reference`), on every supported type, nulls included."""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.errors import LakeError
from lake_assets.spec.binary_row import encode_row, serialize_row
from lake_assets.spec.binary_row_encoder import RowEncoder, row_encoder
from lake_assets.spec.types import (
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarCharType,
    bytes_type,
    string_type,
)
from tests.unit.binary_row_reference import reference_encode_row, reference_serialize_row

UTC = dt.UTC

# Each type with values covering its edges: bounds, zero and signs, NaN / infinities / -0.0,
# compact and non-compact decimals and timestamps, strings and binaries of up to 7 bytes (inline)
# and longer (variable part), multi-byte UTF-8, naive and aware datetimes.
CASES: list[tuple[DataType, list[Any]]] = [
    (BooleanType(), [True, False, np.bool_(True)]),
    (TinyIntType(), [0, -128, 127, np.int8(-5)]),
    (SmallIntType(), [0, -(2**15), 2**15 - 1, 300]),
    (IntType(), [0, -(2**31), 2**31 - 1, np.int32(7)]),
    (BigIntType(), [0, -(2**63), 2**63 - 1, np.int64(-42), 1_000_001]),
    (FloatType(), [0.0, -0.0, 1.5, -3.25, math.inf, -math.inf, math.nan, 3, np.float32(0.1)]),
    (DoubleType(), [0.0, -0.0, 0.1, -1e300, math.inf, -math.inf, math.nan, 7, np.float64(2.5)]),
    (DecimalType(10, 2), [Decimal("0"), Decimal("-12345678.91"), Decimal("1.005"), 42]),
    (DecimalType(18, 4), [Decimal("99999999999999.9999"), Decimal("-0.0001")]),
    (DecimalType(38, 10), [Decimal("1234567890123456789012345678.0123456789"), Decimal("-1"), Decimal("0"),
                           Decimal(-(2**63)), 10**20]),
    (DecimalType(20, 0), [Decimal(-(2**64)), Decimal(2**64 - 1), Decimal(-(2**63))]),
    (DateType(), [dt.date(1970, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 12, 31)]),
    (TimeType(), [dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(12, 30, 1, 1500)]),
    (TimestampType(3), [dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
                        dt.datetime(2024, 2, 29, 12, 0, 0, 123456)]),
    (TimestampType(6), [dt.datetime(2024, 1, 1, 1, 2, 3, 456789), dt.datetime(1, 1, 1),
                        dt.datetime(1969, 12, 31, 23, 59, 59, 999999)]),
    (TimestampType(9), [dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]),
    (LocalZonedTimestampType(3), [dt.datetime(2024, 1, 1, tzinfo=UTC),
                                  dt.datetime(2024, 1, 1, 5, tzinfo=dt.timezone(dt.timedelta(hours=5)))]),
    (LocalZonedTimestampType(6), [dt.datetime(2000, 6, 1, 0, 0, 0, 1, tzinfo=UTC), dt.datetime(2000, 6, 1)]),
    (string_type(), ["", "a", "1234567", "12345678", "2024-01-01", "é", "日本語", "日本語テキスト", "x" * 300]),
    (CharType(10), ["abc", "abcdefghij"]),
    (VarCharType(20), ["open", "a long enough string"]),
    (bytes_type(), [b"", b"\x00", b"1234567", b"12345678", bytearray(b"\xff" * 9), memoryview(b"mv")]),
    (BinaryType(4), [b"\x01\x02\x03\x04"]),
]
TYPES = [t for t, _ in CASES]


def _same(values: list[Any], types: list[DataType]) -> None:
    assert encode_row(values, types) == reference_encode_row(values, types)
    assert serialize_row(values, types) == reference_serialize_row(values, types)
    fresh = RowEncoder(types)  # not the cached one: building must not depend on earlier use
    assert fresh.serialize(values) == reference_serialize_row(values, types)


@pytest.mark.parametrize(("t", "values"), CASES, ids=[str(t) for t in TYPES])
def test_every_value_of_every_type_encodes_as_before(t: DataType, values: list[Any]) -> None:
    for v in [*values, None]:
        _same([v], [t])
        # the value among others: its slot and variable offset depend on what comes before it
        _same([None, v, "12345678", v, Decimal("1.5")], [t, t, string_type(), t, DecimalType(30, 2)])


def test_a_row_of_every_type_with_and_without_nulls_encodes_as_before() -> None:
    first = [values[0] for _, values in CASES]
    last = [values[-1] for _, values in CASES]
    _same(first, TYPES)
    _same(last, TYPES)
    _same([None] * len(TYPES), TYPES)  # null high-precision values still reserve their area
    _same([v if i % 2 else None for i, v in enumerate(last)], TYPES)
    _same([], [])


def test_rows_wider_than_one_header_word_encode_as_before() -> None:
    # 56 fields fill the first 8 header bytes' null bits; 57 and more take a second word
    for arity in (55, 56, 57, 64, 120, 121):
        types: list[DataType] = [BigIntType() if i % 3 else string_type() for i in range(arity)]
        values = [None if i % 5 == 0 else (i if i % 3 else f"v{i}" * i) for i in range(arity)]
        _same(values, types)


# (type, bad value) pairs: the errors must be the same class with the same message
BAD: list[tuple[DataType, Any]] = [
    (BooleanType(), 1), (IntType(), True), (IntType(), 2**31), (TinyIntType(), "1"), (BigIntType(), 1.0),
    (FloatType(), True), (FloatType(), 1e300), (FloatType(), "x"), (DoubleType(), 10**400),
    (DateType(), dt.datetime(2024, 1, 1)), (DateType(), "2024-01-01"), (TimeType(), 5),
    (DecimalType(5, 2), Decimal("1000.00")), (DecimalType(5, 2), 1.5), (DecimalType(30, 2), Decimal("NaN")),
    (DecimalType(30, 2), True), (TimestampType(6), dt.date(2024, 1, 1)), (string_type(), b"x"),
    (string_type(), "\ud800"), (bytes_type(), "x"), (ArrayType(IntType()), [1]),
]


@pytest.mark.parametrize(("t", "v"), BAD, ids=[f"{t}-{v!r}" for t, v in BAD])
def test_bad_values_raise_the_errors_they_raised_before(t: DataType, v: Any) -> None:
    with pytest.raises(LakeError) as expected:
        reference_encode_row([1, v], [IntType(), t])
    with pytest.raises(type(expected.value), match="^" + re.escape(str(expected.value)) + "$"):
        encode_row([1, v], [IntType(), t])


def test_nested_types_encode_nulls_and_refuse_values_as_before() -> None:
    t = ArrayType(IntType())
    _same([None, 5], [t, IntType()])
    with pytest.raises(LakeError, match="nested values in BinaryRow are not supported"):
        encode_row([[1]], [t])


def test_arity_mismatch_is_refused_as_before() -> None:
    with pytest.raises(LakeError, match=r"^Row has 1 values but 2 types$"):
        encode_row([1], [IntType(), IntType()])


def test_encoders_are_cached_per_row_type() -> None:
    types = [BigIntType(nullable=False), string_type()]
    assert row_encoder(types) is row_encoder(tuple(types))
    assert row_encoder(types) is not row_encoder([BigIntType(), string_type()])  # nullability differs


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.binary(max_size=12), st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.dates(), st.datetimes(), st.times(),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(TYPES), _VALUES), max_size=8))
def test_random_rows_encode_or_fail_exactly_as_before(fields: list[tuple[DataType, Any]]) -> None:
    types = [t for t, _ in fields]
    values = [v for _, v in fields]
    try:
        expected = reference_serialize_row(values, types)
    except LakeError as exc:
        with pytest.raises(type(exc)) as got:
            serialize_row(values, types)
        assert str(got.value) == str(exc)
        return
    assert serialize_row(values, types) == expected
