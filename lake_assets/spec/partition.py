"""Partition directory names (`k=v/`) exactly as Paimon's Java writer spells them."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

from lake_assets.spec.data_types import (
    BigIntType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TinyIntType,
)

_EPOCH = dt.date(1970, 1, 1)
_ESCAPED = set(range(0x00, 0x20)) | {ord(c) for c in "\"#%'*/:=?\\{}[]^"} | {0x7F}


def escape_path_name(text: str) -> str:
    """Escape a partition key or value for a directory name (space stays as it is)."""
    if not any(ord(c) in _ESCAPED for c in text):
        return text
    return "".join(f"%{ord(c):02X}" if ord(c) in _ESCAPED else c for c in text)


def unescape_path_name(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "%" and _is_hex(text[i + 1 : i + 3]):
            out.append(chr(int(text[i + 1 : i + 3], 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(ch in "0123456789abcdefABCDEF" for ch in s)


def _java_float_text(x: float) -> str:
    """Java's Double.toString: plain between 1e-3 and 1e7, else ``d.dddE[-]n``; shortest digits."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    ax = abs(x)
    if ax == 0 or 1e-3 <= ax < 1e7:
        r = repr(float(x))
        return r if "." in r else r + ".0"
    sign, digits, exponent = decimal.Decimal(repr(ax)).normalize().as_tuple()
    del sign
    text = "".join(str(d) for d in digits)
    exp10 = len(text) - 1 + int(exponent)
    mantissa = text[0] + "." + (text[1:] or "0")
    return ("-" if x < 0 else "") + f"{mantissa}E{exp10}"


def _local_datetime_text(v: dt.datetime) -> str:
    # Java LocalDateTime.toString(): seconds only when non-zero (or a fraction follows),
    # fraction in groups of 3 digits.
    base = v.strftime("%Y-%m-%dT%H:%M")
    if v.second == 0 and v.microsecond == 0:
        return base
    base += f":{v.second:02d}"
    if v.microsecond:
        if v.microsecond % 1000 == 0:
            base += f".{v.microsecond // 1000:03d}"
        else:
            base += f".{v.microsecond:06d}"
    return base


def partition_value_text(value: object, dtype: DataType, default_name: str) -> str:
    """The legacy (``partition.legacy-name=true``) text of one partition value."""
    if value is None:
        return default_name
    if isinstance(dtype, BooleanType):
        return "true" if value else "false"
    if isinstance(dtype, (TinyIntType, SmallIntType, IntType, BigIntType)):
        return str(int(value))  # type: ignore[call-overload]
    if isinstance(dtype, (FloatType, DoubleType)):
        return _java_float_text(float(value))  # type: ignore[arg-type]
    if isinstance(dtype, DecimalType):
        dec = decimal.Decimal(value)  # type: ignore[arg-type]
        return format(dec.quantize(decimal.Decimal(1).scaleb(-dtype.scale)), "f")
    if isinstance(dtype, DateType):
        d = value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
        return str((d - _EPOCH).days)
    if isinstance(dtype, TimestampType):
        return _local_datetime_text(value)  # type: ignore[arg-type]
    if isinstance(dtype, LocalZonedTimestampType):
        v = value
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        return _local_datetime_text(v)  # type: ignore[arg-type]
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if text.strip() == "":
        return default_name
    return text


def partition_path(
    keys: tuple[str, ...] | list[str], values: tuple[Any, ...] | list[Any], types: list[DataType], default_name: str
) -> str:
    """``k1=v1/k2=v2`` for one partition (empty string for an unpartitioned table)."""
    return "/".join(
        f"{escape_path_name(k)}={escape_path_name(partition_value_text(v, t, default_name))}"
        for k, v, t in zip(keys, values, types, strict=True)
    )
