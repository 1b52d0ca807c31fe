"""Partition directory names format and parse back for every partition type, in both
``partition.legacy-name`` modes, over generated values.

What a name keeps is written here from Java's source, independently of the formatter: a name is
the value's text (``toString`` or cast to STRING) with PartitionPathUtils' escapes, so parsing it
gives the value back except where the text itself drops something:

* TIME(p) cast to STRING keeps p digits of the milliseconds (``formatTimestampMillis``);
* null and blank (``Character.isWhitespace`` only) texts are ``partition.default-name``;
* FLOAT is ``Float.toString`` of the 32-bit value: it reads back as the same 32 bits.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.spec.data_types import (
    BigIntType,
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
    VarBinaryType,
    VarCharType,
)
from lake_assets.spec.partition import escape_path_name, parse_partition_path, partition_path

DEFAULT = "__DEFAULT_PARTITION__"
# Character.isWhitespace (java.lang.Character), written out: space separators but the no-break
# ones, line/paragraph separators, and \t \n \u000B \f \r \u001C..\u001F
JAVA_WHITESPACE = set("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2028\u2029\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B) if c != 0x2007}


def _float32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _reads_back(text: str, x: float) -> bool:
    try:
        return _float32(float(text)) == x
    except OverflowError:  # above the largest float
        return False


def _timestamps(precision: int) -> st.SearchStrategy[dt.datetime]:
    unit = 10 ** (6 - min(precision, 6))
    return st.builds(lambda d, us: d.replace(microsecond=us - us % unit),
                     st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)), st.integers(0, 999_999))


def _times() -> st.SearchStrategy[dt.time]:
    # TIME values are millis of the day
    return st.integers(0, 86_399_999).map(lambda ms: (dt.datetime(2000, 1, 1) + dt.timedelta(milliseconds=ms)).time())


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
TYPES: list[tuple[str, DataType, st.SearchStrategy[object]]] = [
    ("boolean", BooleanType(), st.booleans()),
    ("tinyint", TinyIntType(), st.integers(-128, 127)),
    ("smallint", SmallIntType(), st.integers(-(2**15), 2**15 - 1)),
    ("int", IntType(), st.integers(-(2**31), 2**31 - 1)),
    ("bigint", BigIntType(), st.integers(-(2**63), 2**63 - 1)),
    ("float", FloatType(), st.floats(width=32)),
    ("double", DoubleType(), st.floats()),
    ("decimal", DecimalType(20, 4), st.decimals(min_value=-(10**16), max_value=10**16, places=4,
                                                allow_nan=False, allow_infinity=False)),
    ("date", DateType(), st.dates()),
    ("time0", TimeType(0), _times()),
    ("time2", TimeType(2), _times()),
    ("time3", TimeType(3), _times()),
    ("timestamp0", TimestampType(0), _timestamps(0)),
    ("timestamp3", TimestampType(3), _timestamps(3)),
    ("timestamp6", TimestampType(6), _timestamps(6)),
    ("ltz3", LocalZonedTimestampType(3), _timestamps(3).map(lambda v: v.replace(tzinfo=dt.UTC))),
    ("char", CharType(5), _TEXT),
    ("varchar", VarCharType(2147483647), _TEXT),
    ("varbinary", VarBinaryType(20), _TEXT.map(lambda s: s.encode("utf-8"))),
]


def expected_back(value: object, dtype: DataType, legacy: bool) -> object:
    """What parsing the name of ``value`` gives, from the rules in the module docs."""
    if value is None:
        return None
    if isinstance(value, str) and all(c in JAVA_WHITESPACE for c in value):
        return None
    if isinstance(value, bytes) and all(c in JAVA_WHITESPACE for c in value.decode("utf-8")):
        return None
    if isinstance(dtype, TimeType) and not legacy:
        unit = 10 ** (3 - min(dtype.precision, 3)) * 1000  # microseconds the name keeps
        assert isinstance(value, dt.time)
        return value.replace(microsecond=value.microsecond - value.microsecond % unit)
    return value


def _same(got: object, want: object, dtype: DataType) -> bool:
    if isinstance(dtype, (FloatType, DoubleType)) and want is not None:
        assert isinstance(got, float) and isinstance(want, float)
        if math.isnan(want):
            return math.isnan(got)
        pack = "<f" if isinstance(dtype, FloatType) else "<d"
        return struct.pack(pack, got) == struct.pack(pack, want)  # the sign of zero too
    if isinstance(want, decimal.Decimal):
        return isinstance(got, decimal.Decimal) and got == want
    return bool(got == want)


# TIMESTAMP WITH LOCAL TIME ZONE has no name with partition.legacy-name = false (it is refused:
# tests/unit/test_partition_names.py)
CASES = [pytest.param(dtype, values, legacy, id=f"{kind}-{'legacy' if legacy else 'cast'}")
         for legacy in (True, False) for kind, dtype, values in TYPES
         if legacy or not isinstance(dtype, LocalZonedTimestampType)]


@pytest.mark.parametrize(("dtype", "values", "legacy"), CASES)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_names_parse_back(dtype: DataType, values: st.SearchStrategy[object], legacy: bool,
                          data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(["k", "dt", "a=b/c", "x%y"]))
    value = data.draw(st.one_of(st.none(), values))
    if isinstance(dtype, FloatType) and value is not None:
        value = _float32(value)  # type: ignore[arg-type]
    other = data.draw(st.one_of(st.none(), _TEXT))
    keys, types = [key, "s"], [dtype, VarCharType(10)]
    path = partition_path(keys, [value, other], types, DEFAULT, legacy_name=legacy)
    # one directory level per key, whatever the texts hold
    assert path.count("/") == 1 and path.startswith(escape_path_name(key) + "=")
    got, got_other = parse_partition_path(path, keys, types, DEFAULT, legacy_name=legacy)
    assert _same(got, expected_back(value, dtype, legacy), dtype), (path, value, got)
    assert got_other == expected_back(other, VarCharType(10), legacy)


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float_names_are_the_shortest_text_of_the_32_bit_value(x: float) -> None:
    """Float.toString (JDK 19 and later) gives the fewest digits that read back as the same float:
    never more than float32 needs, unlike the widened double's text (1.1f is not 1.100000023841858)."""
    text = partition_path(["f"], [x], [FloatType()], DEFAULT, legacy_name=True).split("=", 1)[1]
    mantissa = text.lstrip("-").split("E")[0].replace(".", "").lstrip("0").rstrip("0") or "0"
    assert _float32(float(text)) == x or (x == 0 and float(text) == 0)
    assert len(mantissa) <= 9
    shortest = next(p for p in range(1, 10) if _reads_back(f"{x:.{p - 1}e}", x))
    assert len(mantissa) <= max(shortest, 1)
