"""Type and value checks of public API arguments, at the boundary.

Python would otherwise coerce silently: a string iterates as its characters (``columns="k"``
reads columns ``k``... one letter at a time), any non-empty string is truthy (``full="yes"``), a
bool is an int (``snapshot_id=True``). Every check raises `InvalidArgumentError` naming the
argument, before anything is read or written, and returns the value unchanged when it is valid.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from lake_assets.errors import InvalidArgumentError

# Snapshot ids, positions and counts are Java longs in Paimon's metadata.
_LONG_MAX = (1 << 63) - 1


def _what(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def flag(name: str, value: Any) -> bool:
    """A real bool: ``"no"`` or ``1`` would otherwise be taken as true."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be True or False, got {_what(value)}")
    return value


def integer(name: str, value: Any, *, minimum: int | None = None, optional: bool = True) -> int | None:
    """An int (not a bool, not a float) within a Java long and at least ``minimum``."""
    if value is None:
        if optional:
            return None
        raise InvalidArgumentError(f"{name} is required, got None")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an integer, got {_what(value)}")
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}")
    if not -_LONG_MAX - 1 <= value <= _LONG_MAX:
        raise InvalidArgumentError(f"{name} must fit in a 64-bit signed integer, got {value}")
    return int(value)


def text(name: str, value: Any, *, optional: bool = True, empty: bool = False) -> str | None:
    """A str (not bytes, not a number); empty only when ``empty``."""
    if value is None:
        if optional:
            return None
        raise InvalidArgumentError(f"{name} is required, got None")
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string, got {_what(value)}")
    if not value and not empty:
        raise InvalidArgumentError(f"{name} must not be empty")
    return value


def one_of(name: str, value: Any, choices: Collection[str]) -> str:
    """One of a fixed set of strings."""
    if not isinstance(value, str) or value not in choices:
        raise InvalidArgumentError(f"{name} must be one of {sorted(choices)}, got {_what(value)}")
    return value


def names(name: str, value: Any, *, optional: bool = True, allow_empty: bool = True) -> list[str] | None:
    """A list or tuple of distinct column names; a single string is refused, not split into letters."""
    if value is None:
        if optional:
            return None
        raise InvalidArgumentError(f"{name} is required, got None")
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InvalidArgumentError(
            f"{name} must be a list of column names (e.g. [{value!r}]), got {_what(value)}"
            if isinstance(value, str) else f"{name} must be a list of column names, got {_what(value)}"
        )
    bad = [v for v in value if not isinstance(v, str) or not v]
    if bad:
        raise InvalidArgumentError(f"{name} must hold non-empty strings, got {bad!r}")
    dupes = sorted({v for v in value if value.count(v) > 1})
    if dupes:
        raise InvalidArgumentError(f"{name} names {dupes} more than once")
    if not value and not allow_empty:
        raise InvalidArgumentError(f"{name} must name at least one column")
    return list(value)


def duration(name: str, value: Any, *, optional: bool = True, negative: bool = False) -> timedelta | None:
    """A `timedelta` (a number would be ambiguous: seconds? milliseconds?)."""
    if value is None:
        if optional:
            return None
        raise InvalidArgumentError(f"{name} is required, got None")
    if not isinstance(value, timedelta):
        raise InvalidArgumentError(f"{name} must be a datetime.timedelta, got {_what(value)}")
    if not negative and value < timedelta(0):
        raise InvalidArgumentError(f"{name} must not be negative, got {value}")
    return value


def age_or_time(name: str, value: Any) -> datetime | timedelta | None:
    """A point in time: a `datetime`, or a `timedelta` counted back from now."""
    if value is None or isinstance(value, (datetime, timedelta)):
        return value
    raise InvalidArgumentError(f"{name} must be a datetime or a timedelta (an age), got {_what(value)}")


def mapping(name: str, value: Any, *, optional: bool = True) -> Mapping | None:
    """A dict-like argument (options, partition values) with string keys."""
    if value is None:
        if optional:
            return None
        raise InvalidArgumentError(f"{name} is required, got None")
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{name} must be a dict, got {_what(value)}")
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise InvalidArgumentError(f"{name} must have string keys, got {bad!r}")
    return value


def mappings(name: str, value: Any) -> list[Mapping] | None:
    """An optional list of dicts (e.g. partitions to compact)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidArgumentError(f"{name} must be a list of dicts, got {_what(value)}")
    return [mapping(f"{name}[{i}]", v, optional=False) for i, v in enumerate(value)]  # type: ignore[misc]


def snapshot_or_tag(name: str, value: Any, *, optional: bool = True) -> int | str | None:
    """A snapshot id (int >= 0) or a tag name."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        return text(name, value, optional=False)
    return integer(name, value, minimum=0, optional=False)
