"""Partition directory names (``k=v/``) exactly as Paimon's Java writer spells them.

The text of each value (both ``partition.legacy-name`` modes) is `lake_assets.spec.partition_text`'s;
this module escapes it (``PartitionPathUtils.escapePathName``) and joins the levels. The partition
BinaryRow in manifests is the same in both modes: only directory names differ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lake_assets.errors import SchemaError
from lake_assets.spec.data_types import (
    BigIntType,
    BooleanType,
    CharType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TinyIntType,
    VarCharType,
)
from lake_assets.spec.partition_text import parse_value_text, value_text

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


def partition_value_text(value: object, dtype: DataType, default_name: str, *, legacy_name: bool) -> str:
    """The (unescaped) text of one partition value in its directory name, with
    ``partition.legacy-name`` = ``legacy_name`` (`lake_assets.spec.partition_text`)."""
    return value_text(value, dtype, default_name, legacy_name=legacy_name)


def partition_path(
    keys: Sequence[str], values: Sequence[Any], types: Sequence[DataType], default_name: str, *, legacy_name: bool
) -> str:
    """``k1=v1/k2=v2`` for one partition (empty string for an unpartitioned table), as Paimon's
    ``PartitionPathUtils.generatePartitionPath`` over ``InternalRowPartitionComputer``'s values."""
    return "/".join(
        f"{escape_path_name(k)}={escape_path_name(value_text(v, t, default_name, legacy_name=legacy_name))}"
        for k, v, t in zip(keys, values, types, strict=True)
    )


def parse_partition_path(
    path: str, keys: Sequence[str], types: Sequence[DataType], default_name: str, *, legacy_name: bool
) -> tuple[Any, ...]:
    """The partition values a ``k1=v1/k2=v2`` directory path names (the inverse of `partition_path`;
    a null and a blank string both read back as None). `SchemaError` when the path does not name
    ``keys`` in order or a text is not a value of its type."""
    parts = [p for p in path.split("/") if p]
    names = [p.partition("=") for p in parts]
    if len(parts) != len(keys) or any(not sep or unescape_path_name(k) != key
                                      for (k, sep, _), key in zip(names, keys, strict=False)):
        raise SchemaError(f"partition path {path!r} does not name the partition keys {list(keys)} in order")
    return tuple(parse_value_text(unescape_path_name(text), t, default_name, legacy_name=legacy_name)
                 for (_, _, text), t in zip(names, types, strict=True))


# Types whose directory name is the same text in both modes (Java's toString and cast to STRING agree).
_SAME_IN_BOTH_MODES = (BooleanType, TinyIntType, SmallIntType, IntType, BigIntType, FloatType, DoubleType,
                       DecimalType, CharType, VarCharType)


def names_depend_on_legacy_name(types: Sequence[DataType]) -> bool:
    """Whether ``partition.legacy-name`` changes any directory name of partitions of ``types``."""
    return not all(isinstance(t, _SAME_IN_BOTH_MODES) for t in types)


def unnameable_partition_keys(
    keys: Sequence[str], types: Sequence[DataType], *, legacy_name: bool
) -> list[tuple[str, str]]:
    """(key, why) of the partition keys whose directory names Paimon spells in a way lake_assets
    cannot reproduce: with ``partition.legacy-name = false``, TIMESTAMP WITH LOCAL TIME ZONE, which
    Java formats in the writing JVM's default time zone (pypaimon 2.1 and pypaimon-rust 0.4 in
    their host's, or cannot write it at all)."""
    if legacy_name:
        return []
    return [(k, "partition.legacy-name = false names its values in the writing JVM's default time zone, "
                "which a reader cannot know")
            for k, t in zip(keys, types, strict=True) if isinstance(t, LocalZonedTimestampType)]
