"""The one duration grammar of lake_assets: Paimon's ``TimeUtils.parseDuration``.

Table options (``snapshot.time-retained = 1 h``), ``lake.yaml`` and the jobs' ``--older-than``
all parse durations here, so a text one layer accepts every other layer (and Paimon Java) reads
the same way. The grammar, as in Java: optional whitespace, a non-negative whole number, optional
whitespace, an optional unit label (case-insensitive; none means milliseconds). Fractions,
signs and compound forms such as ``1h 30min`` are not durations to Java, so they are not here.
"""

from __future__ import annotations

from datetime import timedelta

from lake_assets.errors import OptionError

_NS_PER = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9,
           "d": 86_400 * 10**9}
# Java's TimeUnit labels: singular forms as written, plural forms also with a trailing "s".
_LABELS: dict[str, str] = {}
for _unit, _singular, _plural in (
    ("d", ("d",), ("day",)),
    ("h", ("h",), ("hour",)),
    ("min", ("min", "m"), ("minute",)),
    ("s", ("s",), ("sec", "second")),
    ("ms", ("ms",), ("milli", "millisecond")),
    ("us", ("µs",), ("micro", "microsecond")),
    ("ns", ("ns",), ("nano", "nanosecond")),
):
    for _label in _singular:
        _LABELS[_label] = _unit
    for _label in _plural:
        _LABELS[_label] = _LABELS[_label + "s"] = _unit
del _unit, _singular, _plural, _label

UNIT_LABELS: tuple[str, ...] = tuple(_LABELS)
_LONG_MAX = 2**63 - 1
EXAMPLES = "e.g. '500 ms', '30 s', '15 min', '1 h', '7 d'"


def parse_duration_ns(text: object, key: str = "") -> int:
    """Nanoseconds of a Paimon duration text; `OptionError` naming ``key`` when it is not one."""
    where = f"Option {key!r}: " if key else ""
    s = str(text).strip()
    digits = len(s) - len(s.lstrip("0123456789"))
    number, label = s[:digits], s[digits:].strip().lower()
    if not number:
        raise OptionError(f"{where}{text!r} is not a duration: it does not start with a number ({EXAMPLES})")
    value = int(number)
    if value > _LONG_MAX:
        raise OptionError(f"{where}{text!r} is not a duration: {number} does not fit a 64-bit number")
    unit = _LABELS.get(label or "ms")
    if unit is None:
        raise OptionError(
            f"{where}{text!r} is not a duration: unknown unit {label!r} "
            f"(units: {', '.join(UNIT_LABELS)}; {EXAMPLES})")
    return value * _NS_PER[unit]


def parse_duration_ms(text: object, key: str = "") -> int:
    """Milliseconds of a Paimon duration text (Java's ``Duration.toMillis``: truncated)."""
    return parse_duration_ns(text, key) // 1_000_000


def parse_duration(text: object, key: str = "") -> timedelta:
    """A Paimon duration text as a `timedelta` (microsecond resolution, as timedelta has)."""
    return timedelta(microseconds=parse_duration_ns(text, key) // 1_000)
