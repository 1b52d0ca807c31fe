"""What one table option is: its rule (`OptionRule`) and how its text becomes a typed value.

The rows of the registry (`lake_assets.option_rules.RULES`) are `OptionRule`s. `parse_value` is the
only place an option's text is parsed: `CoreOptions` parses through it once per schema, and
`CoreOptions.validate` reports every value that does not parse at create and ALTER, so a bad value
fails there with a `LakeError` naming key and value, never later with a bare ``ValueError``.
Types follow Paimon's ``CoreOptions``: Java ``int`` options fit 32 bits and ``long`` options 64,
durations use Paimon's ``TimeUtils`` grammar (`lake_assets.durations`), memory sizes ``MemorySize``.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lake_assets.durations import java_trim, parse_duration_ms
from lake_assets.errors import OptionError, UnsupportedFeatureError

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
MiB = 1024 * 1024
LakeErrorLike = OptionError | UnsupportedFeatureError

KINDS = ("int", "long", "size", "duration", "bool", "enum", "ratio", "string")

# Operations (names of `lake_assets.table_support.Op`) a refused value blocks on a table that
# already carries it; create and ALTER refuse it outright.
DATA_OPS = ("READ", "STREAM", "WRITE", "COMPACT")
PATH_OPS = (*DATA_OPS, "EXPIRE", "ORPHANS")
WRITE_OPS = ("WRITE", "COMPACT")


@dataclass(frozen=True)
class OptionRule:
    """One option of the registry: how its value is parsed and bounded, and what we do with it.

    ``kind`` is one of `KINDS`: ``int`` (Java int), ``long``, ``size`` (MemorySize), ``duration``,
    ``bool``, ``enum`` (one of ``choices``, case-insensitive and untrimmed as Java's enum options,
    `java_enum_choice`), ``ratio`` (a number in [0, 1]) and
    ``string`` (free text). ``minimum`` bounds numbers; ``check`` returns a problem (text) for a
    parsed value that is well-formed but not acceptable, or None.

    ``supported`` lists the values (lower case) lake_assets implements when that is fewer than the
    valid ones (``()``: none, the option is refused whenever set): any other value is refused at
    create and ALTER with `UnsupportedFeatureError`. For a table that already carries such a value,
    ``refuses`` names the operations refused (`lake_assets.table_support`), with ``why``; without
    ``refuses`` every operation is refused when the table is opened. ``action`` says what its user
    can do about such a table (`lake_assets.refusal_actions`; ``{key}`` stands for the key, as per-field
    and per-column rows carry many: `OptionRule.advice`). ``note`` says how an accepted
    option is honoured when that is not simply "as in Paimon" (e.g. accepted with no effect on what
    lake_assets writes, and why that is safe). ``fallback_keys`` are the key's older spellings, as
    Paimon's ``ConfigOption.withFallbackKeys`` declares them (see `fallback_rule`).
    """

    key: str
    kind: str
    default: object = None
    description: str = ""
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    check: Callable[[object], str | None] | None = None
    lake_assets_only: bool = False  # an option of this package that Paimon does not have
    supported: tuple[str, ...] | None = None
    refuses: tuple[str, ...] = ()
    why: str = ""
    action: str = ""
    note: str = ""
    # read only by the writers of data files (format options): a carried value that does not
    # parse refuses writes and compaction (`WRITE_OPS`), never opening the table
    writer_only: bool = False
    # Paimon's ``withFallbackKeys``: older spellings read when ``key`` is unset, the first one set
    # winning (Java's ``Options.get``); each parses and is refused as this row (`fallback_rule`)
    fallback_keys: tuple[str, ...] = ()
    # on a fallback key's row: the key it stands in for
    fallback_of: str | None = None
    # how Paimon matches a ``string`` option's text against ``choices`` (`java_fold_choice`):
    # "lower" / "upper" (Java's toLowerCase / toUpperCase of the text as written, never trimmed),
    # "exact", or "avro" (zstd in any case, else exactly); None: free text
    fold: str | None = None


    def advice(self) -> str:
        """What the user of a table carrying a refused value can do (``action`` naming this key)."""
        return self.action.replace(KEY_SLOT, self.key)


# Stands for the option's key in an ``action`` (a per-field or per-column row serves many keys).
KEY_SLOT = "{key}"


# Paimon's MemorySize units (Flink's MemoryUnit): the labels each multiplier takes.
_SIZE_UNITS: dict[str, int] = {}
for _labels, _bytes in ((("b", "bytes"), 1), (("k", "kb", "kibibytes"), 1024), (("m", "mb", "mebibytes"), MiB),
                        (("g", "gb", "gibibytes"), 1024 * MiB), (("t", "tb", "tebibytes"), 1024**4)):
    _SIZE_UNITS.update(dict.fromkeys(_labels, _bytes))
del _labels, _bytes
SIZE_UNIT_LABELS: tuple[str, ...] = tuple(_SIZE_UNITS)


def parse_memory_size(text: object, key: str = "") -> int:
    """Bytes of Paimon's MemorySize text (``128 mb``, ``64kb``, ``1024``), in Java's grammar: a
    whole number and an optional unit (none: bytes); fractions such as ``1.5 mb`` are not sizes."""
    s = java_trim(str(text))
    digits = len(s) - len(s.lstrip("0123456789"))
    number, label = s[:digits], java_trim(s[digits:]).lower()
    unit = _SIZE_UNITS.get(label or "b")
    if not number or unit is None:
        units = ", ".join(_SIZE_UNITS)
        raise OptionError(f"Option {key!r}: {text!r} is not a memory size (e.g. '128 mb'; units: {units})")
    value = int(number) * unit
    if value > LONG_MAX:
        raise OptionError(f"Option {key!r}: {text!r} does not fit a 64-bit number of bytes")
    return value


def java_parse_integer(s: str) -> int | None:
    """What Java's ``Integer.parseInt`` / ``Long.parseLong`` (radix 10) read in ``s``, unbounded,
    or None where they throw: an optional ``+`` or ``-``, then one or more characters
    ``Character.digit(c, 10)`` takes - decimal digits (Unicode category Nd) of the Basic
    Multilingual Plane, as a Java ``char`` holds. No trimming, no ``_`` separators: Python's
    ``int()`` accepts both, and digits beyond the BMP, which Java rejects."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body:
        return None
    value = 0
    for c in body:
        d = unicodedata.decimal(c, None) if ord(c) < 0x10000 else None
        if d is None:
            return None
        value = value * 10 + d
    return -value if s[:1] == "-" else value


# Java's Double.parseDouble (FloatingDecimal.readJavaFormatString) after its trim: decimal or
# hexadecimal floating literals with an optional type suffix, NaN and Infinity; ASCII only.
_JAVA_DOUBLE = re.compile(
    r"(?P<sign>[+-]?)(?:(?P<special>NaN|Infinity)"
    r"|(?P<dec>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
    r"|(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)"
)


def java_parse_double(s: str) -> float | None:
    """What Java's ``Double.parseDouble`` reads in ``s``, or None where it throws (it trims as
    ``String.trim``; ``1.5f``, ``0x1p-1`` and ``Infinity`` are numbers to it, ``1_0``, ``inf``
    and non-ASCII digits are not, unlike Python's ``float()``)."""
    m = _JAVA_DOUBLE.fullmatch(java_trim(s))
    if m is None:
        return None
    sign = -1.0 if m["sign"] == "-" else 1.0
    if m["special"]:
        return math.nan if m["special"] == "NaN" else sign * math.inf
    if m["hex"]:
        return sign * float.fromhex(m["hex"])
    return sign * float(m["dec"])


def java_parse_boolean(s: str) -> bool | None:
    """Paimon's ``OptionsUtils.convertToBoolean``: ``toUpperCase()`` equal to TRUE or FALSE, no
    trimming (so ``' true'`` is no boolean); None otherwise."""
    upper = s.upper()
    return True if upper == "TRUE" else False if upper == "FALSE" else None


def java_enum_choice(s: str, choices: Iterable[str]) -> str | None:
    """The choice Paimon's ``OptionsUtils.convertToEnum`` picks for ``s``, or None where it throws:
    the constant whose ``toString()`` equals ``s`` after both are upper-cased (``Locale.ROOT``), so
    case-insensitive but not trimmed (``' full'`` is no scan mode) - and, as upper-casing goes,
    ``'ınput'`` (dotless i) is ``input``. ``choices`` are the constants' ``toString()``, lower case."""
    upper = s.upper()
    return next((c for c in choices if c.upper() == upper), None)


def java_fold_choice(s: str, choices: Iterable[str], fold: str) -> str | None:
    """The choice Paimon's reader picks for the text ``s``, or None where it fails. ``fold`` is how
    Java's code folds the text before comparing it (never trimming): ``lower`` as
    ``CoreOptions.normalizeFileFormat`` (``toLowerCase``, then a format factory's identifier),
    ``upper`` as the codec lookups (``CompressionCodecName.fromConf``, ORC's
    ``CompressionKind.valueOf(s.toUpperCase())``, ``BlockCompressionFactory.create``), ``exact`` as
    Avro's ``CodecFactory.fromString``, ``avro`` as Paimon's Avro writer (``zstd`` in any case, any
    other codec by Avro's exact name). ``choices`` are lower case; so ``' parquet'`` and ``'zstd '``
    are no choice, ``'PARQUET'`` is parquet and ``'\u017fnappy'`` (long s) is snappy to ``upper``."""
    if fold == "lower":
        folded = s.lower()
        return next((c for c in choices if c == folded), None)
    if fold == "upper":
        folded = s.upper()
        return next((c for c in choices if c.upper() == folded), None)
    if fold == "avro" and "zstd" in choices and java_equals_ignore_case(s, "zstd"):
        return "zstd"  # Paimon's Avro writer: compression.equalsIgnoreCase("zstd"), else Avro's own name
    return s if s in choices else None


def java_equals_ignore_case(a: str, b: str) -> bool:
    """Java's ``String.equalsIgnoreCase``: equal lengths, and each pair of chars equal after
    ``Character.toUpperCase`` (or that and ``toLowerCase``): ``'zſtd'`` is ``'zstd'`` to it."""
    def up(c: str) -> str:
        u = c.upper()
        return u if len(u) == 1 else c  # Character.toUpperCase maps a char to one char
    return len(a) == len(b) and all(x == y or up(x) == up(y) or up(x).lower() == up(y).lower()
                                    for x, y in zip(a, b, strict=True))


def _parse_int(key: str, s: str, kind: str) -> int:
    """Paimon's ``OptionsUtils.convertToInt`` / ``convertToLong``: ``Integer.parseInt`` /
    ``Long.parseLong`` of the text as it is (`java_parse_integer`), within 32 / 64 bits."""
    value = java_parse_integer(s)
    if value is None:
        raise OptionError(f"Option {key!r}: {s!r} is not an integer")
    top = INT_MAX if kind == "int" else LONG_MAX
    if not -top - 1 <= value <= top:
        raise OptionError(f"Option {key!r}: {s!r} does not fit a {'32' if kind == 'int' else '64'}-bit integer")
    return value


def _parse_kind(rule: OptionRule, s: str) -> object:
    key, kind = rule.key, rule.kind
    if kind in ("int", "long"):
        return _parse_int(key, s, kind)
    if kind == "size":
        return parse_memory_size(s, key)
    if kind == "duration":
        return parse_duration_ms(s, key)
    if kind == "bool":
        flag = java_parse_boolean(s)
        if flag is None:
            raise OptionError(f"Option {key!r}: {s!r} is not 'true' or 'false'")
        return flag
    if kind == "enum":
        v = java_enum_choice(s, rule.choices)
        if v is None:
            raise OptionError(f"Option {key!r}: {s!r} is not one of {list(rule.choices)}{suggest(s, rule.choices)}")
        return v
    if kind == "ratio":
        f = java_parse_double(s)
        if f is None:
            raise OptionError(f"Option {key!r}: {s!r} is not a number")
        if not 0.0 <= f <= 1.0:  # also false for NaN
            raise OptionError(f"Option {key!r}: {s!r} must be a ratio between 0 and 1")
        return f
    if rule.fold is not None and rule.choices:
        choice = java_fold_choice(s, rule.choices, rule.fold)
        if choice is None:
            how = {"lower": "lower-cased", "upper": "upper-cased", "exact": "exactly",
                   "avro": "exactly, zstd in any case"}[rule.fold]
            raise OptionError(f"Option {key!r}: {s!r} is not one of {list(rule.choices)} (Paimon matches the text "
                              f"{how}, as written: no spaces around it){suggest(s.strip().lower(), rule.choices)}")
        return choice
    return s


def fallback_rule(rule: OptionRule, key: str) -> OptionRule:
    """The row of ``key``, a fallback key of ``rule``: parsed, bounded and refused as ``rule``, and
    named by its own key in every message."""
    description = f"Fallback key of {rule.key} (read when {rule.key} is unset)."
    return dataclasses.replace(rule, key=key, description=description, fallback_keys=(), fallback_of=rule.key)


def parse_value(rule: OptionRule, text: object) -> object:
    """The typed value of ``text`` under ``rule``; OptionError naming the key when it does not fit."""
    s = str(text)
    value = _parse_kind(rule, s)
    if rule.minimum is not None and isinstance(value, int) and not isinstance(value, bool) and value < rule.minimum:
        raise OptionError(f"Option {rule.key!r}: {s!r} must be at least {rule.minimum}")
    if rule.check is not None:
        problem = rule.check(value)
        if problem:
            cls = UnsupportedFeatureError if "not supported" in problem else OptionError
            raise cls(f"Option {rule.key!r}: {s!r}: {problem}")
    return value


def unsupported_value(rule: OptionRule, text: object) -> UnsupportedFeatureError | None:
    """The refusal of a valid value lake_assets does not implement (``rule.supported``), or None."""
    if rule.supported is None:
        return None
    # an enum's value as it parsed (Java's matching), a folded string's as Paimon matches it; other
    # kinds as their readers normalise them
    v = ((java_enum_choice(str(text), rule.choices) if rule.kind == "enum" else None)
         or (java_fold_choice(str(text), rule.choices, rule.fold) if rule.fold else None)
         # an "exact" value is compared as Java's equals does (the branch option: " main " is not main)
         or (str(text) if rule.fold == "exact" else str(text).strip().lower()))
    if v in rule.supported:
        return None
    why = f": {rule.why}" if rule.why else ""
    return UnsupportedFeatureError(
        f"Option {rule.key}={text!r} is not supported{suggest(v, rule.supported)}{why}"
        + (f"; supported values: {', '.join(sorted(rule.supported))}" if rule.supported else ""))


def suggest(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a close known option name, else ``""``."""
    close = difflib.get_close_matches(key, list(known), n=3, cutoff=0.75)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def raise_all(problems: list[LakeErrorLike]) -> None:
    """Raise one error for every problem found: OptionError unless all are unsupported features."""
    if not problems:
        return
    if len(problems) == 1:
        raise problems[0]
    cls = UnsupportedFeatureError if all(isinstance(p, UnsupportedFeatureError) for p in problems) else OptionError
    raise cls(f"{len(problems)} problems with table options: " + "; ".join(str(p) for p in problems))
