"""A column default value's text cast to the column's type, as Paimon Java 0.9's ``CastExecutors``
cast a STRING to it (``StringTo*CastRule`` over ``BinaryStringUtils`` and ``DateTimeUtils``).

Java's casts are the contract: a default fills rows every Paimon 0.9 reader also fills, so the
value must be the one Java computes. The forms below are Java's; where Java is lenient in ways that
are easy to get subtly wrong (hexadecimal floats, day-of-month clamping by ``ResolverStyle.SMART``,
years beyond four digits, TIME and TIMESTAMP WITH LOCAL TIME ZONE, which depends on the reader's
JVM time zone) the text is refused with a `DefaultValueError` rather than guessed. Types Java has
no cast from STRING to (ARRAY, MAP, MULTISET, ROW) are refused as Java refuses them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

import numpy as np
import pyarrow as pa

from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import (
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
    VarBinaryType,
    VarCharType,
)


class DefaultValueError(ValueError):
    """Why a default value's text is no value of its column's type (the caller names the column)."""


class NullDefaultError(DefaultValueError):
    """Java casts the text to null (a DECIMAL with more digits than its precision): its reads then
    fill nothing. Refused at create and ALTER; a table that carries one reads its nulls as nulls."""


_INT_RANGES: dict[type[DataType], tuple[int, int]] = {
    TinyIntType: (-(2**7), 2**7 - 1), SmallIntType: (-(2**15), 2**15 - 1),
    IntType: (-(2**31), 2**31 - 1), BigIntType: (-(2**63), 2**63 - 1),
}
# BinaryStringUtils.toInt/toLong: a sign, digits, optionally '.' and digits that are dropped
# (truncation, not rounding); no whitespace. The integer part may be empty ("." and "-.5" are 0).
_JAVA_INT = re.compile(r"([+-]?)([0-9]*)(?:\.[0-9]*)?")
# java.lang.Double.parseDouble's decimal forms (hexadecimal ones refused), after its trim.
_JAVA_FLOAT = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
# new java.math.BigDecimal(String): no whitespace, no NaN or infinities.
_JAVA_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# DateTimeUtils' DEFAULT_TIMESTAMP_FORMATTER: "yyyy-[MM][M]-[dd][d]" then optionally
# " [HH][H]:[mm][m]:[ss][s]" and a fraction of up to 9 digits.
_JAVA_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?: ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.([0-9]{1,9}))?)?")
_TRUE = frozenset({"t", "true", "y", "yes", "1"})
_FALSE = frozenset({"f", "false", "n", "no", "0"})
_EPOCH = dt.date(1970, 1, 1)


def cast_default(text: str, typ: DataType) -> Any:
    """``text`` as a value of ``typ`` (the Python value pyarrow takes for the column's Arrow type),
    as Java 0.9 casts it (a TIMESTAMP as nanoseconds since the epoch, `to_scalar` converts it);
    `DefaultValueError` when Java cannot, or lake_assets does not follow it."""
    if isinstance(typ, BooleanType):
        low = text.lower()
        if low in _TRUE or low in _FALSE:
            return low in _TRUE
        raise DefaultValueError(f"{text!r} is not a BOOLEAN (one of {sorted(_TRUE | _FALSE)})")
    bounds = _INT_RANGES.get(type(typ))
    if bounds is not None:
        return _integer(text, bounds, typ)
    if isinstance(typ, (FloatType, DoubleType)):
        return _floating(text, isinstance(typ, FloatType))
    if isinstance(typ, DecimalType):
        return _decimal(text, typ)
    if isinstance(typ, (CharType, VarCharType)):
        # BinaryStringUtils.toCharacterString: cut to the length, CHAR(n) padded with blanks
        cut = text[:typ.length]
        return cut.ljust(typ.length) if isinstance(typ, CharType) else cut
    if isinstance(typ, (BinaryType, VarBinaryType)):
        raw = text.encode("utf-8")[:typ.length]  # BinaryStringUtils.toBinaryString
        return raw.ljust(typ.length, b"\0") if isinstance(typ, BinaryType) else raw
    if isinstance(typ, DateType):
        return _date(text)
    if isinstance(typ, TimestampType):
        return _timestamp(text, typ.precision)
    if isinstance(typ, (TimeType, LocalZonedTimestampType)):
        raise DefaultValueError(f"default values of {typ} columns are not supported by lake_assets")
    raise DefaultValueError(f"Paimon has no default values for {typ} columns")


def to_scalar(text: str, typ: DataType) -> pa.Scalar:
    """``text`` cast to ``typ`` (`cast_default`) as a scalar of the column's Arrow type."""
    value = cast_default(text, typ)
    arrow_type = to_arrow(typ)
    if isinstance(typ, TimestampType):
        per_unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[arrow_type.unit]
        return pa.scalar(value // per_unit, pa.int64()).cast(arrow_type)
    return pa.scalar(value, arrow_type)


def _integer(text: str, bounds: tuple[int, int], typ: DataType) -> int:
    m = _JAVA_INT.fullmatch(text)
    if m is None or text in ("", "+", "-"):
        raise DefaultValueError(f"{text!r} is not an integer")
    value = int(m.group(2) or "0") * (-1 if m.group(1) == "-" else 1)
    if not bounds[0] <= value <= bounds[1]:
        raise DefaultValueError(f"{text!r} is out of the range of {typ}")
    return value


def _floating(text: str, single: bool) -> float:
    stripped = text.strip("".join(chr(c) for c in range(33)))  # Java's String.trim
    if _JAVA_FLOAT.fullmatch(stripped) is None:
        raise DefaultValueError(f"{text!r} is not a {'FLOAT' if single else 'DOUBLE'}")
    body = stripped.rstrip("fFdD") if not stripped.endswith(("NaN", "Infinity")) else stripped
    value = float(body.replace("Infinity", "inf"))
    if not single:
        return value
    with np.errstate(over="ignore"):  # Float.parseFloat overflows to an infinity, as this does
        return float(np.float32(value))


def _decimal(text: str, typ: DecimalType) -> decimal.Decimal:
    if _JAVA_DECIMAL.fullmatch(text) is None:
        raise DefaultValueError(f"{text!r} is not a decimal number")
    ctx = decimal.Context(prec=200)
    value = ctx.create_decimal(text).quantize(decimal.Decimal(1).scaleb(-typ.scale), decimal.ROUND_HALF_UP, ctx)
    # Decimal.fromBigDecimal: HALF_UP to the scale, then null when more digits than the precision
    if len(value.as_tuple().digits) > typ.precision:
        raise NullDefaultError(f"{text!r} does not fit {typ} (Paimon casts it to null)")
    return value


def _date(text: str) -> dt.date:
    if text and text.isascii() and text.isdigit():  # BinaryStringUtils.toDate: days since the epoch
        days = _integer(text, _INT_RANGES[IntType], IntType())
        return _EPOCH + dt.timedelta(days=days)
    # DateTimeUtils.parseDate: the part before the first blank, "y[-m[-d]]", each part trimmed
    head = text.split(" ", 1)[0] if text.find(" ") > 0 else text
    parts = head.split("-", 2)
    trimmed = [p.strip("".join(chr(c) for c in range(33))) for p in parts]
    if not all(p.isascii() and p.isdigit() for p in trimmed):
        raise DefaultValueError(f"{text!r} is not a DATE (yyyy-mm-dd)")
    ymd = [int(p) for p in trimmed] + [1] * (3 - len(trimmed))
    try:
        if ymd[0] < 1:
            raise ValueError
        return dt.date(ymd[0], ymd[1], ymd[2])
    except ValueError:
        raise DefaultValueError(f"{text!r} is not a valid DATE") from None


def _timestamp(text: str, precision: int) -> int:
    """Nanoseconds since the epoch (no zone), floored to ``precision`` digits as Java does."""
    m = _JAVA_TIMESTAMP.fullmatch(text)
    if m is None:
        raise DefaultValueError(f"{text!r} is not a TIMESTAMP (yyyy-mm-dd[ hh:mm:ss[.fffffffff]])")
    y, mo, d, h, mi, s = (int(g) if g is not None else 0 for g in m.groups()[:6])
    try:
        base = dt.datetime(y, mo, d, h, mi, s)
    except ValueError:
        raise DefaultValueError(f"{text!r} is not a valid TIMESTAMP") from None
    nanos: int = int((m.group(7) or "").ljust(9, "0"))
    step = 10 ** (9 - precision)  # fromTemporalAccessor floors the nanos to the precision
    nanos -= nanos % step
    seconds: int = (base - dt.datetime(1970, 1, 1)) // dt.timedelta(seconds=1)
    return seconds * 1_000_000_000 + nanos


__all__ = ["DefaultValueError", "NullDefaultError", "cast_default", "to_scalar"]
