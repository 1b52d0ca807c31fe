"""Paimon's grammar of map options (``ConfigOption<Map<String, String>>``, e.g. ``0:avro,3:parquet``).

Paimon reads a map option's text with ``OptionsUtils.convertToProperties``: the text is split on
``,`` and each entry on ``:`` by ``StructuredOptionsSplitter.splitEscaped``, and the pairs are
collected with ``Collectors.toMap``. So, as Java reads it:

* a part may be quoted with ``'`` or ``"`` (a doubled quote inside stands for one), and then holds
  delimiters and spaces as they are; text after a closing quote before the next delimiter, or a
  quote never closed, is an error;
* an unquoted part starts at its first character that is not ``Character.isWhitespace`` and is
  ``String.trim``-med (so a no-break space stays);
* two delimiters in a row make an empty part, one at either end makes none: ``'0:avro,'`` is one
  entry, ``'0:avro,,1:orc'`` holds an empty entry, which is no key-value pair (an error);
* every entry must split into exactly two parts (``'0:'`` and ``'0:a:b'`` are errors), and a key
  given twice is an error (``Collectors.toMap``: "Duplicate key").

`parse_java_map` is that, raising `OptionError` where Java throws.
"""

from __future__ import annotations

import unicodedata

from lake_assets.durations import java_trim
from lake_assets.errors import OptionError

# Character.isWhitespace: the controls below, and Unicode space separators except the no-break ones
_JAVA_WHITESPACE_CONTROLS = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
_NO_BREAK_SPACES = frozenset("\u00a0\u2007\u202f")


def _java_is_whitespace(c: str) -> bool:
    if c in _JAVA_WHITESPACE_CONTROLS:
        return True
    return c not in _NO_BREAK_SPACES and unicodedata.category(c) in ("Zs", "Zl", "Zp")


def _quoted(text: str, quote: str, start: int) -> tuple[str, int]:
    """The quoted part opening at ``start``, and the position after its closing quote."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == quote:
            if i + 1 < len(text) and text[i + 1] == quote:
                out.append(c)
                i += 2
                continue
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise OptionError("quoting was not closed properly")


def split_escaped(text: str, delimiter: str) -> list[str]:
    """``StructuredOptionsSplitter.splitEscaped(text, delimiter)``; `OptionError` where it throws."""
    tokens: list[tuple[str, str, int]] = []  # (kind: q quoted, u unquoted, d delimiter; text; position)
    cursor = 0
    while cursor < len(text):
        c = text[cursor]
        if c in ("'", '"'):
            part, after = _quoted(text, c, cursor)
            tokens.append(("q", part, cursor))
        elif c == delimiter:
            tokens.append(("d", c, cursor))
            after = cursor + 1
        elif not _java_is_whitespace(c):
            end = text.find(delimiter, cursor)
            after = len(text) if end < 0 else end
            tokens.append(("u", java_trim(text[cursor:after]), cursor))
        else:
            after = cursor + 1
        cursor = after
    parts: list[str] = []
    for i, (kind, part, _) in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if kind == "q":
            if following is not None and following[0] != "d":
                raise OptionError(f"illegal quoting at position {following[2] - 1}")
            parts.append(part)
        elif kind == "u":
            parts.append(part)
        elif following is not None and following[0] == "d":
            parts.append("")
    return parts


def parse_java_map(text: str) -> list[tuple[str, str]]:
    """The (key, value) entries of a map option's text in order, as Paimon reads them; `OptionError`
    where Java throws (the message says why, without the option's key)."""
    out: dict[str, str] = {}
    for entry in split_escaped(text, ","):
        pair = split_escaped(entry, ":")
        if len(pair) != 2:
            raise OptionError(f"entry {entry!r} is not a key-value pair '<key>:<value>'")
        key, value = pair
        if key in out:
            raise OptionError(f"key {key!r} is given twice")
        out[key] = value
    return list(out.items())
