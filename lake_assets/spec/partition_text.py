"""The text of one partition value in a directory name, as Paimon's Java writer spells it, and back.

Paimon's ``InternalRowPartitionComputer`` names a partition value one of two ways, chosen by the
table option ``partition.legacy-name`` (Paimon 1.0 added it; 0.9 always names the legacy way):

* legacy (``true``, the default): Java's ``toString`` of the internal value. DATE is the epoch day
  (``19723``), TIME the millisecond of the day (``3723500``), TIMESTAMP ``LocalDateTime.toString``
  (``2024-01-05T01:02``), TIMESTAMP WITH LOCAL TIME ZONE the same of the UTC date-time.
* cast (``false``): the value cast to STRING (``CastExecutors``' ``*ToStringCastRule``). DATE is
  ``yyyy-MM-dd`` (``DateTimeUtils.formatDate``), TIME(p) ``HH:mm:ss[.f]``
  (``formatTimestampMillis``), TIMESTAMP(p) ``yyyy-MM-dd HH:mm:ss[.f]`` with at least p fraction
  digits (``formatTimestamp``), BINARY/VARBINARY the bytes decoded as UTF-8. TIMESTAMP WITH LOCAL
  TIME ZONE is formatted in the writing JVM's default time zone: no reader can know it, so
  lake_assets refuses such tables (`lake_assets.spec.partition.unnameable_partition_keys`).

Both ways: BOOLEAN, the integers, FLOAT/DOUBLE (``Float``/``Double.toString``), DECIMAL
(``toPlainString``) and CHAR/VARCHAR are the same text, and a null or whitespace-only text
(``Character.isWhitespace``) is ``partition.default-name``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct

from lake_assets.errors import SchemaError, UnsupportedFeatureError
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

_EPOCH = dt.date(1970, 1, 1)
_EPOCH_DATETIME = dt.datetime(1970, 1, 1)
_MILLIS_PER_DAY = 86_400_000
_INTEGER_TYPES = (TinyIntType, SmallIntType, IntType, BigIntType)
_TEXT_TYPES = (CharType, VarCharType)
_BYTES_TYPES = (BinaryType, VarBinaryType)
# java.lang.Character.isWhitespace: the Unicode space separators except the no-break ones, the line
# and paragraph separators, and nine ASCII controls (str.isspace also takes U+0085, U+00A0, ...).
_JAVA_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)


def is_java_blank(text: str) -> bool:
    """Paimon's ``StringUtils.isNullOrWhitespaceOnly`` of a non-null text."""
    return all(c in _JAVA_WHITESPACE for c in text)


# ------------------------------------------------------------------------------ floating point


def _java_floating_text(shortest: str, negative: bool) -> str:
    """``Float``/``Double.toString`` of a finite non-zero value from its shortest decimal digits:
    plain from 1e-3 up to 1e7, else ``d.dddE[-]n``; always a digit after the point."""
    d = decimal.Decimal(shortest).copy_abs()
    sign = "-" if negative else ""
    if decimal.Decimal("0.001") <= d < decimal.Decimal(10_000_000):
        text = format(d.normalize(), "f")
        return sign + (text if "." in text else text + ".0")
    _, digits, exponent = d.normalize().as_tuple()
    text = "".join(str(x) for x in digits)
    exp10 = len(text) - 1 + int(exponent)
    return f"{sign}{text[0]}.{text[1:] or '0'}E{exp10}"


def java_double_text(x: float) -> str:
    """Java's ``Double.toString`` (the shortest digits that read back, as JDK 19 and later)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    return _java_floating_text(repr(abs(x)), x < 0)


def java_float_text(x: float) -> str:
    """Java's ``Float.toString`` of a FLOAT value (the shortest digits that read back as the same
    32-bit float, as JDK 19 and later; ``x`` is the float widened to a Python float)."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return java_double_text(x)
    bits = struct.pack("<f", x)
    for digits in range(1, 10):
        text = f"{abs(x):.{digits - 1}e}"
        try:
            if struct.pack("<f", float(text)) == struct.pack("<f", abs(x)):
                return _java_floating_text(text, x < 0)
        except OverflowError:  # rounded up past the largest float (3.403e38 of 3.4025e38)
            continue
    raise AssertionError(f"no 9-digit decimal reads back as float bits {bits.hex()}")  # 9 digits always do


# ------------------------------------------------------------------------------ dates and times


def _local_datetime_text(v: dt.datetime) -> str:
    # Java LocalDateTime.toString(): seconds only when non-zero (or a fraction follows),
    # fraction in groups of 3 digits.
    base = f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}"
    if v.second == 0 and v.microsecond == 0:
        return base
    base += f":{v.second:02d}"
    if v.microsecond:
        if v.microsecond % 1000 == 0:
            base += f".{v.microsecond // 1000:03d}"
        else:
            base += f".{v.microsecond:06d}"
    return base


def _cast_timestamp_text(v: dt.datetime, precision: int) -> str:
    # DateTimeUtils.formatTimestamp: nine fraction digits, trailing zeros stripped down to precision
    fraction = f"{v.microsecond * 1000:09d}"
    keep = len(fraction.rstrip("0"))
    fraction = fraction[: max(keep, precision)]
    base = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
    return f"{base}.{fraction}" if fraction else base


def _millis_of_day(v: dt.time) -> int:
    return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000


def _cast_time_text(v: dt.time, precision: int) -> str:
    # DateTimeUtils.formatTimestampMillis: digit by digit off the milliseconds, stopping once only
    # zeros are left (so ".5", not ".500", and ".0" for a whole second when precision > 0)
    text = f"{v.hour:02d}:{v.minute:02d}:{v.second:02d}"
    if precision <= 0:
        return text
    ms, digits = v.microsecond // 1000, []
    while precision > 0:
        digits.append(str(ms // 100))
        ms = ms % 100 * 10
        if ms == 0:
            break
        precision -= 1
    return text + "." + "".join(digits)


def _utc_naive(v: dt.datetime) -> dt.datetime:
    return v.astimezone(dt.UTC).replace(tzinfo=None) if v.tzinfo is not None else v


# ------------------------------------------------------------------------------ formatting


def value_text(value: object, dtype: DataType, default_name: str, *, legacy_name: bool) -> str:
    """The text of one partition value in its directory name (before escaping), as Paimon's
    ``InternalRowPartitionComputer.generatePartValues`` with ``partition.legacy-name`` =
    ``legacy_name``. `UnsupportedFeatureError` for a value Paimon names in a way no reader can
    reproduce (see the module docs)."""
    if value is None:
        return default_name
    text = _text(value, dtype, legacy_name)
    return default_name if is_java_blank(text) else text


def _text(value: object, dtype: DataType, legacy_name: bool) -> str:
    if isinstance(dtype, BooleanType):
        return "true" if value else "false"
    if isinstance(dtype, _INTEGER_TYPES):
        return str(int(value))  # type: ignore[call-overload]
    if isinstance(dtype, FloatType):
        return java_float_text(float(value))  # type: ignore[arg-type]
    if isinstance(dtype, DoubleType):
        return java_double_text(float(value))  # type: ignore[arg-type]
    if isinstance(dtype, DecimalType):
        dec = decimal.Decimal(value)  # type: ignore[arg-type]
        return format(dec.quantize(decimal.Decimal(1).scaleb(-dtype.scale)), "f")
    if isinstance(dtype, DateType):
        d = value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
        return str((d - _EPOCH).days) if legacy_name else f"{d.year:04d}-{d.month:02d}-{d.day:02d}"
    if isinstance(dtype, TimeType):
        t: dt.time = value  # type: ignore[assignment]
        return str(_millis_of_day(t)) if legacy_name else _cast_time_text(t, dtype.precision)
    if isinstance(dtype, TimestampType):
        v: dt.datetime = value  # type: ignore[assignment]
        return _local_datetime_text(v) if legacy_name else _cast_timestamp_text(v, dtype.precision)
    if isinstance(dtype, LocalZonedTimestampType):
        if not legacy_name:
            raise UnsupportedFeatureError(
                "partition.legacy-name = false names a TIMESTAMP WITH LOCAL TIME ZONE partition value in the "
                "writing JVM's default time zone, which no reader can know")
        return _local_datetime_text(_utc_naive(value))  # type: ignore[arg-type]
    if isinstance(dtype, _BYTES_TYPES):
        raw: bytes = bytes(value)  # type: ignore[call-overload]
        if legacy_name:
            # Java's legacy name is byte[].toString() ("[B@1b6d3586", an identity hash): not
            # reproducible by anyone; kept as the bytes' text, as lake_assets always named them
            return raw.decode("utf-8", "replace")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UnsupportedFeatureError(not_utf8_refusal(raw)) from None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def names_bytes_as_utf8(dtype: DataType, *, legacy_name: bool) -> bool:
    """Whether a partition value of type ``dtype`` is named by decoding its bytes as UTF-8, which
    fails for bytes that are not valid UTF-8 (`not_utf8_refusal`): BINARY / VARBINARY under
    ``partition.legacy-name = false``. Writers check such values before they write anything."""
    return not legacy_name and isinstance(dtype, _BYTES_TYPES)


def not_utf8_refusal(raw: bytes) -> str:
    """Why a BINARY partition value that is not valid UTF-8 gets no ``partition.legacy-name = false`` name."""
    # Java decodes malformed bytes with its own replacement rules (one U+FFFD for ED A0 80 where
    # Python puts three): a name we cannot be sure to reproduce
    return (f"partition value 0x{raw.hex()} is not valid UTF-8: Paimon's partition.legacy-name = false "
            "name of it depends on the JVM's decoder")


def java_value_text(value: object, dtype: DataType) -> str:
    """Java's ``toString`` of a non-null internal value (DATE: the epoch day, TIMESTAMP:
    ``LocalDateTime.toString``), as Paimon's ``PartitionTimeExtractor`` reads partition values."""
    return _text(value, dtype, legacy_name=True)


# ------------------------------------------------------------------------------ parsing


_LOCAL_DATETIME = re.compile(r"^(-?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?$")
_CAST_DATETIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?$")
_CAST_TIME = re.compile(r"^(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?$")


def _micros(fraction: str | None) -> int:
    return int(((fraction or "") + "000000")[:6])


def _datetime_of(m: re.Match[str] | None, text: str, what: str) -> dt.datetime:
    if m is None:
        raise SchemaError(f"partition value {text!r} is not a {what}")
    y, mo, d, h, mi, s, frac = m.groups()
    return dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s or 0), _micros(frac))


def parse_value_text(text: str, dtype: DataType, default_name: str, *, legacy_name: bool) -> object:
    """The partition value a directory name's (unescaped) text stands for: the inverse of
    `value_text` (the default name is None; a blank string value is named as null, so it reads
    back as None too). `SchemaError` when the text is not a value of ``dtype``."""
    if text == default_name:
        return None
    try:
        return _parse(text, dtype, legacy_name)
    except (ValueError, ArithmeticError) as exc:
        raise SchemaError(f"partition value {text!r} is not a {dtype}: {exc}") from None


def _parse(text: str, dtype: DataType, legacy_name: bool) -> object:
    if isinstance(dtype, BooleanType):
        if text not in ("true", "false"):
            raise ValueError("not true or false")
        return text == "true"
    if isinstance(dtype, _INTEGER_TYPES):
        return int(text)
    if isinstance(dtype, (FloatType, DoubleType)):
        return float(text.replace("Infinity", "inf"))
    if isinstance(dtype, DecimalType):
        return decimal.Decimal(text)
    if isinstance(dtype, DateType):
        if legacy_name:
            return _EPOCH + dt.timedelta(days=int(text))
        return dt.date.fromisoformat(text)
    if isinstance(dtype, TimeType):
        if legacy_name:
            ms = int(text)
            if not 0 <= ms < _MILLIS_PER_DAY:
                raise ValueError("not a millisecond of the day")
            return (_EPOCH_DATETIME + dt.timedelta(milliseconds=ms)).time()
        m = _CAST_TIME.match(text)
        if m is None:
            raise ValueError("not HH:mm:ss[.f]")
        return dt.time(int(m[1]), int(m[2]), int(m[3]), _micros(m[4]))
    if isinstance(dtype, TimestampType):
        if legacy_name:
            return _datetime_of(_LOCAL_DATETIME.match(text), text, "LocalDateTime text")
        return _datetime_of(_CAST_DATETIME.match(text), text, "yyyy-MM-dd HH:mm:ss[.f] text")
    if isinstance(dtype, LocalZonedTimestampType):
        if not legacy_name:
            raise UnsupportedFeatureError("partition.legacy-name = false TIMESTAMP WITH LOCAL TIME ZONE names "
                                          "are in the writing JVM's time zone")
        return _datetime_of(_LOCAL_DATETIME.match(text), text, "LocalDateTime text").replace(tzinfo=dt.UTC)
    if isinstance(dtype, _BYTES_TYPES):
        return text.encode("utf-8")
    return text
