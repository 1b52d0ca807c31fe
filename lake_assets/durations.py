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
_SECONDS_PER = {"min": 60, "h": 3600, "d": 86_400}
# Java's String.trim(): every character up to U+0020 (all ASCII controls), nothing else - not
# Python's str.strip(), which also strips U+00A0, U+2003, ... and keeps U+0000..U+0008.
_JAVA_TRIMMED = "".join(map(chr, range(0x21)))
EXAMPLES = "e.g. '500 ms', '30 s', '15 min', '1 h', '7 d'"


def java_trim(text: str) -> str:
    """``text`` as Java's ``String.trim()`` leaves it (what ``TimeUtils`` and ``MemorySize`` trim)."""
    return text.strip(_JAVA_TRIMMED)


def parse_duration_ns(text: object, key: str = "") -> int:
    """Nanoseconds of a Paimon duration text; `OptionError` naming ``key`` when it is not one."""
    where = f"Option {key!r}: " if key else ""
    s = java_trim(str(text))
    digits = len(s) - len(s.lstrip("0123456789"))
    number, label = s[:digits], java_trim(s[digits:]).lower()
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
    if value * _SECONDS_PER.get(unit, 0) > _LONG_MAX:
        # Java's Duration.of(value, unit) counts seconds in a long (Math.multiplyExact)
        raise OptionError(f"{where}{text!r} is not a duration: it overflows a 64-bit number of seconds")
    return value * _NS_PER[unit]


def parse_duration_ms(text: object, key: str = "") -> int:
    """Milliseconds of a Paimon duration text (Java's ``Duration.toMillis``: truncated; a
    duration whose milliseconds overflow a long fails there, so it is refused here)."""
    ms = parse_duration_ns(text, key) // 1_000_000
    if ms > _LONG_MAX:
        where = f"Option {key!r}: " if key else ""
        raise OptionError(f"{where}{text!r} is not a duration: it overflows a 64-bit number of milliseconds")
    return ms


def parse_duration(text: object, key: str = "") -> timedelta:
    """A Paimon duration text as a `timedelta` (microsecond resolution, as timedelta has)."""
    return timedelta(microseconds=parse_duration_ns(text, key) // 1_000)


_TEXT_UNITS = (("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000), ("s", 1_000_000), ("ms", 1_000))


def duration_text(value: timedelta) -> str:
    """``value`` as the jobs' ``--older-than`` and lake.yaml write it, in the largest unit that
    holds it whole (``1h``, ``10min``, ``90s``, ``1500ms``): text `parse_duration` reads back,
    never timedelta's ``1:00:00``. Sub-millisecond rests are in ``ns`` (Paimon has no ASCII
    microsecond label); a negative value gets a ``-`` (not a duration then, as it is not one)."""
    us = value // timedelta(microseconds=1)
    sign, us = ("-", -us) if us < 0 else ("", us)
    if us == 0:
        return "0ms"
    unit, size = next(((u, n) for u, n in _TEXT_UNITS if us % n == 0), ("ns", 0))
    return f"{sign}{us * 1000}ns" if unit == "ns" else f"{sign}{us // size}{unit}"
